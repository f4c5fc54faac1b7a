// Communication events of the timeline (see comm_events.h).
#include "simulator/comm_events.h"

#include <algorithm>

#include "core/ops.h"

namespace mplan {

namespace {

// A communication op of the vocabulary: its stream, its name in event labels, and the shares of its
// per-micro-batch tally (forward + backward, two collectives per call) that run in the forward and
// in the backward (tp_allgather: the backward re-gathers the input and reduce-scatters the gradient;
// the CP ring sends twice the bytes backwards).
struct CommOp {
  OpId op;
  const char* stream;
  const char* what;
  double fwd, bwd;
};
const CommOp kOps[] = {
    {OpId::tp_allgather, "tp", "all-gather", 0.5, 1.0},
    {OpId::tp_reduce_scatter, "tp", "reduce-scatter", 0.5, 0.5},
    {OpId::tp_allreduce, "tp", "all-reduce", 0.5, 0.5},
    {OpId::cp_kv_exchange, "cp", "K/V exchange", 0.5, 1.0},
    {OpId::cp_a2a, "cp", "all-to-all", 0.5, 0.5},
    {OpId::dispatch_a2a, "ep", "dispatch", 0.5, 0.5},
    {OpId::combine_a2a, "ep", "combine", 0.5, 0.5},
    {OpId::etp_allgather, "ep", "ETP all-gather", 0.5, 0.5},
    {OpId::etp_reduce_scatter, "ep", "ETP reduce-scatter", 0.5, 0.5},
};
const char* kStreams[] = {"tp", "cp", "ep", "dp"};
const char* kPrefix[] = {"TP ", "CP ", "EP ", "ZeRO-3 "};

double exposed_of(const PhaseCost& c, int k) { return k == 0 ? c.tp : k == 1 ? c.cp : k == 2 ? c.ep : c.dp; }

}  // namespace

CommEvents::CommEvents(const Workload& w, const ParallelConfig& p) {
  table_.resize(w.stages.size());
  for (size_t s = 0; s < w.stages.size(); ++s) {
    table_[s].resize(w.stages[s].chunks.size());
    for (size_t c = 0; c < w.stages[s].chunks.size(); ++c) {
      const ChunkCost& ch = w.stages[s].chunks[c];
      // full recomputation runs the forward's collectives again in the backward
      double redo =
          p.recompute == Recompute::full && ch.F.compute > 0 ? std::clamp(ch.B.recompute / ch.F.compute, 0.0, 1.0) : 0.0;
      double total[3][4] = {};  // [F, B, W][stream]
      std::vector<std::string> whats[4];
      for (const CommOp& o : kOps) {  // in the vocabulary's order: names read "dispatch + combine"
        for (const OpTally& t : ch.ops) {
          if (t.name != op_name(o.op)) continue;  // the tally is kept by name
          int k = int(std::find(std::begin(kStreams), std::end(kStreams), std::string(o.stream)) - std::begin(kStreams));
          // the all-gather variant of the CP exchange gathers once per pass, the ring twice the bytes back
          double bwd = o.op == OpId::cp_kv_exchange && p.cp_comm_type != CpCommType::p2p ? 0.5 : o.bwd;
          total[0][k] += t.time_s * o.fwd;
          total[1][k] += t.time_s * (bwd + redo * o.fwd);
          if (std::find(whats[k].begin(), whats[k].end(), o.what) == whats[k].end()) whats[k].push_back(o.what);
        }
      }
      total[0][3] = ch.fsdp_gather_s;
      total[1][3] = ch.fsdp_gather_s + ch.fsdp_scatter_s;
      const PhaseCost* phase[3] = {&ch.F, &ch.B, &ch.W};
      for (int ph = 0; ph < 3; ++ph)
        for (int k = 0; k < 4; ++k) {
          double exposed = exposed_of(*phase[ph], k);
          if (total[ph][k] <= 0 && exposed <= 0) continue;
          std::string what = kPrefix[k];
          if (k == 3) {
            what += ph == 1 ? "param all-gather + grad reduce-scatter" : "param all-gather";
          } else {
            for (size_t i = 0; i < whats[k].size(); ++i) what += (i ? " + " : "") + whats[k][i];
            if (whats[k].empty()) what += "communication";
          }
          table_[s][c][size_t(ph)].push_back({kStreams[k], what, total[ph][k], exposed});
        }
    }
  }
}

const std::vector<CommEvents::Stream>& CommEvents::streams(int stage, int chunk, Phase phase) const {
  size_t ph = phase == Phase::F ? 0 : phase == Phase::B ? 1 : 2;
  return table_[size_t(stage)][size_t(chunk)][ph];
}

void CommEvents::emit(int stage, const Action& a, double start_s, double end_s, std::vector<TraceEvent>& out) const {
  const double span = std::max(0.0, end_s - start_s);
  const std::string label =
      " · " + std::string(1, char(a.phase)) + " mb" + std::to_string(a.microbatch) + " c" + std::to_string(a.chunk);
  for (const Stream& st : streams(stage, a.chunk, a.phase)) {
    double exposed = std::min(st.exposed_s, span);
    double dur = std::clamp(st.total_s, exposed, span);
    if (dur <= 0) continue;
    TraceEvent e{stage, st.stream, st.what + label, start_s, dur, 'C', a.microbatch, a.chunk};
    e.exposed_s = exposed;
    out.push_back(std::move(e));
  }
}

}  // namespace mplan
