// Training job driver: per-step output, checkpoints, divergence stop, run summary.
#include "executor/train/run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>

#include "core/stats.h"
#include "core/time_format.h"
#include "executor/checkpoint/checkpoint.h"

namespace mplan::exec {

namespace {

std::string fixed(double v, int d) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(d) << v;
  return os.str();
}

// A step as the run summary keeps it (the per-step JSON lines add the loss parts and the optimizer's).
nlohmann::json step_json(const StepMetrics& m) {
  return {{"step", m.step},
          {"loss", m.loss},
          {"step_time_s", m.step_time_s},
          {"tokens_per_s", m.tokens_per_s},
          {"tflops_per_rank", m.tflops_per_rank},
          {"mfu", m.mfu},
          {"peak_memory_gib", m.peak_memory_gib},
          {"tensor_peak_gib", m.tensor_peak_gib}};
}

void print_step(const RunOutput& o, const StepMetrics& m, bool header) {
  std::ostream& out = *o.out;
  if (o.format == "json") {
    nlohmann::json j = step_json(m);
    j["aux_loss"] = m.aux_loss;
    j["lr"] = m.lr;
    j["grad_norm"] = m.grad_norm;
    out << j.dump() << std::endl;
    return;
  }
  if (header)
    out << std::setw(6) << "step" << std::setw(11) << "loss" << std::setw(11) << "time s" << std::setw(11) << "tokens/s"
        << std::setw(10) << "TFLOP/s" << std::setw(8) << "MFU" << std::setw(11) << "peak GiB" << std::setw(11) << "lr"
        << std::setw(10) << "|grad|"
        << "\n";
  out << std::setw(6) << m.step << std::setw(11) << fixed(m.loss, 5) << std::setw(11) << fixed(m.step_time_s, 4) << std::setw(11)
      << fixed(m.tokens_per_s, 1) << std::setw(10) << fixed(m.tflops_per_rank, 4) << std::setw(7) << fixed(100 * m.mfu, 1) << "%"
      << std::setw(11) << fixed(m.peak_memory_gib, 3) << std::setw(11) << std::scientific << std::setprecision(2) << m.lr
      << std::defaultfloat << std::setw(10) << fixed(m.grad_norm, 4) << std::endl;
}

}  // namespace

std::vector<OpStat> median_ops(const std::vector<StepMetrics>& steps) {
  std::map<std::string, std::vector<double>> secs;
  std::map<std::string, int64_t> calls;
  size_t first = steps.size() > 1 ? 1 : 0;
  for (size_t i = first; i < steps.size(); ++i)
    for (const OpStat& o : steps[i].ops) {
      secs[o.op].push_back(o.seconds);
      calls[o.op] = std::max(calls[o.op], o.calls);
    }
  std::vector<OpStat> out;
  out.reserve(secs.size());
  for (auto& [op, v] : secs) out.push_back({op, stats::median(std::move(v)), calls[op]});
  return out;
}

nlohmann::json summary_to_json(const RunSummary& s) {
  nlohmann::json steps = nlohmann::json::array(), ops = nlohmann::json::array();
  for (const StepMetrics& m : s.steps) steps.push_back(step_json(m));
  for (const OpStat& o : s.ops) ops.push_back({{"name", o.op}, {"time_s", o.seconds}, {"calls", o.calls}});
  return {{"plan", plan_to_json(s.plan)},
          {"backend", s.backend},
          {"data", s.data},
          {"world_size", s.world_size},
          {"started_at", s.started_at},
          {"gemm_peak_gflops_per_core", s.peak_gflops},
          {"steps", steps},
          {"ops", ops},
          {"status", s.status},
          {"end_reason", s.end_reason}};
}

