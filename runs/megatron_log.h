// Parser of Megatron-LM training logs: iteration lines ("iteration N/ M | consumed samples: ... |
// elapsed time per iteration (ms): ... | throughput per GPU (TFLOP/s/GPU): ... | ..."), memory reports
// ("[Rank 0] (after 10 iterations) memory (MB) | allocated: ... | max reserved: ...") and the
// "arguments" block. The formats of several Megatron-LM versions are accepted; see
// tests/data/megatron_logs/README.md for where each comes from.
#pragma once
#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mplan::runs {

// One "iteration" line: averages over the iterations since the previous logged line.
struct MegatronIteration {
  int line = 0;                   // 1-based line number in the log
  int64_t iteration = 0;
  int64_t train_iters = 0;
  double elapsed_ms = 0;          // "elapsed time per iteration (ms)"
  std::optional<double> tflops_per_gpu;  // "throughput per GPU (TFLOP/s/GPU)" (Megatron's FLOP convention)
  std::optional<int64_t> global_batch_size;
  std::optional<int64_t> consumed_samples;
  std::optional<double> learning_rate;
  std::optional<double> loss;     // "lm loss", else the first "... loss" field
  int64_t skipped_iterations = 0;
  int64_t nan_iterations = 0;
  std::string timestamp;          // "[2024-05-01 12:00:00]" prefix of newer versions, without brackets
  bool after_restart = false;     // the job (re)started since the previous iteration line
};

// One memory report, MiB (reports in GB are converted).
struct MegatronMemory {
  int line = 0;
  int rank = -1;                  // -1 when the line has no "[Rank N]" prefix (oldest format)
  int64_t after_iteration = 0;
  double allocated_mib = 0, max_allocated_mib = 0, reserved_mib = 0, max_reserved_mib = 0;
};

struct MegatronLog {
  std::vector<MegatronIteration> iterations;
  std::vector<MegatronMemory> memory;
  std::map<std::string, std::string> args;  // the "arguments" block: name -> printed value
  std::string format;                        // which iteration-line format was seen (see format_name)
  std::string first_datetime;                // first timestamp seen in the log ("YYYY-MM-DD HH:MM:SS")
  std::vector<std::string> warnings;
};

// Parses a whole log. Lines of other ranks' prefixes ("[default0]:", "0: ") are accepted; lines that
// are not iteration, memory or argument lines are ignored. A new "arguments" block or "[before the
// start of training step]" line after iteration lines marks a restart (logs of resumed jobs appended
// to one file). Error when no iteration line is found.
Expected<MegatronLog> parse_megatron_log(std::istream& in, const std::string& name);
Expected<MegatronLog> parse_megatron_log_file(const std::string& path);

// Parses one iteration line (nullopt when the line is not one).
std::optional<MegatronIteration> parse_megatron_iteration_line(const std::string& line);
// Parses one memory report line (nullopt when the line is not one).
std::optional<MegatronMemory> parse_megatron_memory_line(const std::string& line);

}  // namespace mplan::runs
