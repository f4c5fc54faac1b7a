// NeMo 2.0 / Lightning step lines (see nemo_log.h).
#include "runs/nemo_log.h"

#include <cctype>
#include <cmath>
#include <vector>

#include "runs/log_text.h"

namespace mplan::runs {

namespace {

constexpr const char* kTiming = "train_step_timing in s";

// One metric of a NeMo line into `r` (names as NeMo logs them).
void read_metric(const std::string& key, const std::string& value, LogIteration& r, bool& have_time) {
  auto v = to_double(value);
  if (!v) return;
  if (key == kTiming)
    r.elapsed_ms = *v * 1000.0, have_time = true;
  else if (key == "reduced_train_loss" || key == "train_loss" || key == "lm loss")
    r.loss = *v;
  else if (key == "global_batch_size")
    r.global_batch_size = static_cast<int64_t>(std::llround(*v));
  else if (key == "consumed_samples")
    r.consumed_samples = static_cast<int64_t>(std::llround(*v));
  else if (key == "lr")
    r.learning_rate = *v;
  else if (key == "TFLOPS_per_GPU")
    r.tflops_per_gpu = *v;
  else if (key == "global_step")
    r.iteration = static_cast<int64_t>(std::llround(*v));
}

// "Training epoch 0, iteration 9/99 | key: value | ...".
std::optional<LogIteration> progress_printer(const std::string& line) {
  size_t p = line.find("Training epoch ");
  if (p == std::string::npos) return std::nullopt;
  size_t it = line.find(", iteration ", p);
  if (it == std::string::npos) return std::nullopt;
  auto n = to_int(line.substr(it + 12));
  size_t slash = line.find('/', it);
  if (!n || slash == std::string::npos) return std::nullopt;
  LogIteration r;
  r.dialect = LogIteration::Dialect::nemo;
  r.nemo_form = "progress-printer";
  bool have_time = false;
  auto fields = split_bar(line.substr(slash));
  for (size_t i = 1; i < fields.size(); ++i) {
    std::string k, v;
    if (key_value(fields[i], k, v)) read_metric(k, v, r, have_time);
  }
  if (!have_time) return std::nullopt;
  r.iteration = *n + 1;  // printed 0-based; global_step is ignored here (it lags by one)
  r.train_iters = to_int(line.substr(slash + 1)).value_or(-1) + 1;
  return r;
}

// tqdm postfix "[elapsed<remaining, k=v, k=v]" of a Lightning progress bar.
std::optional<LogIteration> progress_bar(const std::string& line) {
  size_t t = line.rfind(kTiming);
  if (t == std::string::npos || line.find('=', t) != t + std::string(kTiming).size()) return std::nullopt;
  size_t open = line.rfind('[', t);
  size_t close = line.find(']', t);
  if (open == std::string::npos) return std::nullopt;
  std::string post = line.substr(open + 1, (close == std::string::npos ? line.size() : close) - open - 1);
  LogIteration r;
  r.dialect = LogIteration::Dialect::nemo;
  r.nemo_form = "progress-bar";
  bool have_time = false;
  size_t start = 0;
  while (start <= post.size()) {
    size_t comma = post.find(", ", start);
    std::string item = post.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.rfind('=');
    if (eq != std::string::npos) read_metric(trim(item.substr(0, eq)), item.substr(eq + 1), r, have_time);
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  if (!have_time) return std::nullopt;
  if (r.iteration == 0) {
    // "| 50/50 [" counter before the postfix
    size_t bar = line.rfind('|', open);
    if (bar != std::string::npos) {
      r.iteration = to_int(line.substr(bar + 1)).value_or(0);
      size_t sl = line.find('/', bar);
      if (sl != std::string::npos && sl < open) r.train_iters = to_int(line.substr(sl + 1)).value_or(0);
    }
  }
  if (r.iteration <= 0) return std::nullopt;
  return r;
}

// "[NeMo I 2024-06-12 10:11:02 exp_manager:453] Step 10: train_step_timing in s=12.03".
std::optional<LogIteration> delta_timing(const std::string& line) {
  size_t s = line.find("Step ");
  size_t t = line.find(std::string(": ") + kTiming + "=");
  if (s == std::string::npos || t == std::string::npos || s > t) return std::nullopt;
  auto n = to_int(line.substr(s + 5));
  auto v = to_double(line.substr(t + 2 + std::string(kTiming).size() + 1));
  if (!n || !v) return std::nullopt;
  LogIteration r;
  r.dialect = LogIteration::Dialect::nemo;
  r.nemo_form = "delta-timing";
  r.iteration = *n + 1;
  r.elapsed_ms = *v * 1000.0;
  r.timestamp = nemo_datetime_line(line);
  return r;
}

}  // namespace

std::string nemo_datetime_line(const std::string& line) {
  size_t p = line.find("[NeMo ");
  if (p == std::string::npos || p + 27 > line.size()) return "";
  std::string t = line.substr(p + 8, 19);
  if (t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':' || t[16] != ':') return "";
  return t;
}

std::optional<LogIteration> parse_nemo_iteration_line(const std::string& line) {
  if (line.find(kTiming) == std::string::npos) return std::nullopt;
  if (auto r = progress_printer(line)) return r;
  if (auto r = delta_timing(line)) return r;
  return progress_bar(line);
}

}  // namespace mplan::runs
