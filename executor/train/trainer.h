// Trainer: one rank's part of a training job for a plan — builds the process groups, the model
// chunks of this pipeline stage, the schedule and the optimizer, and runs optimizer steps. All
// methods are collective over the base communicator unless noted.
#pragma once
#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/backend/backend.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/comm/groups.h"
#include "executor/data/data_source.h"
#include "executor/model/chunk.h"
#include "executor/optim/optimizer.h"
#include "executor/schedule/pipeline.h"

namespace mplan::exec {

struct TrainOptions {
  std::string backend = "cpu";  // cpu | cuda (see backend/backend_factory.h)
  int steps = 10;               // total optimizer steps of the run (a resumed run continues up to it)
  uint64_t seed = 1234;         // initialisation and data
  std::string data = "synthetic";
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;
  int warmup_steps = -1;   // -1: steps / 10
  int lr_decay_steps = 0;  // 0: steps
  float weight_decay = 0.1f;
  float clip_grad = 1.0f;
  float moe_aux_coeff = 1e-2f;
  float moe_capacity_factor = 0.0f;
  std::string checkpoint_dir;
  int checkpoint_every = 0;  // 0: only at the end
  bool resume = false;
  double peak_gflops = 0;            // per core; 0: measure
  int64_t predicted_peak_bytes = 0;  // the plan's predicted peak per rank (out-of-memory message); 0: unknown
};

struct OpStat {
  std::string op;
  double seconds = 0;  // per step, max over ranks
  int64_t calls = 0;
};

struct StepMetrics {
  int step = 0;  // 1-based
  double loss = 0, aux_loss = 0, grad_norm = 0, lr = 0;
  double step_time_s = 0, tokens_per_s = 0, tflops_per_rank = 0, mfu = 0;
  double peak_memory_gib = 0;  // max over ranks: the process peak RSS (CPU), every device allocation (GPU)
  double tensor_peak_gib = 0;  // max over ranks of live tensor bytes
  bool finite = true;          // false: non-finite loss or gradient; the update was skipped
  std::vector<OpStat> ops;     // filled on rank 0
};

class Trainer {
 public:
  // Builds everything for `plan` on `base` (MPI_COMM_WORLD for a job, MPI_COMM_SELF for a
  // single-rank reference). Errors (bad data file, unreadable checkpoint) are returned.
  static Expected<std::unique_ptr<Trainer>> create(const Plan& plan, const TrainOptions& opt, MPI_Comm base);
  ~Trainer();

  int rank() const { return groups_.rank; }
  int world_size() const { return groups_.world->size(); }
  int step_index() const { return step_; }  // optimizer steps done
  const LayoutDims& dims() const { return dims_; }
  const TrainOptions& options() const { return opt_; }
  Backend& backend() { return *backend_; }
  double peak_gflops() const { return peak_gflops_; }
  std::string data_description() const { return data_->describe(); }

  StepMetrics step();

  // Full logical tensors by name (parameters, or gradients of the last backward), on rank 0 only.
  std::map<std::string, std::vector<float>> gather_full(bool grads = false);
  // Sets this rank's shards from full tensors; returns names that were missing.
  std::vector<std::string> load_full(const std::map<std::string, std::vector<float>>& full);
  // Runs forward and backward of one step without the optimizer (gradients stay in place) and
  // returns the loss; used by the golden tests (logits of the head chunk appended when given).
  double forward_backward(std::vector<float>* logits = nullptr);
  // Replaces the data source (tests).
  void set_data(std::unique_ptr<DataSource> d) { data_ = std::move(d); }

  Status save_checkpoint();
  Status load_checkpoint();  // from options().checkpoint_dir/latest
  std::string last_checkpoint() const { return last_checkpoint_; }

 private:
  double t_start_ = 0;  // steady-clock seconds when create() began (phase lines)
  bool first_step_ = true;
  // host copies of the checkpointed arrays (filled from the backend when `download`)
  std::vector<ArrayRef> checkpoint_arrays(std::vector<std::vector<float>>& host, bool download);
  Trainer() = default;
  Exec exec();
  double run_pipeline(double* aux, std::vector<float>* logits = nullptr);

  Plan plan_;
  TrainOptions opt_;
  ProcessGroups groups_;
  LayoutDims dims_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<OpTagger> tagger_;  // device times per op (CUDA); null on the CPU
  std::unique_ptr<ParamStore> params_;
  OpTimers timers_;
  std::vector<ModelChunk> chunks_;
  std::unique_ptr<PipelineEngine> engine_;
  std::unique_ptr<DistributedOptimizer> optim_;
  std::unique_ptr<DataSource> data_;
  int step_ = 0;
  double peak_gflops_ = 0;
  int cores_ = 1;
  std::string last_checkpoint_;
};

// Key of the layout a checkpoint belongs to (model, batch and parallel config).
std::string layout_key(const Plan& plan);
// Peak resident memory of this process (VmHWM), bytes.
double process_peak_rss_bytes();

}  // namespace mplan::exec
