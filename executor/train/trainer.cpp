// Trainer: construction of a rank's model part, the optimizer step loop, metrics and checkpoints.
#include "executor/train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/counting.h"
#include "core/hash.h"
#include "core/units.h"
#include "executor/backend/backend_factory.h"
#include "executor/backend/blas_config.h"
#include "executor/checkpoint/checkpoint.h"

namespace mplan::exec {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// MPLAN_FAULT="nan@STEP" poisons the loss of step STEP; "kill@RANK@STEP" kills rank RANK at the
// start of step STEP. Test hooks for the fault-handling tests.
void maybe_kill(int rank, int step) {
  const char* f = std::getenv("MPLAN_FAULT");
  int r = -1, s = -1;
  if (f && std::sscanf(f, "kill@%d@%d", &r, &s) == 2 && r == rank && s == step) std::raise(SIGKILL);
}
bool poison_loss(int step) {
  const char* f = std::getenv("MPLAN_FAULT");
  int s = -1;
  return f && std::sscanf(f, "nan@%d", &s) == 1 && s == step;
}

// "mplan train: <phase>: X s (at Y s)" on stderr (rank 0): where the time before step 1 goes.
// stderr keeps `--format json` stdout clean.
void print_phase(bool lead, const char* what, double begin, double start) {
  if (!lead) return;
  const double t = now_s();
  std::fprintf(stderr, "mplan train: %s: %.2f s (at %.2f s)\n", what, t - begin, t - start);
  std::fflush(stderr);
}

}  // namespace

std::string layout_key(const Plan& plan) {
  nlohmann::json j = {{"model", model_to_json(plan.model)},
                      {"training", training_to_json(plan.training)},
                      {"parallel", parallel_to_json(plan.parallel)}};
  return fnv1a_hex(j.dump());
}

double process_peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) * 1024.0;
  return 0;
}

Trainer::~Trainer() = default;

Exec Trainer::exec() { return Exec{*backend_, groups_, dims_, *params_, timers_}; }