int train_job(const Plan& plan, const TrainOptions& opt, const RunOutput& out, MPI_Comm base) {
  int rank = 0;
  MPI_Comm_rank(base, &rank);
  const bool lead = rank == 0;
  auto created = Trainer::create(plan, opt, base);
  if (!created) {
    if (lead) *out.info << "mplan: " << created.error().message() << "\n";
    return 2;
  }
  Trainer& t = *created.value();
  RunSummary sum;
  sum.plan = plan;
  sum.options = opt;
  sum.started_at = utc_now_iso();
  sum.backend = t.backend().describe();
  sum.data = t.data_description();
  sum.peak_gflops = t.peak_gflops();
  sum.world_size = t.world_size();
  // steps done so far, shared with the abort recorder (which runs on the watcher thread)
  std::mutex journal;
  bool ended = false;  // the run was handed to the sink already (under `journal`)
  auto finish = [&](RunSummary& s, const std::string& status, const std::string& reason) {
    ended = true;
    s.status = status;
    s.end_reason = reason;
    s.ops = median_ops(s.steps);
    if (!lead || !out.sink) return std::string();
    return out.sink(s);
  };
  struct ClearRecorder {
    AbortGuard* g;
    ~ClearRecorder() {
      if (g) g->set_recorder(nullptr);
    }
  } clear_recorder{out.abort};
  if (out.abort)
    out.abort->set_recorder([&](const std::string& why) {
      RunSummary copy;
      std::lock_guard<std::mutex> lock(journal);
      if (ended) return;  // the run ended (and was recorded) just before the signal
      copy = sum;
      stop_checkpoint_writes();  // the training thread runs on until the process ends: no new save
      if (!opt.checkpoint_dir.empty() && lead) remove_partial_checkpoints(opt.checkpoint_dir);
      std::string err = finish(copy, "aborted", why);
      // a save that had started before the stop may have created its directory since
      if (!opt.checkpoint_dir.empty() && lead) remove_partial_checkpoints(opt.checkpoint_dir);
      if (lead) {
        *out.info << "mplan: training aborted (" << why << ") after " << copy.steps.size() << " step(s)"
                  << (out.sink ? err.empty() ? "; recorded with status 'aborted'" : "; recording failed: " + err : "")
                  << std::endl;
      }
    });
  if (lead && !opt.checkpoint_dir.empty()) {
    int stale = remove_partial_checkpoints(opt.checkpoint_dir);  // left by a run that was killed mid-save
    if (stale > 0)
      *out.info << "  removed " << stale << " partial checkpoint director" << (stale == 1 ? "y" : "ies")
                << " (step_*.tmp) left by an interrupted run\n";
  }
  const ParallelConfig& p = plan.parallel;
  if (lead) {
    *out.info << "mplan train: " << plan.model.name << " on " << p.world_size << " rank(s): tp=" << p.tp << (p.sp ? "+sp" : "")
              << " pp=" << p.pp << " vpp=" << p.vpp << " dp=" << p.dp() << " cp=" << p.cp << " ep=" << p.ep << " etp=" << p.etp
              << " zero=" << p.zero << ", schedule " << to_string(p.schedule) << ", mbs " << p.micro_batch_size << ", gbs "
              << plan.training.global_batch_size << ", seq " << plan.training.seq_length << "\n"
              << "  backend " << sum.backend << "; measured GEMM peak " << fixed(sum.peak_gflops, 1) << " GFLOP/s per "
              << (t.backend().name() == "cpu" ? "core" : "GPU") << " (MFU denominator)\n"
              << "  data " << sum.data << "; seed " << opt.seed << "\n";
    if (plan.training.precision != Precision::fp32)
      *out.info << "  note: the plan's precision is " << to_string(plan.training.precision)
                << (t.backend().name() == "cpu" ? "; the CPU backend computes in fp32\n"
                                                : "; the CUDA backend runs bf16 GEMMs (fp32 accumulation, fp32 master "
                                                  "weights) and every other op in fp32\n");
    if (p.zero >= 2)
      *out.info << "  note: zero=" << p.zero << " runs with the numerics of zero=1 (gradients and parameters are not "
                << "additionally sharded in memory by the CPU executor)\n";
    if (p.cp > 1 && p.cp_comm_type != CpCommType::p2p)
      *out.info << "  note: cp_comm_type=" << to_string(p.cp_comm_type)
                << " runs as the load-balanced p2p ring on the CPU executor\n";
    if (p.recompute == Recompute::selective)
      *out.info << "  note: recompute=selective keeps what flash attention keeps (q, k, v, out, softmax statistics); "
                << "nothing more is recomputed\n";
    if (opt.resume) *out.info << "  resumed from " << t.last_checkpoint() << " at step " << t.step_index() << "\n";
    out.info->flush();
  }
  if (t.step_index() >= opt.steps) {
    if (lead)
      *out.info << "mplan: the checkpoint is at step " << t.step_index() << ", not before --steps " << opt.steps
                << "; nothing to train (raise --steps to continue)\n";
    return 0;
  }
  bool header = true;
  while (t.step_index() < opt.steps) {
    StepMetrics m = t.step();
    if (!m.finite) {
      std::string reason =
          "step " + std::to_string(m.step) + ": " + (std::isfinite(m.loss) ? "gradient norm" : "loss") + " is not finite";
      {
        std::lock_guard<std::mutex> lock(journal);
        finish(sum, "diverged", reason);
      }
      if (lead) {
        *out.info << "mplan: step " << m.step << ": " << (std::isfinite(m.loss) ? "gradient norm" : "loss") << " is "
                  << (std::isfinite(m.loss) ? m.grad_norm : m.loss) << "; training stopped without applying it. ";
        if (!t.last_checkpoint().empty())
          *out.info << "The last good checkpoint is " << t.last_checkpoint() << " (resume with --resume).\n";
        else
          *out.info << "No checkpoint was written (use --checkpoint-dir to keep one).\n";
        out.info->flush();
      }
      return kExitDiverged;
    }
    if (lead) print_step(out, m, header);
    header = false;
    {
      std::lock_guard<std::mutex> lock(journal);
      sum.steps.push_back(m);
    }
    const bool end = t.step_index() == opt.steps;
    if (!opt.checkpoint_dir.empty() && (end || (opt.checkpoint_every > 0 && t.step_index() % opt.checkpoint_every == 0))) {
      Status st = t.save_checkpoint();
      if (!st.ok()) {
        {
          std::lock_guard<std::mutex> lock(journal);
          finish(sum, "failed", st.error().message());
        }
        if (lead) *out.info << "mplan: " << st.error().message() << "\n";
        return 1;
      }
    }
  }
  std::string err;
  {
    std::lock_guard<std::mutex> lock(journal);
    err = finish(sum, "completed", "");
  }
  if (!err.empty()) {
    *out.info << "mplan: " << err << "\n";
    return 1;
  }
  return 0;
}

}  // namespace mplan::exec
