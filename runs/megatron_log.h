// Line parsers of Megatron-family training logs: the iteration lines of Megatron-LM (training.py
// training_log: " iteration N/ M | consumed samples: ... | elapsed time per iteration (ms): ... |"),
// Megatron-DeepSpeed (the same plus "TFLOPs:" and "tokens per gpu per second (tgs):") and
// Megatron-Bridge (Megatron-LM's 2024 layout); memory reports ("[Rank 0] (after 10 iterations)
// memory (MB) | allocated: ... | max reserved: ...", Megatron-Bridge's "memory (GB) |
// mem-max-reserved-gigabytes: ..."); the lines of the "arguments" block; and the padded-vocabulary
// line. NeMo 2.0 / Lightning lines are in nemo_log.h. See tests/data/megatron_logs/README.md and
// docs/runs.md for the sources of each format.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace mplan::runs {

// One logged measurement: the averages over the iterations since the previous logged line.
struct LogIteration {
  int line = 0;           // 1-based line number in its file
  int64_t iteration = 0;  // iterations completed (Megatron's counter; NeMo's step count)
  int64_t train_iters = 0;
  double elapsed_ms = 0;                       // time per iteration
  std::optional<double> tflops_per_gpu;        // the framework's own figure (its FLOP convention)
  std::optional<double> tokens_per_s_per_gpu;  // Megatron-DeepSpeed "tgs"
  std::optional<int64_t> global_batch_size;
  std::optional<int64_t> consumed_samples;
  std::optional<int64_t> actual_seq_length;  // Megatron-DeepSpeed "actual seqlen" (curriculum)
  std::optional<double> learning_rate;
  std::optional<double> loss;      // "lm loss", else the first "... loss" field; NaN when printed as nan
  int64_t skipped_iterations = 0;  // of the interval (Megatron resets the counters at every line)
  int64_t nan_iterations = 0;
  std::string timestamp;  // "YYYY-MM-DD HH:MM:SS[.ffffff]" printed on the line, host local time
  enum class Dialect { megatron, deepspeed, nemo } dialect = Dialect::megatron;
  std::string nemo_form;  // which NeMo line form (see nemo_log.h)
};

// One memory report, MiB.
struct MemoryReport {
  int line = 0;
  int rank = -1;  // -1 when the line has no "[Rank N]" prefix (oldest format)
  int64_t after_iteration = 0;
  double allocated_mib = 0, max_allocated_mib = 0, reserved_mib = 0, max_reserved_mib = 0;
  bool bridge = false;  // Megatron-Bridge "mem-...-gigabytes" keys
};

// Parses one iteration line of Megatron-LM / Megatron-DeepSpeed / Megatron-Bridge (nullopt when the
// line is not one). Rank prefixes before the line are accepted.
std::optional<LogIteration> parse_megatron_iteration_line(const std::string& line);
// Parses one memory report line (nullopt when the line is not one).
std::optional<MemoryReport> parse_megatron_memory_line(const std::string& line);
// "  tensor_model_parallel_size ...................... 8" inside the arguments block (prefix
// already removed).
bool parse_megatron_arg_line(const std::string& line, std::string& key, std::string& value);
// " > padded vocab (size: 50257) with 943 dummy tokens (new size: 51200)": original and padded sizes.
bool parse_padded_vocab_line(const std::string& line, int64_t& original, int64_t& padded);
// "[after megatron is initialized] datetime: 2024-05-01 12:00:00 " -> the time ("" when not such a line).
std::string megatron_datetime_line(const std::string& line);
// Names the iteration-line format by the fields it carries (oldest to newest).
std::string iteration_format_name(const LogIteration& it);

}  // namespace mplan::runs