Expected<std::unique_ptr<Trainer>> Trainer::create(const Plan& plan, const TrainOptions& opt, MPI_Comm base) {
  std::vector<std::string> problems = unsupported_features(plan);
  int size = 0;
  MPI_Comm_size(base, &size);
  if (size != plan.parallel.world_size)
    problems.push_back("the plan needs world_size=" + std::to_string(plan.parallel.world_size) + " ranks but " +
                       std::to_string(size) + " were started");
  if (opt.steps < 1) problems.push_back("--steps must be >= 1");
  if (!problems.empty()) return Error(problems);
  std::unique_ptr<Trainer> t(new Trainer());
  t->t_start_ = now_s();
  t->plan_ = plan;
  t->opt_ = opt;
  set_blas_single_thread();
  auto setup = make_backend(opt.backend, plan, base, opt.predicted_peak_bytes);
  if (!setup) return setup.error();
  t->backend_ = std::move(setup.value().backend);
  t->tagger_ = std::move(setup.value().tagger);
  t->timers_.set_tagger(t->tagger_.get());
  t->groups_ = make_backend_groups(*t->backend_, base, plan.parallel);
  const bool lead = t->groups_.rank == 0;
  print_phase(lead, ("starting the " + t->backend_->name() + " backend and its communicators").c_str(), t->t_start_, t->t_start_);
  t->dims_ = make_layout_dims(plan, t->groups_.coord);
  t->dims_.moe_aux_coeff = opt.moe_aux_coeff;
  t->dims_.moe_capacity_factor = opt.moe_capacity_factor;
  t->params_ = std::make_unique<ParamStore>();
  const ParallelConfig& p = plan.parallel;
  const int s = t->groups_.coord.pp;
  auto counts = layers_per_stage_chunk(plan.model, p);
  for (int c = 0; c < p.vpp; ++c) {
    const int n = counts[size_t(s)][size_t(c)];
    int recompute = 0;
    if (p.recompute == Recompute::full) recompute = p.recompute_num_layers > 0 ? p.recompute_num_layers : n;
    t->chunks_.emplace_back(*t->params_, t->dims_, plan.model, first_layer_of(plan.model, p, s, c), n, s == 0 && c == 0,
                            s == p.pp - 1 && c == p.vpp - 1, recompute);
  }
  double t0 = now_s();
  t->params_->allocate(*t->backend_, t->groups_.dp_cp->size(), t->groups_.edp->size(), opt.seed);
  t->backend_->synchronize();
  print_phase(lead, "initialising weights", t0, t->t_start_);
  t->engine_ = std::make_unique<PipelineEngine>(p, s, int(t->dims_.microbatches));
  OptimConfig cfg;
  cfg.schedule.lr = opt.lr;
  cfg.schedule.min_lr = opt.lr * opt.min_lr_ratio;
  cfg.schedule.warmup_steps = opt.warmup_steps >= 0 ? opt.warmup_steps : opt.steps / 10;
  cfg.schedule.decay_steps = opt.lr_decay_steps > 0 ? opt.lr_decay_steps : opt.steps;
  cfg.weight_decay = opt.weight_decay;
  cfg.clip_grad = opt.clip_grad;
  Exec ex = t->exec();
  t->optim_ = std::make_unique<DistributedOptimizer>(ex, cfg);
  if (opt.data == "synthetic") {
    t->data_ = make_synthetic_data(opt.seed, plan.model.vocab_size);
  } else {
    auto d = make_corpus_data(opt.data, opt.seed, plan.model.vocab_size, plan.training.seq_length);
    if (!d) return d.error();
    t->data_ = std::move(d).value();
  }
  // MFU counts one core per rank on the CPU, one GPU per rank on CUDA
  t->cores_ = t->backend_->name() == "cpu" ? int(std::max(1u, std::thread::hardware_concurrency())) : size;
  double peak = opt.peak_gflops;
  if (peak <= 0) {
    t0 = now_s();
    if (t->groups_.rank == 0) peak = backend_peak_gflops(*t->backend_);
    t->groups_.world->all_reduce_max(&peak, 1);
    print_phase(lead, "measuring the GEMM peak (--peak-gflops skips it)", t0, t->t_start_);
  }
  t->peak_gflops_ = peak;
  if (opt.resume) {
    Status st = t->load_checkpoint();
    if (!st) return st.error();
  }
  return t;
}

double Trainer::run_pipeline(double* aux, std::vector<float>* logits) {
  Exec ex = exec();
  ex.aux_loss = aux;
  ex.capture_logits = logits;
  double loss_sum = 0;
  const float dloss = float(1.0 / double(dims_.gbs * dims_.S));
  const int64_t step = step_;
  engine_->run(
      ex, chunks_, [&](int mb) { return make_micro(*data_, dims_, step, mb); }, dloss, &loss_sum);
  return dims_.tp_rank == 0 ? loss_sum : 0.0;
}

double Trainer::forward_backward(std::vector<float>* logits) {
  double aux = 0;
  double v[2] = {run_pipeline(&aux, logits), 0};
  v[1] = aux;
  groups_.world->all_reduce_sum(v, 2);
  return v[0] / double(dims_.gbs * dims_.S);
}

