// Scaling and time to train: the search repeated over several GPU counts (`mplan search --gpus
// 256,512` or `256..4096`, the GUI's scaling view), and how long a token budget takes with a plan's step
// time — ideally, and once the job's expected interruptions and its checkpoints are counted (Daly's
// model with the Young/Daly optimal checkpoint interval) — in days, GPU-hours and money.
#pragma once
#include <cstdint>
#include <string>

#include <vector>

#include "core/plan.h"
#include "planner/planner.h"
#include "simulator/simulator.h"

namespace mplan {

// How often a job is interrupted and what an interruption and a checkpoint cost. Defaults, each from a
// published large-scale run (docs/planner.md "Time to train"):
struct ReliabilityParams {
  // Unexpected interruptions per GPU per day: Llama 3 (Dubey et al. 2024, "The Llama 3 Herd of Models",
  // arXiv:2407.21783, section 3.3.4 / Table 5): 419 unexpected interruptions in 54 days of
  // pre-training on 16,384 H100 GPUs = 419 / (54 x 16,384) = 4.74e-4.
  double failures_per_gpu_day = 419.0 / (54.0 * 16384.0);
  // Time from an interruption to training again (detection, rescheduling, initialisation, reading the
  // checkpoint): 600 s, the setup budget NVIDIA's fault-tolerance launcher gives a restarted Megatron job
  // (Megatron Bridge resiliency guide, ft_launcher --ft-rank_section_timeouts=setup:600).
  double restart_s = 600;
  // Aggregate write bandwidth of the checkpoint storage, GB/s: Llama 3's Tectonic file system sustains
  // 2 TB/s (Dubey et al. 2024, section 3.3.1 "Storage").
  double ckpt_write_gbps = 2000;
};

struct TimeToTrain {
  int64_t steps = 0;              // ceil(tokens / (global batch x sequence))
  double ideal_s = 0;             // steps x step time: no interruption, no checkpoint
  double expected_s = 0;          // with interruptions, restarts, lost work and checkpoint writes
  double goodput = 1;             // ideal / expected
  double checkpoint_bytes = 0;    // the plan's state written per checkpoint
  double checkpoint_write_s = 0;  // checkpoint_bytes / write bandwidth
  double mtbf_s = 0;              // the job's mean time between interruptions (0: no interruptions)
  double interval_s = 0;          // compute time between checkpoints (Young/Daly, whole steps; 0 = none)
  int64_t interval_steps = 0;
  double gpu_hours = 0;  // expected_s x GPUs / 3600
  double cost = 0;       // gpu_hours x price per GPU-hour (0 when no price is given)
};

// The bytes one checkpoint holds: one copy of every parameter in the training dtype and the optimizer's
// master weights and moments, as the plan's framework keeps them (simulator/memory_states.h for an
// unsharded rank; fp8 weight caches excluded; frozen LoRA base weights excluded from the optimizer).
double checkpoint_bytes(const Plan& plan);

// Daly (2006, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22):
// tau = sqrt(2 d M) [1 + sqrt(d / 2M) / 3 + (d / 2M) / 9] - d for d < 2M, else M (Young 1974's
// sqrt(2 d M) to first order), with d the checkpoint write time and M the mean time between failures.
double daly_interval_s(double write_s, double mtbf_s);
// Daly's expected wall time of `ideal_s` of work: M e^(R/M) (e^((tau + d)/M) - 1) ideal_s / tau.
double daly_expected_s(double ideal_s, double interval_s, double write_s, double restart_s, double mtbf_s);

// The whole run of `tokens` tokens with `plan` predicted at `report` on plan.parallel.world_size GPUs.
TimeToTrain time_to_train(const Plan& plan, const StepReport& report, double tokens, const ReliabilityParams& rel,
                          double gpu_hour_price = 0);

// "15T", "2.5e12", "300B", "1.4M": a positive token count (suffixes K, M, B or G, T: 1e3 .. 1e12); an
// Error naming `field` and what would be valid otherwise.
Expected<double> parse_token_count(const std::string& text, const std::string& field);

// "512", a list "256,512,1024" or an inclusive range of powers of two "256..4096" (256, 512, ..., 4096):
// GPU counts in ascending order, each in [1, max_gpus]. An empty or inverted range, range ends that are
// not powers of two, a count given twice or not a positive integer: an Error naming `field`.
Expected<std::vector<int>> parse_gpu_counts(const std::string& text, const std::string& field, int max_gpus);

// One GPU count of a sweep: its search result (top empty when nothing fits).
struct ScalePoint {
  int gpus = 0;
  SearchResult result;
};
// search() for every count of `gpus` (job.parallel.world_size is replaced); the first error (a count the
// cluster cannot hold, contradictory constraints) is returned naming the count, before anything is searched
// when the counts exceed the cluster. Progress covers the whole sweep; cancellation stops it.
Expected<std::vector<ScalePoint>> search_scaling(const Plan& job, const std::vector<int>& gpus, const Calibration& cal,
                                                 const SearchOptions& opt);

}  // namespace mplan
