// The simulator's entry point: predict one training step of a plan (step time, MFU, memory per rank,
// bubbles, exposed communication, per-op times, optionally a timeline) with the cost model.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "core/plan.h"
#include "core/schedule.h"
#include "core/status.h"
#include "simulator/cost_params.h"

namespace mplan {

// Where the step time goes on the critical pipeline rank; sums to step_time_s.
struct TimeBreakdown {
  double compute = 0;
  double recompute = 0;
  double tp_comm_exposed = 0;
  double cp_comm_exposed = 0;
  double ep_comm_exposed = 0;
  double dp_comm_exposed = 0;
  double pp_p2p_exposed = 0;
  double offload_exposed = 0;  // activation offloading transfers to/from host memory not hidden by compute
  double bubble = 0;
  double optimizer = 0;
  double total() const {
    return compute + recompute + tp_comm_exposed + cp_comm_exposed + ep_comm_exposed + dp_comm_exposed + pp_p2p_exposed +
           offload_exposed + bubble + optimizer;
  }
};

// Peak memory of one rank, GiB.
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double comm_buffers = 0;
  double other = 0;  // GEMM workspaces, allocator slack, CUDA context
  // Parts of the total the framework's own allocator does not see (NCCL buffers, CUDA context), and its
  // slack (reserved - allocated): reserved = total - outside_allocator, allocated = reserved - slack.
  double outside_allocator = 0, allocator_slack = 0;
  double total() const { return weights + gradients + optimizer + activations + comm_buffers + other; }
  double reserved() const { return total() - outside_allocator; }
  double allocated() const { return reserved() - allocator_slack; }
};

struct StageReport {
  int stage = 0;
  int layers = 0;
  double memory_gib = 0;
  double busy_s = 0;  // compute + exposed communication on this stage's stream
  MemoryBreakdown memory;
  int max_microbatches_in_flight = 0;
  // Work and idle time of this stage (simulator/bubbles.h). work_per_microbatch_s: its forward,
  // backward and weight-gradient actions of one micro-batch (all chunks, exposed communication
  // included). Idle inside the pipelined part = fill/drain (the schedule's warm-up and cool-down) +
  // imbalance (waiting for a stage with more work per micro-batch) + p2p (waiting for a transfer).
  double work_per_microbatch_s = 0;
  double idle_fill_drain_s = 0;
  double idle_imbalance_s = 0;
  double idle_p2p_s = 0;
};

// Predicted time of one named op (core/ops.h vocabulary) per step on the critical stage's rank.
struct OpTime {
  std::string name;
  double time_s = 0;
  int64_t calls = 0;
};

// One timeline event (Chrome trace "X" event).
struct TraceEvent {
  int stage = 0;
  std::string stream;  // compute | tp | cp | ep | dp | p2p
  std::string name;    // e.g. "F mb3 c0" or "dp_reduce_scatter"
  double start_s = 0, dur_s = 0;
  char phase = 'F';  // F, B, W, or 'C' for communication, 'O' optimizer
  int microbatch = -1, chunk = -1;
  // Communication events: the part of the event the compute stream waits for (its last exposed_s
  // seconds); 0 = fully hidden. Summed per stream on the critical stage it is the time breakdown's
  // exposed communication (simulator/comm_events.h).
  double exposed_s = 0;
  // Pipeline sends: the receiving stage and when the action that consumes the tensor starts there.
  int peer_stage = -1;
  double peer_start_s = 0;
  bool critical = false;  // on the step's critical path (simulator/critical_path.h)
};

// One event of the step's critical path (simulator/critical_path.h).
struct CriticalEvent {
  std::string kind;  // forward | backward | weight gradient | pp p2p | dp reduce-scatter | dp all-reduce | optimizer | dp param
                     // all-gather
  int stage = 0, microbatch = -1, chunk = -1;
  double start_s = 0, duration_s = 0;
};
// The critical path's time of one kind ("stage 3 backward", "pp p2p", "tp comm exposed",
// "dp reduce-scatter tail" ...) and its share of the path.
struct CriticalKindShare {
  std::string kind;
  double time_s = 0, share = 0;
};

struct MemoryCounter {
  int stage = 0;
  double time_s = 0;
  double gib = 0;
};