StepMetrics Trainer::step() {
  StepMetrics m;
  m.step = step_ + 1;
  maybe_kill(groups_.rank, m.step);
  groups_.world->barrier();
  timers_.reset_step();
  const double t0 = now_s();
  double aux = 0;
  double v[2] = {run_pipeline(&aux), aux};
  if (poison_loss(m.step)) v[0] = std::nan("");
  groups_.world->all_reduce_sum(v, 2);
  m.loss = v[0] / double(dims_.gbs * dims_.S);
  m.aux_loss = v[1];
  Exec ex = exec();
  if (!std::isfinite(m.loss)) {
    m.finite = false;
    for (ParamClass c : {ParamClass::dense, ParamClass::expert}) backend_->zero(params_->grads(c).data(), params_->size(c));
  } else {
    OptimStepResult r = optim_->step(ex, step_ + 1);
    m.grad_norm = r.grad_norm;
    m.lr = r.lr;
    m.finite = r.finite;
  }
  backend_->synchronize();  // the GPU backend's ops are asynchronous
  double dt = now_s() - t0;
  if (first_step_) {
    first_step_ = false;
    print_phase(groups_.rank == 0, "first step", t0, t_start_);
  }
  if (tagger_) timers_.override_seconds(tagger_->take_step_seconds());
  // peak memory: the process on the CPU; every device allocation on a GPU
  const int64_t device_peak = backend_->peak_device_bytes();
  const double peak_bytes = device_peak < 0 ? process_peak_rss_bytes() : double(device_peak);
  double mem[3] = {dt, peak_bytes, double(backend_->memory().peak())};
  groups_.world->all_reduce_max(mem, 3);
  m.step_time_s = mem[0];
  m.peak_memory_gib = mem[1] / kGiB;
  m.tensor_peak_gib = mem[2] / kGiB;
  const double flops = model_flops_per_step(plan_.model, dims_.gbs, dims_.S, AttentionFlops::causal);
  const int ranks = world_size();
  m.tokens_per_s = double(dims_.gbs * dims_.S) / m.step_time_s;
  m.tflops_per_rank = flops / m.step_time_s / ranks / 1e12;
  m.mfu = flops / m.step_time_s / (double(std::min(ranks, cores_)) * peak_gflops_ * 1e9);
  // per-op times: max over ranks
  std::ostringstream os;
  for (const auto& [name, st] : timers_.step()) os << name << '\t' << st.seconds << '\t' << st.calls << '\n';
  std::vector<std::string> all = groups_.world->gather_bytes(os.str(), 0);
  std::map<std::string, OpStat> agg;
  for (const std::string& s : all) {
    std::istringstream is(s);
    std::string name;
    double sec;
    int64_t calls;
    while (is >> name >> sec >> calls) {
      OpStat& o = agg[name];
      o.op = name;
      o.seconds = std::max(o.seconds, sec);
      o.calls = std::max(o.calls, calls);
    }
  }
  for (auto& [n, o] : agg) m.ops.push_back(o);
  if (m.finite) ++step_;
  return m;
}

std::map<std::string, std::vector<float>> Trainer::gather_full(bool grads) {
  std::vector<std::string> shards = groups_.world->gather_bytes(params_->serialize_shards(grads), 0);
  if (groups_.rank != 0) return {};
  return ParamStore::assemble(shards);
}

std::vector<std::string> Trainer::load_full(const std::map<std::string, std::vector<float>>& full) {
  return params_->load_full(full);
}

Status Trainer::save_checkpoint() {
  namespace fs = std::filesystem;
  const std::string& root = opt_.checkpoint_dir;
  const std::string tmp = checkpoint_step_dir(root, step_, true);
  int ok = 1;
  std::string err;
  if (groups_.rank == 0 && checkpoint_writes_stopped()) {
    ok = 0;
    err = "checkpoint: the run is being aborted";
  } else if (groups_.rank == 0) {
    std::error_code ec;
    fs::create_directories(root, ec);
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) {
      ok = 0;
      err = "checkpoint: cannot create " + tmp + ": " + ec.message();
    }
  }
  double okd = ok;
  groups_.world->all_reduce_sum(&okd, 1);  // everyone learns whether the directory exists
  if (okd < 1) return Error(err.empty() ? "checkpoint: rank 0 could not create " + tmp : err);
  nlohmann::json h = {{"step", step_},
                      {"rank", groups_.rank},
                      {"world_size", world_size()},
                      {"layout", layout_key(plan_)},
                      {"seed", opt_.seed},
                      {"data", opt_.data},
                      {"dense", params_->size(ParamClass::dense)},
                      {"expert", params_->size(ParamClass::expert)},
                      {"lr_decay_steps", optim_->config().schedule.decay_steps},
                      {"warmup_steps", optim_->config().schedule.warmup_steps}};
  std::vector<std::vector<float>> host;
  std::vector<ArrayRef> arrays = checkpoint_arrays(host, true);
  Status st = write_rank_file(checkpoint_rank_file(tmp, groups_.rank), h, arrays);
  double good = st.ok() ? 1 : 0;
  groups_.world->all_reduce_sum(&good, 1);
  if (good < world_size()) return st.ok() ? Status(Error("checkpoint: another rank failed to write its shard")) : st;
  Status commit;
  if (groups_.rank == 0) {
    nlohmann::json meta = {
        {"step", step_},     {"world_size", world_size()}, {"layout", layout_key(plan_)}, {"plan", plan_to_json(plan_)},
        {"seed", opt_.seed}, {"data", opt_.data}};
    commit = commit_checkpoint(root, step_, meta);
  }
  double cok = commit.ok() ? 1 : 0;
  groups_.world->all_reduce_max(&cok, 1);
  groups_.world->barrier();
  if (!commit.ok()) return commit;
  last_checkpoint_ = checkpoint_step_dir(root, step_, false);
  return {};
}

