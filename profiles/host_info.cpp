// Host facts and BLAS environment for the CPU profiler (see host_info.h).
#include "profiles/host_info.h"

#include <cblas.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mplan::profiles {

namespace {

std::string cpuinfo_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) {
        std::string v = line.substr(c + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "";
}

std::string slurp(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has_flag(const std::string& flags, const char* f) {
  std::istringstream in(flags);
  std::string w;
  while (in >> w)
    if (w == f) return true;
  return false;
}

}  // namespace

HostInfo host_info() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  std::string cpuinfo = slurp("/proc/cpuinfo");
  h.cpu_model = cpuinfo_field(cpuinfo, "model name");
  if (h.cpu_model.empty()) h.cpu_model = "unknown CPU";
  std::string flags = cpuinfo_field(cpuinfo, "flags");
  h.avx512 = has_flag(flags, "avx512f") && has_flag(flags, "avx512bw") && has_flag(flags, "avx512vl");
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) h.cpus.push_back(c);
  }
  if (h.cpus.empty()) h.cpus.push_back(0);
  std::string mem = cpuinfo_field(slurp("/proc/meminfo"), "MemTotal");
  h.memory_gib = std::atof(mem.c_str()) / (1024.0 * 1024.0);  // kB -> GiB
  h.openblas_config = openblas_get_config();
  h.openblas_core = openblas_get_corename();
  return h;
}

double load_average() {
  double l[3] = {0, 0, 0};
  return getloadavg(l, 3) > 0 ? l[0] : -1;
}

bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

ScopedPin::ScopedPin(int cpu) {
  CPU_ZERO(&saved_);
  have_saved_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0;
  ok_ = pin_to_cpu(cpu);
}

ScopedPin::~ScopedPin() {
  if (have_saved_) sched_setaffinity(0, sizeof saved_, &saved_);
}

void ensure_blas_environment() {
  bool reexec = false;
  const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
  if (!threads || std::strcmp(threads, "1") != 0) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
  }
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    HostInfo h = host_info();
    std::string core = h.openblas_core;
    bool modern = core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
    if (h.avx512 && !modern) {
      setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
      reexec = true;
    }
  }
  if (!reexec) {
    openblas_set_num_threads(1);
    return;
  }
  // Same command, new environment: argv from /proc/self/cmdline.
  std::string cmd = slurp("/proc/self/cmdline");
  std::vector<std::string> args;
  for (size_t i = 0; i < cmd.size();) {
    size_t j = cmd.find('\0', i);
    if (j == std::string::npos) j = cmd.size();
    args.push_back(cmd.substr(i, j - i));
    i = j + 1;
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  openblas_set_num_threads(1);  // exec failed: carry on with the kernels OpenBLAS picked
}

}  // namespace mplan::profiles