struct StepReport {
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  // 80 % prediction intervals from the cross-validated residuals of the plan's family ({0, 0} = none)
  std::pair<double, double> tokens_per_s_per_gpu_interval{0, 0}, step_time_s_interval{0, 0};
  double model_tflops_per_gpu = 0;
  double mfu = 0;                 // causal-halved model FLOPs / (time * GPUs * dense peak)
  double mfu_full_attention = 0;  // same with full-attention FLOPs
  double peak_memory_gib = 0;     // max over ranks
  double capacity_gib = 0;        // GPU memory
  bool fits = true;
  double bubble_fraction = 0;  // bubble / step time
  int num_microbatches = 0;
  TimeBreakdown time;
  MemoryBreakdown memory;  // worst rank
  std::vector<StageReport> per_stage;
  std::vector<OpTime> ops;
  std::vector<std::string> warnings;
  std::vector<TraceEvent> trace;  // filled when SimOptions::trace
  std::vector<MemoryCounter> memory_trace;
  // The pipeline bubble by cause (simulator/bubbles.h): time.bubble of the critical stage (the one
  // the time breakdown is of) = fill/drain + stage imbalance; the bottleneck is the stage with the
  // most work per micro-batch (-1 without a pipeline).
  int critical_stage = 0;
  int bottleneck_stage = -1;
  double bubble_fill_drain_s = 0;
  double bubble_imbalance_s = 0;
  // The step's critical path, filled when SimOptions::critical_path or ::trace: its events in time
  // order, its length (= step_time_s) and its time by kind, largest first.
  std::vector<CriticalEvent> critical_path;
  double critical_path_s = 0;
  std::vector<CriticalKindShare> critical_by_kind;
};

// The action lists of one schedule shape, all stages (core/schedule.h), and each list's max_in_flight.
// `order` (only a simulation reads it; SimCache::lists leaves it and max_in_flight empty): the stages' actions in one sequence
// that respects every dependency between them (a stage's list order, a forward after its input's forward, a backward after its
// forward and its gradient's backward, W after B): the stage whose next action runs, one entry per action. `stuck_stage`: the
// first stage whose list cannot finish (a deadlocked table), -1 when none.
// One entry of that order: which action runs, with what the simulation reads of it precomputed.
struct OrderStep {
  uint32_t slot;   // (stage * vpp + chunk) * microbatches + microbatch: the action's entry in the time grids
  uint32_t sc;     // stage * vpp + chunk
  uint16_t stage;  //
  Phase phase;     //
  uint8_t edge;    // kFirstChunk: stage 0's chunk 0 (no forward input); kLastChunk: the last stage's last chunk;
                   // kFinalBackward: the last backward of its (stage, chunk)
  static constexpr uint8_t kFirstChunk = 1, kLastChunk = 2, kFinalBackward = 4;
  bool operator==(const OrderStep&) const = default;
};

struct ScheduleTable {
  std::vector<std::vector<Action>> actions;  // [stage]
  std::vector<int> max_in_flight;            // [stage]
  std::vector<OrderStep> order;
  int stuck_stage = -1;
};

struct WorkloadMemo;  // simulator/workload.cpp

// What repeated simulations of one job (the planner's thousands of layouts) can share: the schedule
// tables per (schedule, pp, vpp, micro-batches), the op-list costs per the layout fields they depend on
// (build_workload) and the event simulation's buffers. A cache serves ONE job: the same model, cluster,
// training and cost parameters; only the parallel layout (world size included) may differ between
// the plans simulated with it. Thread-safe; results are bit for bit those without a cache
// (tests/planner/test_sim_cache.cpp).
class SimCache {
 public:
  SimCache();
  ~SimCache();
  SimCache(const SimCache&) = delete;
  SimCache& operator=(const SimCache&) = delete;
  // The complete table (lists, max_in_flight, dependency order), made once.
  const ScheduleTable& schedule(Schedule s, int pp, int vpp, int64_t microbatches);
  // The same table with its action lists only (`order` and `max_in_flight` are filled when schedule()
  // asks for them): what the planner's activation walks read, for many more shapes than it simulates.
  const ScheduleTable& lists(Schedule s, int pp, int vpp, int64_t microbatches);
  WorkloadMemo& workload_memo() { return *memo_; }
  // A buffer of the event simulation (returned with give_buffer when done; empty when none is free).
  std::vector<double> take_buffer();
  void give_buffer(std::vector<double>&& b);

 private:
  std::mutex sched_mu_, buf_mu_;
  struct Table {
    ScheduleTable t;
    std::once_flag completed;  // order and max_in_flight
  };
  Table& table(Schedule s, int pp, int vpp, int64_t microbatches);
  std::map<std::tuple<int, int, int, int64_t>, std::unique_ptr<Table>> sched_;
  std::vector<std::vector<double>> free_;
  std::unique_ptr<WorkloadMemo> memo_;
};

struct SimOptions {
  bool trace = false;
  bool critical_path = false;  // build the step's dependency DAG and its critical path (also with trace)
  SimCache* cache = nullptr;   // shared state of simulations of one job (see SimCache); null = none
};

// Validates the plan (same rules as the plan file) and simulates it.
Expected<StepReport> simulate(const Plan& plan, const CostParams& params, const SimOptions& opt = {});

// The JSON object of `mplan simulate --format json` (contract fields of the Simulator issue).
nlohmann::json report_to_json(const StepReport& r);
// Chrome-trace JSON (opens in Perfetto): a process per stage, a thread per stream.
nlohmann::json trace_to_json(const StepReport& r, const Plan& plan);

}  // namespace mplan
