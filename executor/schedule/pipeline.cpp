// Pipeline schedule execution with point-to-point activation/gradient transfer.
#include "executor/schedule/pipeline.h"

#include <stdexcept>

namespace mplan::exec {

PipelineEngine::PipelineEngine(const ParallelConfig& p, int stage, int microbatches)
    : pp_(p.pp), vpp_(p.vpp), stage_(stage), split_w_(schedule_splits_weight_grad(p.schedule)) {
  actions_ = schedule_actions(p.schedule, p.pp, p.vpp, microbatches, stage);
}

namespace {
int tag_of(int mb, int chunk, int vpp, int dir) { return ((mb * vpp + chunk) * 2 + dir) + 100; }
}  // namespace

void PipelineEngine::run(Exec& ex, std::vector<ModelChunk>& chunks, const std::function<Micro(int)>& make_micro, float dloss,
                         double* loss_sum) {
  const LayoutDims& d = ex.d;
  const int64_t act_n = d.Nsp * d.C;
  std::map<std::pair<int, int>, ChunkActs> acts;            // (mb, chunk)
  std::map<std::pair<int, int>, std::vector<WgradJob>> wq;  // deferred weight gradients
  std::map<int, Micro> micros;
  std::map<int, int> micro_uses;  // chunk passes still needing the micro-batch (F and B per chunk)
  std::vector<Tensor> in_flight;  // buffers of pending sends
  Comm* pp = ex.g.pp.get();
  auto micro = [&](int mb) -> const Micro& {
    auto it = micros.find(mb);
    if (it == micros.end()) {
      it = micros.emplace(mb, make_micro(mb)).first;
      micro_uses[mb] = 2 * vpp_;
    }
    return it->second;
  };
  auto release_micro = [&](int mb) {
    if (--micro_uses[mb] == 0) micros.erase(mb);
  };
  // point-to-point activations (dir 0) and their gradients (dir 1) of micro-batch mb, chunk c
  auto receive = [&](int from, int mb, int c, int dir) {
    Tensor x = ex.alloc({d.Nsp, d.C});
    OpTimers::Scope t(ex.timers, "pp_send_recv");
    pp->recv(x.data(), act_n, from, tag_of(mb, c, vpp_, dir));
    return x;
  };
  auto send = [&](const Tensor& x, int to, int mb, int c, int dir) {
    OpTimers::Scope t(ex.timers, "pp_send_recv");
    pp->isend(x.data(), act_n, to, tag_of(mb, c, vpp_, dir));
    in_flight.push_back(x);
  };
  for (const Action& act : actions_) {
    const int mb = act.microbatch, c = act.chunk;
    ModelChunk& chunk = chunks.at(size_t(c));
    const bool first = stage_ == 0 && c == 0, last = stage_ == pp_ - 1 && c == vpp_ - 1;
    const int prev_stage = stage_ > 0 ? stage_ - 1 : pp_ - 1;
    const int next_stage = stage_ < pp_ - 1 ? stage_ + 1 : 0;
    const int next_chunk = stage_ < pp_ - 1 ? c : c + 1;
    const int prev_chunk = stage_ > 0 ? c : c - 1;
    if (act.phase == Phase::F) {
      const Micro& m = micro(mb);
      Tensor input = first ? Tensor() : receive(prev_stage, mb, c, 0);
      ex.defer = nullptr;
      Tensor out = chunk.forward(ex, m, input, acts[{mb, c}], loss_sum);
      if (!last) send(out, next_stage, mb, next_chunk, 0);
      release_micro(mb);
    } else if (act.phase == Phase::B) {
      const Micro& m = micro(mb);
      Tensor dout = last ? Tensor() : receive(next_stage, mb, c, 1);
      ex.defer = split_w_ ? &wq[{mb, c}] : nullptr;
      Tensor din = chunk.backward(ex, m, dout, acts[{mb, c}], dloss);
      ex.defer = nullptr;
      acts.erase({mb, c});
      if (!first) send(din, prev_stage, mb, prev_chunk, 1);
      release_micro(mb);
    } else {  // W: the deferred weight gradients of this micro-batch
      auto it = wq.find({mb, c});
      if (it == wq.end()) throw std::logic_error("W before B in the schedule");
      run_wgrad_jobs(ex, it->second);
      wq.erase(it);
    }
  }
  if (!wq.empty()) throw std::logic_error("schedule left deferred weight gradients");
  if (pp_ > 1) {
    OpTimers::Scope t(ex.timers, "pp_send_recv");
    pp->wait_sends();
  }
}

}  // namespace mplan::exec
