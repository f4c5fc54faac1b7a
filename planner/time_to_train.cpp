// Time to train with interruptions and checkpoints, and the --gpus / token grammar (see scaling.h for the model
// and its sources). Needs only the simulator: the GUI's fallback build (no planner library) compiles it too.
#include "planner/scaling.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/counting.h"
#include "core/framework_profile.h"
#include "simulator/memory_states.h"

namespace mplan {

double checkpoint_bytes(const Plan& plan) {
  // one unsharded rank holding the whole model: its weights and optimizer states are the checkpoint
  Plan q = plan;
  ParallelConfig& p = q.parallel;
  p.world_size = 1;
  p.tp = p.pp = p.vpp = p.cp = p.ep = p.etp = 1;
  p.zero = 0;
  p.dp_replicate = 1;
  p.pipeline_layout.clear();
  p.num_layers_in_first_pipeline_stage = p.num_layers_in_last_pipeline_stage = 0;
  std::vector<StageParams> sp = params_per_stage(q.model, p);
  if (sp.empty()) return 0;
  StageWork st;
  fill_stage_params(st, q.model, p, sp[0], 0, q.model.num_layers);
  ModelStateBytes b = model_state_bytes(q, st);
  double weights = b.weights;
  // Transformer Engine's quantized weight cache (in these model states) is rebuilt from the weights, never saved
  if (framework_profile(q.training.framework).model_states == ModelStateLayout::mixed_precision_master && !p.fp8_param_gather)
    weights -= std::max(0.0, st.dense_params + st.expert_params - st.unquantized_params) *
               fp8_weight_copy_bytes(q.training.precision, q.cluster.gpu.arch);
  return std::max(0.0, weights) + b.optimizer;
}

double daly_interval_s(double write_s, double mtbf_s) {
  if (!(mtbf_s > 0) || !std::isfinite(mtbf_s)) return 0;
  if (write_s >= 2 * mtbf_s) return mtbf_s;
  const double x = write_s / (2 * mtbf_s);
  return std::sqrt(2 * write_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - write_s;
}

double daly_expected_s(double ideal_s, double interval_s, double write_s, double restart_s, double mtbf_s) {
  if (!(mtbf_s > 0) || !std::isfinite(mtbf_s) || !(interval_s > 0)) return ideal_s;
  const double m = mtbf_s;
  return m * std::exp(restart_s / m) * std::expm1((interval_s + write_s) / m) * ideal_s / interval_s;
}

TimeToTrain time_to_train(const Plan& plan, const StepReport& report, double tokens, const ReliabilityParams& rel,
                          double gpu_hour_price) {
  TimeToTrain t;
  const double per_step = double(plan.training.global_batch_size) * double(plan.training.seq_length);
  const double gpus = std::max(1, plan.parallel.world_size);
  t.steps = per_step > 0 ? int64_t(std::ceil(tokens / per_step)) : 0;
  t.ideal_s = double(t.steps) * report.step_time_s;
  t.checkpoint_bytes = checkpoint_bytes(plan);
  t.checkpoint_write_s = rel.ckpt_write_gbps > 0 ? t.checkpoint_bytes / (rel.ckpt_write_gbps * 1e9) : 0;
  const double failures_per_s = rel.failures_per_gpu_day / 86400.0 * gpus;
  t.expected_s = t.ideal_s;
  if (failures_per_s > 0 && report.step_time_s > 0 && t.steps > 0) {
    t.mtbf_s = 1 / failures_per_s;
    // the optimal interval, in whole steps (at least one, at most the run)
    double tau = daly_interval_s(t.checkpoint_write_s, t.mtbf_s);
    t.interval_steps = std::clamp<int64_t>(int64_t(std::llround(tau / report.step_time_s)), 1, t.steps);
    t.interval_s = double(t.interval_steps) * report.step_time_s;
    t.expected_s = daly_expected_s(t.ideal_s, t.interval_s, t.checkpoint_write_s, rel.restart_s, t.mtbf_s);
  }
  t.goodput = t.expected_s > 0 ? t.ideal_s / t.expected_s : 1;
  t.gpu_hours = t.expected_s * gpus / 3600;
  t.cost = gpu_hour_price > 0 ? t.gpu_hours * gpu_hour_price : 0;
  return t;
}

Expected<double> parse_token_count(const std::string& text, const std::string& field) {
  const std::string valid = ": expected a positive number of tokens such as 15T, 300B, 2.5e12 (suffixes K M B G T)";
  if (text.empty()) return Error(field + " is empty" + valid);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return Error(field + " '" + text + "' is not a number" + valid);
  }
  std::string rest = text.substr(used);
  double scale = 1;
  if (rest.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(rest[0]))) {
      case 'K':
        scale = 1e3;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'B':
      case 'G':
        scale = 1e9;
        break;
      case 'T':
        scale = 1e12;
        break;
      default:
        return Error(field + " '" + text + "' has an unknown suffix '" + rest + "'" + valid);
    }
  } else if (!rest.empty()) {
    return Error(field + " '" + text + "' is not a number" + valid);
  }
  v *= scale;
  if (!std::isfinite(v) || !(v > 0) || v > 1e18)
    return Error(field + " '" + text + "' is out of range" + valid + ", at most 1e18");
  return v;
}

namespace {

// A positive integer of `text` (digits only), or -1.
long long positive_int(const std::string& text) {
  if (text.empty() || text.size() > 12) return -1;
  long long v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
  }
  return v > 0 ? v : -1;
}

bool power_of_two(long long v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

Expected<std::vector<int>> parse_gpu_counts(const std::string& text, const std::string& field, int max_gpus) {
  const std::string valid = ": expected a GPU count (512), a list (256,512,1024) or a range of powers of two (256..4096)";
  std::vector<long long> v;
  if (auto dots = text.find(".."); dots != std::string::npos) {
    const std::string a = text.substr(0, dots), b = text.substr(dots + 2);
    if (a.empty() || b.empty()) return Error(field + " '" + text + "': the range needs both ends" + valid);
    long long lo = positive_int(a), hi = positive_int(b);
    if (lo < 0 || hi < 0) return Error(field + " '" + text + "': the ends of a range must be positive integers" + valid);
    if (!power_of_two(lo) || !power_of_two(hi))
      return Error(field + " '" + text + "': the ends of a range must be powers of two (" + std::to_string(lo) + ".." +
                   std::to_string(hi) + " is not)" + valid);
    if (lo > hi) return Error(field + " '" + text + "': the range is inverted (" + a + " > " + b + "); write " + b + ".." + a);
    for (long long n = lo; n <= hi; n *= 2) v.push_back(n);
  } else {
    size_t start = 0;
    while (true) {
      size_t comma = text.find(',', start);
      std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      long long n = positive_int(item);
      if (n < 0) return Error(field + " '" + text + "': '" + item + "' is not a positive integer" + valid);
      v.push_back(n);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  std::vector<int> out;
  for (long long n : v) {
    if (n > max_gpus)
      return Error(field + " " + std::to_string(n) + ": the cluster holds at most " + std::to_string(max_gpus) +
                   " GPUs (give counts up to " + std::to_string(max_gpus) + ", or a larger cluster)");
    for (int m : out)
      if (m == n) return Error(field + " '" + text + "': " + std::to_string(n) + " is given twice");
    out.push_back(int(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mplan
