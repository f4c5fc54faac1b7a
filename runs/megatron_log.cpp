// Megatron-LM log parsing: fields are "key: value" pairs separated by '|', so the parser splits on
// '|' and matches keys instead of relying on the exact column order of one version.
#include "runs/megatron_log.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/bounded_input.h"

namespace mplan::runs {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split_bar(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == '|') {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

std::optional<double> to_double(const std::string& s) {
  std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return std::nullopt;
  return v;
}

std::optional<int64_t> to_int(const std::string& s) {
  std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (end == t.c_str()) return std::nullopt;
  return static_cast<int64_t>(v);
}

// "key: value" -> (key, value); the key is everything before the last ':' that is followed by a value.
bool key_value(const std::string& field, std::string& key, std::string& value) {
  size_t c = field.rfind(':');
  if (c == std::string::npos) return false;
  key = trim(field.substr(0, c));
  value = trim(field.substr(c + 1));
  return !key.empty();
}

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

}  // namespace

std::optional<MegatronIteration> parse_megatron_iteration_line(const std::string& line) {
  if (line.find("elapsed time per iteration") == std::string::npos) return std::nullopt;
  auto fields = split_bar(line);
  if (fields.size() < 2) return std::nullopt;
  MegatronIteration r;
  size_t pos = find_iteration_token(fields[0], r.iteration, r.train_iters);
  if (pos == std::string::npos) return std::nullopt;
  r.timestamp = bracket_timestamp(fields[0], pos);
  bool have_elapsed = false;
  std::string first_loss_key;
  for (size_t i = 1; i < fields.size(); ++i) {
    std::string key, value;
    if (!key_value(fields[i], key, value)) continue;
    if (key == "elapsed time per iteration (ms)") {
      if (auto v = to_double(value)) r.elapsed_ms = *v, have_elapsed = true;
    } else if (key == "throughput per GPU (TFLOP/s/GPU)") {
      r.tflops_per_gpu = to_double(value);
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
      first_loss_key = key;
    } else if (first_loss_key.empty() && key.size() >= 4 && key.compare(key.size() - 4, 4, "loss") == 0 &&
               key != "loss scale") {
      r.loss = to_double(value);
      first_loss_key = key;
    }
  }
  if (!have_elapsed) return std::nullopt;
  return r;
}

std::optional<MegatronMemory> parse_megatron_memory_line(const std::string& line) {
  size_t mem = line.find(" memory (MB)");
  double scale = 1.0;
  if (mem == std::string::npos) {
    mem = line.find(" memory (GB)");
    scale = 1024.0;
  }
  if (mem == std::string::npos || line.find("allocated:") == std::string::npos) return std::nullopt;
  MegatronMemory m;
  std::string head = line.substr(0, mem);
  size_t after = head.find("after ");
  if (after == std::string::npos) return std::nullopt;
  auto it = to_int(head.substr(after + 6));
  if (!it) return std::nullopt;
  m.after_iteration = *it;
  size_t rk = head.find("[Rank ");
  if (rk != std::string::npos) m.rank = static_cast<int>(to_int(head.substr(rk + 6)).value_or(-1));
  auto fields = split_bar(line.substr(mem));
  for (size_t i = 1; i < fields.size(); ++i) {
    std::string key, value;
    if (!key_value(fields[i], key, value)) continue;
    auto v = to_double(value);
    if (!v) continue;
    double mib = *v * scale;
    if (key == "allocated") m.allocated_mib = mib;
    else if (key == "max allocated") m.max_allocated_mib = mib;
    else if (key == "reserved" || key == "cached") m.reserved_mib = mib;
    else if (key == "max reserved" || key == "max cached") m.max_reserved_mib = mib;
  }
  return m;
}

namespace {

// Names the iteration-line format by the fields it carries (oldest to newest).
std::string format_name(const MegatronIteration& it) {
  if (it.timestamp.size() > 19) return "megatron-core-2025 (timestamp with microseconds, throughput)";
  if (!it.timestamp.empty()) return "megatron-core-2024 (timestamp, throughput per GPU)";
  if (it.consumed_samples) return "megatron-lm-2021 (consumed samples, global batch size)";
  return "megatron-lm-2020 (no consumed samples)";
}

// "  tensor_model_parallel_size ...................... 8" inside the arguments block.
bool parse_arg_line(const std::string& line, std::string& key, std::string& value) {
  size_t dots = line.find(" ..");
  if (dots == std::string::npos) return false;
  size_t end = dots + 1;
  while (end < line.size() && line[end] == '.') ++end;
  if (end - dots < 3 || end >= line.size() || line[end] != ' ') return false;
  std::string k = trim(line.substr(0, dots));
  size_t sp = k.find_last_of(" :]");  // drop a rank prefix such as "[default0]:"
  if (sp != std::string::npos) k = k.substr(sp + 1);
  if (k.empty()) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  key = k;
  value = trim(line.substr(end));
  return true;
}

// "[after megatron is initialized] datetime: 2024-05-01 12:00:00 " lines.
std::string datetime_line(const std::string& line) {
  size_t p = line.find("] datetime: ");
  if (p == std::string::npos) return "";
  std::string t = trim(line.substr(p + 12));
  return t.size() >= 19 ? t.substr(0, 19) : "";
}

}  // namespace

Expected<MegatronLog> parse_megatron_log(std::istream& in, const std::string& name) {
  MegatronLog log;
  std::string line;
  int n = 0;
  bool in_args = false, restarted = false;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find("------------------------ arguments ------------------------") != std::string::npos) {
      in_args = true;
      restarted = restarted || !log.iterations.empty();
      continue;
    }
    if (in_args) {
      if (line.find("end of arguments") != std::string::npos) {
        in_args = false;
        continue;
      }
      std::string k, v;
      if (parse_arg_line(line, k, v)) log.args.emplace(k, v);
      continue;
    }
    if (log.first_datetime.empty()) log.first_datetime = datetime_line(line);
    if (line.find("[before the start of training step]") != std::string::npos && !log.iterations.empty())
      restarted = true;
    if (auto it = parse_megatron_iteration_line(line)) {
      it->line = n;
      if (log.format.empty()) log.format = format_name(*it);
      if (log.first_datetime.empty() && !it->timestamp.empty()) log.first_datetime = it->timestamp.substr(0, 19);
      if (it->elapsed_ms <= 0)
        log.warnings.push_back(name + ":" + std::to_string(n) + ": iteration " + std::to_string(it->iteration) +
                               " has a non-positive elapsed time; ignored");
      else {
        it->after_restart = restarted;
        restarted = false;
        log.iterations.push_back(*it);
      }
      continue;
    }
    if (auto m = parse_megatron_memory_line(line)) {
      m->line = n;
      log.memory.push_back(*m);
    }
  }
  if (log.iterations.empty())
    return Error(name + ": no Megatron-LM iteration lines found (expected lines like ' iteration       10/  "
                        "500000 | ... | elapsed time per iteration (ms): 1234.5 | ...'); is this the log of rank "
                        "0 / the last pipeline stage, which prints them?");
  return log;
}

Expected<MegatronLog> parse_megatron_log_file(const std::string& path) {
  std::vector<std::string> problems;
  auto text = read_input_file(path, kMaxTableInputBytes, problems);  // regular file or "-", size-capped
  if (!text) return Error(problems);
  std::istringstream in(*text);
  return parse_megatron_log(in, path);
}

}  // namespace mplan::runs
