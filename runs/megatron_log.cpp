// Megatron-family line parsing: fields are "key: value" pairs separated by '|', so the parser splits
// on '|' and matches keys instead of relying on the column order of one version.
#include "runs/megatron_log.h"

#include <cctype>
#include <cstdlib>

#include "runs/log_text.h"

namespace mplan::runs {

namespace {

// Finds "iteration <digits>/<spaces><digits>" in the first field; returns the position of "iteration".
size_t find_iteration_token(const std::string& head, int64_t& it, int64_t& total) {
  size_t pos = 0;
  while ((pos = head.find("iteration", pos)) != std::string::npos) {
    size_t i = pos + 9;
    while (i < head.size() && head[i] == ' ') ++i;
    size_t d0 = i;
    while (i < head.size() && std::isdigit(static_cast<unsigned char>(head[i]))) ++i;
    if (i > d0 && i < head.size() && head[i] == '/') {
      size_t slash = i++;
      while (i < head.size() && head[i] == ' ') ++i;
      size_t d1 = i;
      while (i < head.size() && std::isdigit(static_cast<unsigned char>(head[i]))) ++i;
      if (i > d1) {
        it = std::strtoll(head.substr(d0, slash - d0).c_str(), nullptr, 10);
        total = std::strtoll(head.substr(d1, i - d1).c_str(), nullptr, 10);
        return pos;
      }
    }
    pos += 9;
  }
  return std::string::npos;
}

// "[2024-05-01 12:00:00]" or "[2025-06-01 12:00:00.123456]" just before "iteration".
std::string bracket_timestamp(const std::string& head, size_t before) {
  size_t close = head.rfind(']', before);
  if (close == std::string::npos) return "";
  size_t open = head.rfind('[', close);
  if (open == std::string::npos) return "";
  std::string t = head.substr(open + 1, close - open - 1);
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':') return "";
  return t;
}

bool ends_with(const std::string& s, const char* suffix) {
  std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// One "key: value" field of an iteration line into `r`; `first_loss` remembers which loss was taken.
void read_iteration_field(const std::string& key, const std::string& value, LogIteration& r, bool& have_elapsed,
                          std::string& first_loss) {
  if (key == "elapsed time per iteration (ms)") {
    if (auto v = to_double(value)) r.elapsed_ms = *v, have_elapsed = true;
  } else if (key == "throughput per GPU (TFLOP/s/GPU)") {
    r.tflops_per_gpu = to_double(value);
  } else if (key == "TFLOPs") {  // Megatron-DeepSpeed
    r.tflops_per_gpu = to_double(value);
    r.dialect = LogIteration::Dialect::deepspeed;
  } else if (key == "tokens per gpu per second (tgs)") {
    r.tokens_per_s_per_gpu = to_double(value);
    r.dialect = LogIteration::Dialect::deepspeed;
  } else if (key == "consumed tokens" || key == "samples per second") {
    r.dialect = LogIteration::Dialect::deepspeed;
  } else if (key == "actual seqlen") {
    r.actual_seq_length = to_int(value);
  } else if (key == "global batch size") {
    r.global_batch_size = to_int(value);
  } else if (key == "consumed samples") {
    r.consumed_samples = to_int(value);
  } else if (key == "learning rate") {
    r.learning_rate = to_double(value);
  } else if (key == "number of skipped iterations") {
    r.skipped_iterations = to_int(value).value_or(0);
  } else if (key == "number of nan iterations") {
    r.nan_iterations = to_int(value).value_or(0);
  } else if (key == "lm loss") {
    r.loss = to_double(value);
    first_loss = key;
  } else if (first_loss.empty() && ends_with(key, "loss") && key != "loss scale") {
    r.loss = to_double(value);
    first_loss = key;
  }
}

}  // namespace

std::optional<LogIteration> parse_megatron_iteration_line(const std::string& line) {
  if (line.find("elapsed time per iteration") == std::string::npos) return std::nullopt;
  auto fields = split_bar(line);
  if (fields.size() < 2) return std::nullopt;
  LogIteration r;
  size_t pos = find_iteration_token(fields[0], r.iteration, r.train_iters);
  if (pos == std::string::npos) return std::nullopt;
  r.timestamp = bracket_timestamp(fields[0], pos);
  bool have_elapsed = false;
  std::string first_loss;
  for (size_t i = 1; i < fields.size(); ++i) {
    std::string key, value;
    if (key_value(fields[i], key, value)) read_iteration_field(key, value, r, have_elapsed, first_loss);
  }
  if (!have_elapsed) return std::nullopt;
  return r;
}

std::optional<MemoryReport> parse_megatron_memory_line(const std::string& line) {
  size_t mem = line.find(" memory (MB)");
  bool gb = false;
  if (mem == std::string::npos) {
    mem = line.find(" memory (GB)");
    gb = true;
  }
  if (mem == std::string::npos || line.find("allocated") == std::string::npos) return std::nullopt;
  MemoryReport m;
  std::string head = line.substr(0, mem);
  size_t after = head.find("(after ");
  if (after == std::string::npos)
    after = head.find("after ");
  else
    after += 1;
  if (after == std::string::npos) return std::nullopt;
  auto it = to_int(head.substr(after + 6));
  if (!it || head.find(" iterations", after) == std::string::npos) return std::nullopt;
  m.after_iteration = *it;
  size_t rk = head.find("[Rank ");
  if (rk != std::string::npos) m.rank = static_cast<int>(to_int(head.substr(rk + 6)).value_or(-1));
  auto fields = split_bar(line.substr(mem));
  bool any = false;
  for (size_t i = 1; i < fields.size(); ++i) {
    std::string key, value;
    if (!key_value(fields[i], key, value)) continue;
    auto v = to_double(value);
    if (!v) continue;
    // Megatron-LM's "memory (GB)" values are GiB; Megatron-Bridge's "-gigabytes" keys are 1e9 bytes.
    bool bridge_key = key.rfind("mem-", 0) == 0 && ends_with(key, "-gigabytes");
    double mib = bridge_key ? *v * 1e9 / 1048576.0 : (gb ? *v * 1024.0 : *v);
    if (bridge_key) {
      m.bridge = true;
      key = key.substr(4, key.size() - 4 - 10);  // "max-reserved"
      for (char& c : key)
        if (c == '-') c = ' ';
    }
    any = true;
    if (key == "allocated")
      m.allocated_mib = mib;
    else if (key == "max allocated")
      m.max_allocated_mib = mib;
    else if (key == "reserved" || key == "cached")
      m.reserved_mib = mib;
    else if (key == "max reserved" || key == "max cached")
      m.max_reserved_mib = mib;
  }
  if (!any) return std::nullopt;
  return m;
}

bool parse_megatron_arg_line(const std::string& line, std::string& key, std::string& value) {
  size_t dots = line.find(" ..");
  if (dots == std::string::npos) return false;
  size_t end = dots + 1;
  while (end < line.size() && line[end] == '.') ++end;
  if (end - dots < 3 || end >= line.size() || line[end] != ' ') return false;
  std::string k = trim(line.substr(0, dots));
  if (k.empty()) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  key = k;
  value = trim(line.substr(end));
  return true;
}

bool parse_padded_vocab_line(const std::string& line, int64_t& original, int64_t& padded) {
  size_t p = line.find("> padded vocab (size: ");
  if (p == std::string::npos) return false;
  auto o = to_int(line.substr(p + 22));
  size_t n = line.find("(new size: ", p);
  if (!o || n == std::string::npos) return false;
  auto q = to_int(line.substr(n + 11));
  if (!q) return false;
  original = *o;
  padded = *q;
  return true;
}

std::string megatron_datetime_line(const std::string& line) {
  size_t p = line.find("] datetime: ");
  if (p == std::string::npos) return "";
  std::string t = trim(line.substr(p + 12));
  return t.size() >= 19 ? t.substr(0, 19) : "";
}

std::string iteration_format_name(const LogIteration& it) {
  switch (it.dialect) {
    case LogIteration::Dialect::nemo:
      return "nemo-2.0 (" + it.nemo_form + ")";
    case LogIteration::Dialect::deepspeed:
      return "megatron-deepspeed (consumed tokens, TFLOPs, tgs)";
    case LogIteration::Dialect::megatron:
      break;
  }
  if (it.timestamp.size() > 19) return "megatron-core-2025 (timestamp with microseconds, throughput)";
  if (!it.timestamp.empty()) return "megatron-core-2024 (timestamp, throughput per GPU)";
  if (it.consumed_samples) return "megatron-lm-2021 (consumed samples, global batch size)";
  return "megatron-lm-2020 (no consumed samples)";
}

}  // namespace mplan::runs
