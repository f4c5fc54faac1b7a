// Scanning one training log file into launches. A launch is one start of the training program: its
// configuration (Megatron's "arguments" block or Megatron-Bridge's YAML dump), the "> padded vocab"
// line, its iteration lines, memory reports and timestamps. A new launch begins
//   - at an arguments block or configuration dump once the current launch has iteration lines or
//     already has a configuration (a job that died before training, then another one),
//   - at "[before the start of training step]" once the current launch has iteration lines,
//   - when the iteration number does not increase (a restart without a printed configuration).
// Whether consecutive launches are one job resumed or separate jobs is decided later (log_jobs.h).
// Lines of other ranks interleaved in a configuration block (torchrun --tee) are kept apart by their
// rank prefix.
#pragma once
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "runs/megatron_log.h"
#include "runs/plan_check.h"
#include "runs/time_zone.h"

namespace mplan::runs {

struct LogLaunch {
  std::string file;                      // the file of its iteration lines
  std::vector<std::string> other_files;  // per-rank files combined into it (configuration, memory)
  int first_line = 0, last_line = 0;
  std::map<std::string, std::string> args;         // "arguments" block: name -> printed value
  std::map<std::string, std::string> bridge_yaml;  // Megatron-Bridge dump: dotted path -> value
  std::optional<PaddedVocab> padded_vocab;
  std::vector<LogIteration> iterations;
  std::vector<MemoryReport> memory;
  std::string first_datetime;  // first host-local timestamp ("YYYY-MM-DD HH:MM:SS"), "" when none
  int first_datetime_line = 0;
  std::optional<StatedZone> zone;  // the zone the file states nearest to first_datetime
  bool has_config() const { return !args.empty() || !bridge_yaml.empty(); }
  bool empty() const { return iterations.empty() && !has_config() && memory.empty() && !padded_vocab; }
};

struct ScannedLog {
  std::string path;
  std::vector<LogLaunch> launches;  // never empty launches
  std::vector<StatedZone> zones;    // every zone the file states, in order
  std::vector<std::string> warnings;
};

ScannedLog scan_log(std::istream& in, const std::string& name);
Expected<ScannedLog> scan_log_file(const std::string& path);

}  // namespace mplan::runs
