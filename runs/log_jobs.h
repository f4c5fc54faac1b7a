// From log files to jobs. The files given (several --megatron-log, or a directory) are scanned into
// launches (log_scan.h); per-rank files of the same launch are combined; consecutive launches are then
// grouped into jobs:
//   - per-rank files: Megatron prints the arguments on rank 0, the iteration lines on the last rank and
//     memory reports on every data-parallel rank 0. Files are grouped by torchrun's attempt directory
//     (".../attempt_N/<local rank>/stdout.log"; files outside such directories form one group). In a
//     group, the k-th launch of every file with a configuration or iteration lines is the same launch:
//     configuration from the first file that has one, iteration lines from the file with the most,
//     memory reports from all. Memory-only files join a group of one launch.
//   - jobs: a launch continues the previous launch's job (a resume) when its configuration is the
//     same and it does not start from scratch (its first logged iteration is beyond one log
//     interval); otherwise it starts a new job (a smoke test followed by the real job, benchmark
//     passes with different settings, a rerun from iteration 1).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "runs/log_scan.h"

namespace mplan::runs {

struct LogJob {
  int index = 0;                    // 1-based, in log order
  std::vector<LogLaunch> launches;  // the first launch, then its resumes
  LogConfig config;                 // read from the first launch with a configuration
  std::string framework;            // Megatron-LM | Megatron-DeepSpeed | Megatron-Bridge | NeMo
  std::string format;               // iteration-line format of the first launch
  std::string where;                // "train.log lines 1-420", "rank0.log + rank7.log"
  int iteration_lines() const;
  int64_t first_iteration() const;
  int64_t last_iteration() const;
};

struct LogSet {
  std::vector<std::string> files;  // the files read, in order
  std::vector<LogJob> jobs;
  std::vector<std::string> warnings;  // combination notes, ignored launches/files
};

// Files and directories (searched recursively for *.log, *.out, *.txt, *.err, stdout, stderr).
// Errors: a missing path, an empty directory, no iteration lines anywhere (the message names the
// formats read and the CSV import, and points to the last rank's file when only rank 0's was given),
// per-rank files that disagree on their number of launches.
Expected<LogSet> read_training_logs(const std::vector<std::string>& paths);
// The same from scanned files (tests).
Expected<LogSet> combine_logs(const std::vector<ScannedLog>& files);

// One line per job for messages and listings: "job 2: train.log lines 310-890, iterations 1-500
// (3 resumes), Megatron-LM".
std::string describe_job(const LogJob& job);

}  // namespace mplan::runs
