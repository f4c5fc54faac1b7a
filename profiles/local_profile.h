// The CPU profile of this machine for `mplan verify` without --db: a profile measured here earlier
// (kept in the cache directory), else the committed local-cpu profile (data/calibration/local-cpu)
// when it was measured on a CPU like this one, else none (the caller profiles this machine quickly
// into the cache). Matching compares the CPU model, the usable cores and the OpenBLAS version.
#pragma once
#include <optional>
#include <string>

#include "core/status.h"
#include "profiles/profile_db.h"

namespace mplan::profiles {

// $XDG_CACHE_HOME/mplan (or ~/.cache/mplan; /tmp/mplan-cache-UID without HOME), created if missing.
std::string mplan_cache_dir();
// Where this host's profile is kept: <cache>/local-cpu-<hostname>.db.
std::string local_profile_path();

// "" when the CPU device row `d` describes this machine, else what differs.
std::string host_mismatch(const Device& d);

struct LocalProfile {
  std::string db;   // profile database to calibrate from
  std::string how;  // one sentence for the user: which profile and why
};
// The cached profile or the committed one (imported into the cache); nullopt when neither matches.
Expected<std::optional<LocalProfile>> find_local_cpu_profile();

}  // namespace mplan::profiles