std::vector<ArrayRef> Trainer::checkpoint_arrays(std::vector<std::vector<float>>& host, bool download) {
  // parameters and AdamW moments per class, staged in host memory (the backend's may be a GPU's)
  std::vector<ArrayRef> arrays;
  host.reserve(6);  // the ArrayRefs point into these vectors
  for (ParamClass c : {ParamClass::dense, ParamClass::expert})
    for (Tensor* t : {&params_->params(c), &optim_->m(c), &optim_->v(c)}) {
      const int64_t n = t == &params_->params(c) ? params_->size(c) : t->numel();
      host.emplace_back(size_t(n));
      if (download) backend_->download(host.back().data(), t->data(), n);
      arrays.push_back({host.back().data(), n});
    }
  return arrays;
}

Status Trainer::load_checkpoint() {
  auto dir = latest_checkpoint(opt_.checkpoint_dir);
  if (!dir) return dir.error();
  std::vector<std::vector<float>> host;
  std::vector<ArrayRef> arrays = checkpoint_arrays(host, false);
  nlohmann::json h;
  auto check = [&](const nlohmann::json& hd) -> Status {
    if (hd.value("layout", "") != layout_key(plan_))
      return Error("--resume: checkpoint " + dir.value() +
                   " was written for a different model or layout; resume "
                   "with the plan it was trained with");
    if (hd.value("seed", uint64_t(0)) != opt_.seed)
      return Error("--resume: checkpoint " + dir.value() + " used --seed " + std::to_string(hd.value("seed", 0)) +
                   "; pass the same seed");
    if (hd.value("data", std::string()) != opt_.data)
      return Error("--resume: checkpoint " + dir.value() + " trained on --data " + hd.value("data", std::string()) +
                   "; pass the same data");
    return {};
  };
  Status st = read_rank_file(checkpoint_rank_file(dir.value(), groups_.rank), &h, arrays, check);
  double good = st.ok() ? 1 : 0;
  groups_.world->all_reduce_sum(&good, 1);
  if (good < world_size()) return st.ok() ? Status(Error("--resume: another rank could not load its shard")) : st;
  size_t k = 0;
  for (ParamClass c : {ParamClass::dense, ParamClass::expert})
    for (Tensor* t : {&params_->params(c), &optim_->m(c), &optim_->v(c)}) {
      backend_->upload(t->data(), host[k].data(), arrays[k].n);
      ++k;
    }
  step_ = h.value("step", 0);
  OptimConfig cfg = optim_->config();
  if (opt_.lr_decay_steps == 0) cfg.schedule.decay_steps = h.value("lr_decay_steps", cfg.schedule.decay_steps);
  if (opt_.warmup_steps < 0) cfg.schedule.warmup_steps = h.value("warmup_steps", cfg.schedule.warmup_steps);
  optim_->set_config(cfg);
  last_checkpoint_ = dir.value();
  return {};
}

}  // namespace mplan::exec
