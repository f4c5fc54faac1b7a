// Finding a CPU profile of this machine: the cache, then the committed local-cpu profile.
#include "profiles/local_profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "profiles/host_info.h"
#include "profiles/shipped.h"

namespace mplan {
// Generated from data/calibration/local-cpu/profile.sql (see profiles/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_local_cpu_profile();
}  // namespace mplan

namespace mplan::profiles {

namespace {

std::string blas_version(const std::string& config) {  // "OpenBLAS 0.3.21 NO_LAPACKE ..." -> "OpenBLAS 0.3.21"
  auto sp = config.find(' ');
  if (sp == std::string::npos) return config;
  auto sp2 = config.find(' ', sp + 1);
  return config.substr(0, sp2);
}

// The newest CPU device of the database at `path` that matches this host, or nullopt.
std::optional<Device> matching_device(const std::string& path, std::string* why) {
  auto db = ProfileDb::open(path, OpenMode::read_only);
  if (!db) {
    if (why) *why = db.error().message();
    return std::nullopt;
  }
  auto devs = db->devices();
  if (!devs) return std::nullopt;
  for (auto it = devs->rbegin(); it != devs->rend(); ++it) {
    if (it->kind != "cpu") continue;
    std::string m = host_mismatch(*it);
    if (m.empty()) return *it;
    if (why && why->empty()) *why = m;
  }
  return std::nullopt;
}

}  // namespace

std::string mplan_cache_dir() {
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::string(h) + "/.cache";
  else
    base = "/tmp/mplan-cache-" + std::to_string(::getuid());
  std::string dir = base + "/mplan";
  ::mkdir(base.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

std::string local_profile_path() { return mplan_cache_dir() + "/local-cpu-" + host_info().hostname + ".db"; }

std::string host_mismatch(const Device& d) {
  HostInfo h = host_info();
  std::string model = d.name.substr(0, d.name.find(" (one core"));
  if (model != h.cpu_model) return "CPU '" + model + "', this machine has '" + h.cpu_model + "'";
  int cores = d.libraries.is_object() && d.libraries.contains("cores") && d.libraries["cores"].is_number_integer()
                  ? d.libraries["cores"].get<int>()
                  : 0;
  if (cores != int(h.cpus.size())) return std::to_string(cores) + " cores, this machine has " + std::to_string(h.cpus.size());
  std::string blas =
      d.libraries.is_object() && d.libraries.contains("openblas_config") && d.libraries["openblas_config"].is_string()
          ? d.libraries["openblas_config"].get<std::string>()
          : "";
  if (blas_version(blas) != blas_version(h.openblas_config))
    return "'" + blas_version(blas) + "', this machine has '" + blas_version(h.openblas_config) + "'";
  return "";
}

Expected<std::optional<LocalProfile>> find_local_cpu_profile() {
  const std::string cache = local_profile_path();
  struct stat st {};
  if (::stat(cache.c_str(), &st) == 0) {
    if (auto d = matching_device(cache, nullptr))
      return std::optional<LocalProfile>(LocalProfile{cache, "this machine's CPU profile " + cache + " (" + d->source + ")"});
  }
  const auto& files = embedded_local_cpu_profile();
  if (files.empty()) return std::optional<LocalProfile>();
  std::string sql(files.front().second);
  auto mem = load_profile_sql(sql, "data/calibration/local-cpu/profile.sql");
  if (!mem) return mem.error();
  auto devs = mem->devices();
  if (!devs || devs->empty()) return std::optional<LocalProfile>();
  std::string why = host_mismatch(devs->front());
  if (!why.empty()) return std::optional<LocalProfile>();
  auto db = ProfileDb::open(cache);
  if (!db) return db.error();
  auto ids = import_profile_sql(db.value(), sql, "data/calibration/local-cpu/profile.sql");
  if (!ids) return ids.error();
  return std::optional<LocalProfile>(LocalProfile{
      cache, "the committed local-cpu profile (data/calibration/local-cpu/profile.sql, " + devs->front().name + ", " +
                 devs->front().source + "), which matches this machine's CPU, cores and OpenBLAS; copied to " + cache});
}

}  // namespace mplan::profiles
