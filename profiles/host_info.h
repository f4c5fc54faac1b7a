// Facts about the host a CPU profile runs on: host name, CPU model and features, usable cores,
// memory, the OpenBLAS build and kernel in use; pinning of the calling thread to one core.
#pragma once
#include <sched.h>

#include <string>
#include <vector>

namespace mplan::profiles {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;        // /proc/cpuinfo "model name"
  bool avx512 = false;          // avx512f + avx512bw + avx512vl (OpenBLAS SkylakeX kernels)
  std::vector<int> cpus;        // CPUs this process may run on (sched_getaffinity)
  double memory_gib = 0;        // MemTotal
  std::string openblas_config;  // openblas_get_config()
  std::string openblas_core;    // openblas_get_corename(): the GEMM kernel family that runs
};

HostInfo host_info();

// The 1-minute load average (-1 if unknown): measurements on a busy host are slower and noisier, so
// profiles record how busy the host was.
double load_average();

// Pins the calling thread to `cpu`; false when not permitted.
bool pin_to_cpu(int cpu);

// Pins the calling thread to one CPU for its lifetime and restores the previous CPU set after (so
// processes started later, like the mpirun of the collective part, see every usable core).
class ScopedPin {
 public:
  explicit ScopedPin(int cpu);
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool have_saved_ = false, ok_ = false;
};

// One BLAS thread, and on CPUs with AVX-512 where OpenBLAS's runtime detection picks an older kernel
// family, OPENBLAS_CORETYPE=SkylakeX. OpenBLAS reads its core type only when it is loaded, so when
// the environment has to change this re-executes the current command (/proc/self/exe with the same
// arguments) and does not return; otherwise it returns and sets the thread count in-process.
void ensure_blas_environment();

}  // namespace mplan::profiles
