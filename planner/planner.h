// The planner: searches every layout of a job (model, cluster, GPUs, batch, sequence, precision),
// keeps those that fit, ranks them by predicted step time (or memory headroom), says why, and exports
// the winners. Used by `mplan search/explain/export` and the GUI.
//
// Contract used by the GUI and the CLI (keep these names and meanings): SearchOptions, SearchStats,
// Candidate, SearchResult, search(), explain_plan(), export_megatron_args(), export_torchtitan_toml(),
// export_torchtitan_config().
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"
#include "simulator/cost_params.h"
#include "simulator/simulator.h"

namespace mplan {

enum class Objective { throughput, memory_headroom };

struct SearchOptions {
  int top_k = 10;
  Objective objective = Objective::throughput;
  int threads = 0;  // 0 = hardware concurrency
  // --fix tp=8,pp=4 and --max tp=8,pp=32: keys tp, pp, vpp, cp, ep, etp, dp, mbs, zero (and
  // recompute_layers); validated against each other (a fixed value above its max is a conflict).
  // --fix also takes coded choices: sp and tp_comm_overlap 0/1, recompute none=0 selective=1 full=2,
  // schedule gpipe=0 1f1b=1 interleaved=2 zb=3, cp_comm p2p=0 a2a=1 allgather=2
  // (planner/constraints.h choice_code() maps the names).
  std::map<std::string, int> fix, max;
  bool allow_tp_across_nvlink = false;  // tp groups spanning NVLink domains only when asked
  // Called from worker threads with the fraction done (0..1); may be empty.
  std::function<void(double)> progress;
  // When set and true, the search stops early and returns what it has (result.cancelled = true).
  const std::atomic<bool>* cancel = nullptr;
  // Tests and audits: no pruning at all — every valid candidate is simulated, and every bound is
  // checked against the simulation (SearchStats::bound_violations counts bounds that were not sound).
  bool exhaustive = false;
  // Distinct answers: layouts that differ only in refinements (vpp, the pipeline split, the TP-comm and
  // MoE all-to-all overlap flags) and whose 80 % step-time interval overlaps the best of them form one
  // group; top_k counts groups (SearchResult::top holds each group's best, SearchResult::folded the
  // rest). false: every layout is its own group. The memory-headroom objective never folds.
  bool distinct = true;
};

struct SearchStats {
  int64_t enumerated = 0;
  std::map<std::string, int64_t> rejected_by_rule;  // rule name -> count
  int64_t rejected = 0;
  int64_t pruned_by_bound = 0;  // skipped: a cheap lower bound could not beat the current top K
  int64_t pruned_memory = 0;    // skipped: a memory lower bound exceeds the GPU
  int64_t simulated = 0;
  int64_t fits = 0;
  double wall_s = 0;
  int64_t structures = 0;        // valid (tp, pp, vpp, split, cp, dp, ep, etp, mbs) combinations
  int64_t probes = 0;            // per-layer cost probes (tiny build_workload calls) made for bounds
  int64_t bound_violations = 0;  // exhaustive mode only: a bound above the simulated value (must be 0)
};

struct Candidate {
  Plan plan;
  StepReport report;
  // the step-time interval overlaps the winner's: statistically tied with it (mark_ties)
  bool tied_with_best = false;
  std::string separate_by;  // the measurement that would separate it from the winner
};

// Candidates grouped for distinct answers (group_ranked).
struct GroupedResult {
  std::vector<Candidate> best;                 // each group's best, best first
  std::vector<std::vector<Candidate>> folded;  // folded[g]: the other members of group g, best first
};

// Groups `ranked` (best first, by the search's order): a candidate joins the group of the last earlier
// best with the same structure (every field but vpp with its interleaved schedule, the pipeline split and
// the overlap flags) when its 80 % step-time interval overlaps that best's (each member is compared with
// the best, no chaining); otherwise it leads a new group. Keeps the first `k` groups. With `distinct`
// false every candidate is a group of its own.
GroupedResult group_ranked(std::vector<Candidate> ranked, size_t k, bool distinct);

struct SearchResult {
  std::vector<Candidate> top;  // best first, deterministic order: the best of each group (SearchOptions::distinct)
  std::vector<std::vector<Candidate>> folded;  // folded[g]: the other members of top[g]'s group, best first
  SearchStats stats;
  bool cancelled = false;
  // When nothing fits: the most frequent reasons layouts were rejected ("does not fit: ..." included).
  std::vector<std::string> top_rejection_reasons;
};

// `job` holds model, cluster and training (precision included) and parallel.world_size = GPUs;
// of the rest of `job.parallel` only attention_backend is used (an implementation property of the
// training code, not a layout choice); overlaps of DP communication are assumed on. `cal` gives the cost parameters per GPU
// architecture.
Expected<SearchResult> search(const Plan& job, const Calibration& cal, const SearchOptions& opt);

// Why `plan` wins or loses: its breakdown next to the best alternatives and why the usual
// alternatives lost ("does not fit: +7.3 GiB activations on stage 0", "tp=16 crosses the NVLink
// domain: +18% exposed TP comm", "bubble 23% with 8 micro-batches"). Human-readable text.
Expected<std::string> explain_plan(const Plan& plan, const Calibration& cal);

// The winner of a search next to its runners-up (time breakdowns side by side), then
// explain_plan() of the winner. Error when the result is empty.
Expected<std::string> explain_search(const SearchResult& result, const Calibration& cal);

// Megatron-LM command-line arguments for the plan, spelled as Megatron spells them.
std::string export_megatron_args(const Plan& plan);
// The layout and batch read back from Megatron-LM arguments (as export_megatron_args writes them;
// world_size is not part of Megatron's arguments and stays 0). Used by round-trip tests.
struct MegatronLayout {
  ParallelConfig parallel;
  int64_t global_batch_size = 0, seq_length = 0;
  Precision precision = Precision::fp32;
  int num_layers = 0;
};
Expected<MegatronLayout> parse_megatron_args(const std::string& args);
// The argument words of an exported file (comments, line continuations and the environment's
// export/unset lines dropped; "quoted" values kept whole).
Expected<std::vector<std::string>> megatron_tokens(const std::string& text);
// The value after flag tok[i] (advancing i), read as text or a non-negative integer up to `max`; a
// missing or malformed value adds one problem naming the flag and reads as 0.
std::string megatron_arg_value(const std::vector<std::string>& tok, size_t& i, std::vector<std::string>& problems);
long long megatron_arg_int(const std::vector<std::string>& tok, size_t& i, std::vector<std::string>& problems, long long max);
// The model the arguments build (planner/import_megatron.cpp), named by the export's header; the
// fields Megatron's arguments do not carry (presets' sources) are absent. Every problem names its flag.
Expected<ModelSpec> parse_megatron_model(const std::string& args);
// A whole plan from an exported argument file: the model, the layout and the batch, on `cluster` with
// the WORLD_SIZE of the header (or `world_size` when > 0).
Expected<Plan> import_megatron_plan(const std::string& args, const ClusterSpec& cluster, int world_size = 0);
// torchtitan releases the exporter writes for: today's Python configuration (a function returning a
// Trainer.Config, run with --module/--config: torchtitan since its February 2026 config refactor), the
// v0.2.x TOML job file (module_fqns_per_model_part, quantize.linear.* converters) and the v0.1 one
// (pipeline_parallel_split_points, float8/mx converters).
enum class TorchtitanVersion { current, v0_2, v0_1 };
// "" / current / main, 0.2 / 0.2.x / 0.2.0-0.2.2, 0.1 / 0.1.x / 0.1.0; nullopt for anything else.
std::optional<TorchtitanVersion> parse_torchtitan_version(const std::string& s);
// torchtitan's current configuration, a Python module (planner/export_torchtitan_config.cpp), for the
// layouts it runs (FSDP/HSDP/DDP, TP, PP, CP, EP); Error saying what to change otherwise.
Expected<std::string> export_torchtitan_config(const Plan& plan);
// A torchtitan TOML job file of release `v` (v0_2 or v0_1) for the layouts it runs; Error otherwise.
Expected<std::string> export_torchtitan_toml(const Plan& plan, TorchtitanVersion v = TorchtitanVersion::v0_2);

}  // namespace mplan
