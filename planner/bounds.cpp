// Pipeline shapes, chunk costs from probed layer costs, the step-time lower bound and the memory
// accounting of candidate layouts (see bounds.h).
#include "planner/bounds.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <tuple>

#include "core/schedule.h"
#include "core/units.h"
#include "simulator/memory.h"
#include "simulator/memory_states.h"

namespace mplan::planner {

PipeShape make_pipe_shape(const ModelSpec& m, int pp, int vpp, PipeLayout pipe, int first, int last) {
  PipeShape ps;
  ps.pp = pp;
  ps.vpp = vpp;
  ps.pipe = pipe;
  ParallelConfig p;
  p.pp = pp;
  p.vpp = vpp;
  p.world_size = pp;
  if (pipe == PipeLayout::balanced) p.pipeline_layout = balanced_pipeline_layout(m, pp, vpp);
  if (pipe == PipeLayout::first_last) {
    p.num_layers_in_first_pipeline_stage = first;
    p.num_layers_in_last_pipeline_stage = last;
  }
  auto n = layers_per_stage_chunk(m, p);
  ps.layers.assign(size_t(pp) * vpp, 0);
  ps.first.assign(size_t(pp) * vpp, 0);
  int idx = 0;
  for (int c = 0; c < vpp; ++c)  // model order is chunk-major
    for (int s = 0; s < pp; ++s) {
      ps.layers[size_t(s) * vpp + c] = n[s][c];
      ps.first[size_t(s) * vpp + c] = idx;
      idx += n[s][c];
    }
  ps.min_chunk = *std::min_element(ps.layers.begin(), ps.layers.end());
  ps.params = params_per_stage(m, p);
  ps.stage_counts.assign(size_t(pp), {0, 0, 0, 0});
  for (int s = 0; s < pp; ++s)
    for (int c = 0; c < vpp; ++c) {
      const size_t i = size_t(s) * vpp + c;
      for (int k = ps.first[i]; k < ps.first[i] + ps.layers[i]; ++k) {
        const size_t moe = m.is_moe_layer(k) ? 1 : 0;
        ps.stage_counts[size_t(s)][moe] += 1;
        if (c == 0) ps.stage_counts[size_t(s)][2 + moe] += 1;
      }
    }
  // the chunks chunk_totals copies: an inner chunk equal to an earlier computed inner chunk, layer for
  // layer dense or MoE (so that the MoE layers among its first r, as full recompute counts them, are too)
  const size_t n_chunks = ps.layers.size();
  ps.same_as.assign(n_chunks, -1);
  std::vector<size_t> computed;  // inner chunks that compute their totals
  for (size_t i = 0; i < n_chunks; ++i) {
    if (i == 0 || i + 1 == n_chunks) continue;
    for (size_t j : computed) {
      bool same = ps.layers[j] == ps.layers[i];
      for (int k = 0; k < ps.layers[i] && same; ++k) same = m.is_moe_layer(ps.first[j] + k) == m.is_moe_layer(ps.first[i] + k);
      if (same) {
        ps.same_as[i] = int(j);
        break;
      }
    }
    if (ps.same_as[i] < 0) computed.push_back(i);
  }
  for (size_t i = 0; i < n_chunks; ++i)
    if (ps.same_as[i] < 0)
      ps.computed.push_back(int(i));
    else
      ps.copies.emplace_back(int(i), ps.same_as[i]);
  return ps;
}

namespace {

void add(ChunkTotals& t, const PieceCost& p, double count) {
  if (count <= 0) return;
  t.F += count * p.F;
  t.B += count * p.B;
  t.W += count * p.W;
  t.act += count * p.act;
  t.act_w += count * p.act_w;
  t.transient = std::max(t.transient, p.transient);
  t.fwd_transient = std::max(t.fwd_transient, p.fwd_transient);
}

}  // namespace

Bounds::Bounds(const Job& job, const CostParams& prm, SimCache* shared)
    : job_(job),
      prm_(prm),
      own_cache_(shared ? nullptr : std::make_unique<SimCache>()),
      cache_(shared ? shared : own_cache_.get()) {
  const ModelSpec& m = job.model();
  moe_prefix_.assign(size_t(m.num_layers) + 1, 0);
  for (int i = 0; i < m.num_layers; ++i) moe_prefix_[i + 1] = moe_prefix_[i] + (m.is_moe_layer(i) ? 1 : 0);
  mtp_moe_ = m.mtp_num_layers > 0 && m.is_moe_layer(m.num_layers - 1);
  counts_ = count_params(m);
}

void Bounds::chunk_totals(const Layout& l, const PipeShape& ps, const ShapeCosts& sc, std::vector<ChunkTotals>& out) const {
  const ModelSpec& m = job_.model();
  const size_t n_chunks = size_t(ps.pp) * ps.vpp;
  out.resize(n_chunks);
  const bool sel = l.recompute == Recompute::selective;
  // a chunk with the same layers as an earlier inner chunk (PipeShape::same_as) has the same totals,
  // summed by the same expressions: copied once those are made
  const bool plan = ps.same_as.size() == n_chunks && ps.computed.size() + ps.copies.size() == n_chunks;
  for (size_t k = 0; k < (plan ? ps.computed.size() : n_chunks); ++k) {
    const size_t i = plan ? size_t(ps.computed[k]) : k;
    const int s = int(i) / ps.vpp, c = int(i) % ps.vpp;
    ChunkTotals& t = out[i];
    t = ChunkTotals{};
    int n = ps.layers[i], first = ps.first[i];
    int moe = moe_prefix_[first + n] - moe_prefix_[first];
    int r = 0;
    if (l.recompute == Recompute::full) r = l.recompute_layers > 0 ? std::min(l.recompute_layers, n) : n;
    int moe_r = moe_prefix_[first + r] - moe_prefix_[first];
    int dense_r = r - moe_r;
    if (sel) {
      add(t, sc.dense.selective, n - moe);
      add(t, sc.moe.selective, moe);
    } else {
      add(t, sc.dense.full, dense_r);
      add(t, sc.moe.full, moe_r);
      add(t, sc.dense.none, (n - moe) - dense_r);
      add(t, sc.moe.none, moe - moe_r);
    }
    if (s == 0 && c == 0) add(t, sel ? sc.emb_sel : sc.emb, 1);
    if (s == ps.pp - 1 && c == ps.vpp - 1) {
      const TypeCosts& mt = mtp_moe_ ? sc.moe : sc.dense;
      add(t, sel ? mt.selective : mt.none, m.mtp_num_layers);
      add(t, sel ? sc.head_sel : sc.head, 1 + m.mtp_num_layers);
    }
  }
  if (plan)
    for (const auto& [dst, src] : ps.copies) out[size_t(dst)] = out[size_t(src)];
}

void Bounds::compute_ends(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct, double p2p_s,
                          std::vector<double>& end) const {
  const double m = double(microbatches(l));
  const bool zb = l.schedule == Schedule::zero_bubble;
  const int pp = ps.pp, vpp = ps.vpp;
  // per stage: arrival of micro-batch 0 (pref_f), all work (busy), forwards+backwards only (fb)
  double pref_f = 0;
  thread_local std::vector<double> start, busy, fb;
  start.resize(size_t(pp)), busy.resize(size_t(pp)), fb.resize(size_t(pp));
  end.resize(size_t(pp));
  for (int s = 0; s < pp; ++s) {
    double b = 0, f = 0;
    for (int c = 0; c < vpp; ++c) {
      const ChunkTotals& t = ct[size_t(s) * vpp + c];
      b += t.F + t.B + t.W;
      f += t.F + t.B;
    }
    start[s] = pref_f;
    busy[s] = m * b;
    fb[s] = m * f;
    pref_f += ct[size_t(s) * vpp].F + p2p_s;
  }
  // walking from the last stage to the first: `last_b` bounds the end of the stage's final backward
  // (micro-batch m-1, chunk 0), which needs the same backward of the next stage first
  double last_b_next = 0;
  for (int s = pp - 1; s >= 0; --s) {
    const ChunkTotals& c0 = ct[size_t(s) * vpp];
    double own = start[s] + (zb ? fb[s] : busy[s]);
    double last_b = s == pp - 1 ? own : std::max(own, last_b_next + c0.B + p2p_s);
    end[s] = std::max(start[s] + busy[s], last_b + (zb ? c0.W : 0.0));
    last_b_next = last_b;
  }
}

double Bounds::step_time_lb(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                            const std::vector<double>& tail, double p2p_s) const {
  thread_local std::vector<double> end;
  compute_ends(l, ps, ct, p2p_s, end);
  double best = 0;
  for (int s = ps.pp - 1; s >= 0; --s) best = std::max(best, end[s] + (tail.empty() ? 0.0 : tail[s]));
  return tail.empty() ? best + std::max(0.0, prm_.optimizer_overhead_s) : best;
}

namespace {

bool same_kind(const Action& x, const Action& y) { return x.phase == y.phase && x.chunk == y.chunk; }

// The activation walk of one stage's action list, exactly as the event simulation accounts it; stops
// early (returning the peak so far) once the peak passes `budget` and `over(peak)` says so.
// Inside `wp`, at the start of each period the activations held are compared with those of the
// previous period's start: when they are the same double, every following period of the stretch
// repeats the last one value for value (the same actions from the same state), so the peak, the
// budget and the checks do not change over them, and the walk goes on after the last whole one.
template <class Over>
double walk_peak(const std::vector<Action>& actions, const ChunkTotals* ct, const WalkPeriod& wp, double budget, Over over,
                 bool& stopped) {
  double act = 0, pk = 0;
  int confirms = 0;
  stopped = false;
  const size_t n = actions.size(), period = size_t(wp.period);
  size_t next_mark = period > 0 ? size_t(wp.begin) : n;  // the next period start to compare at
  uint64_t at_mark = 0;
  bool marked = false;
  for (size_t i = 0; i < n; ++i) {
    if (i == next_mark) {
      if (marked && std::bit_cast<uint64_t>(act) == at_mark) {
        i += (size_t(wp.end) - i) / period * period;
        next_mark = n;
        if (i >= n) break;
      } else {
        at_mark = std::bit_cast<uint64_t>(act);
        marked = true;
        next_mark = i + period <= size_t(wp.end) ? i + period : n;
      }
    }
    const Action& a = actions[i];
    const ChunkTotals& ch = ct[a.chunk];
    if (a.phase == Phase::F) {
      act += ch.act;
      pk = std::max(pk, act + ch.fwd_transient);
    } else if (a.phase == Phase::B) {
      pk = std::max(pk, act + ch.transient);
      act -= ch.act - ch.act_w;
    } else {
      act -= ch.act_w;
    }
    pk = std::max(pk, act);
    if (pk > budget) {
      if (over(pk)) {
        stopped = true;
        return pk;
      }
      budget = ++confirms < 4 ? pk : std::numeric_limits<double>::infinity();  // not yet: look again further on
    }
  }
  return pk;
}

}  // namespace

void Bounds::peak_activations(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                              std::vector<double>& peak) const {
  const std::vector<double> none(size_t(ps.pp), std::numeric_limits<double>::infinity());
  peak_activations_until(
      l, ps, ct, none, [](int, double) { return false; }, peak);
}

int Bounds::peak_activations_until(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                                   const std::vector<double>& budget, const std::function<bool(int, double)>& over,
                                   std::vector<double>& peak) const {
  peak.assign(ps.pp, 0.0);
  const ScheduleInfo& si = schedule(l.schedule, ps.pp, ps.vpp, microbatches(l));
  const std::vector<WalkPeriod>& wp = walk_periods(si);
  for (int s = 0; s < ps.pp; ++s) {
    bool stopped = false;
    peak[s] = walk_peak(
        si.actions[s], ct.data() + size_t(s) * ps.vpp, wp[size_t(s)], budget[size_t(s)], [&](double pk) { return over(s, pk); },
        stopped);
    if (stopped) return s;
  }
  return -1;
}

double stage_peak_activations(const std::vector<Action>& actions, const ChunkTotals* ct, const WalkPeriod& wp) {
  bool stopped = false;
  return walk_peak(
      actions, ct, wp, std::numeric_limits<double>::infinity(), [](double) { return false; }, stopped);
}

WalkPeriod walk_period(const std::vector<Action>& a) {
  // the smallest period of the middle half of the list, then how far it reaches both ways; a list too
  // short or without a repeat there gets none (as does one that takes too long to look at)
  const int64_t n = int64_t(a.size()), lo = n / 4, hi = n - n / 4;
  int64_t p = 0, budget = 64 * n + 1024;  // comparisons
  for (int64_t q = 1; 2 * q <= hi - lo && p == 0 && budget > 0; ++q) {
    bool same = true;
    for (int64_t j = lo + q; j < hi && same; ++j, --budget) same = same_kind(a[size_t(j)], a[size_t(j - q)]);
    if (same) p = q;
  }
  if (p == 0) return {};
  int64_t end = hi, first = lo + p;  // every action in [first, end) repeats the one p earlier
  while (end < n && same_kind(a[size_t(end)], a[size_t(end - p)])) ++end;
  while (first - 1 - p >= 0 && same_kind(a[size_t(first - 1)], a[size_t(first - 1 - p)])) --first;
  return {first - p, end, p};
}

const std::vector<WalkPeriod>& Bounds::walk_periods(const ScheduleInfo& si) const {
  std::lock_guard<std::mutex> lock(period_mu_);
  std::unique_ptr<std::vector<WalkPeriod>>& wp = periods_[&si];
  if (!wp) {
    wp = std::make_unique<std::vector<WalkPeriod>>();
    for (const std::vector<Action>& list : si.actions) wp->push_back(walk_period(list));
  }
  return *wp;
}

void forwards_before_first_backward(Schedule sch, int pp, int vpp, int64_t m, int stage, std::vector<int64_t>& per_chunk,
                                    int& first_b_chunk) {
  per_chunk.assign(vpp, 0);
  first_b_chunk = 0;
  if (sch == Schedule::gpipe) {
    per_chunk[0] = m;
    return;
  }
  if (sch != Schedule::interleaved) {  // 1F1B and ZB-H1 (the 1F1B order with W passes after B's)
    int64_t warmup = std::min<int64_t>(pp - stage - 1, m);
    per_chunk[0] = warmup < m ? warmup + 1 : m;
    return;
  }
  int64_t total = m * vpp;
  int64_t warmup = std::min<int64_t>(total, int64_t(pp - stage - 1) * 2 + int64_t(vpp - 1) * pp);  // as core/schedule.cpp
  int64_t count = warmup < total ? warmup + 1 : total;
  // forward k runs chunk (k / pp) % vpp
  int64_t full_rounds = count / (int64_t(pp) * vpp), rest = count % (int64_t(pp) * vpp);
  for (int c = 0; c < vpp; ++c) per_chunk[c] = full_rounds * pp + std::clamp<int64_t>(rest - int64_t(c) * pp, 0, pp);
  first_b_chunk = vpp - 1;
}

void Bounds::activations_at_first_backward(const Layout& l, const PipeShape& ps, const std::vector<ChunkTotals>& ct,
                                           std::vector<double>& out) const {
  out.assign(ps.pp, 0.0);
  // the counts of the last schedule shape asked for on this thread (the candidates of a structure share it)
  struct Counts {
    std::tuple<Schedule, int, int, int64_t> key{Schedule::gpipe, 0, 0, 0};
    std::vector<int64_t> n;  // [stage * vpp + chunk]
    std::vector<int> fb;     // [stage]: the first backward's chunk
  };
  thread_local Counts memo;
  const auto key = std::make_tuple(l.schedule, ps.pp, ps.vpp, microbatches(l));
  if (memo.key != key) {
    memo.key = key;
    memo.n.resize(size_t(ps.pp) * ps.vpp);
    memo.fb.resize(size_t(ps.pp));
    std::vector<int64_t> n;
    for (int s = 0; s < ps.pp; ++s) {
      forwards_before_first_backward(l.schedule, ps.pp, ps.vpp, microbatches(l), s, n, memo.fb[size_t(s)]);
      std::copy(n.begin(), n.end(), memo.n.begin() + std::ptrdiff_t(s) * ps.vpp);
    }
  }
  for (int s = 0; s < ps.pp; ++s) {
    const int64_t* n = memo.n.data() + size_t(s) * ps.vpp;
    double act = 0;
    for (int c = 0; c < ps.vpp; ++c) act += double(n[c]) * ct[size_t(s) * ps.vpp + c].act;
    out[s] = act + ct[size_t(s) * ps.vpp + memo.fb[size_t(s)]].transient;
  }
}

Bounds::MemScratch Bounds::scratch() const {
  MemScratch s;
  s.plan = *job_.plan;
  return s;
}

namespace {
void set_layout(ParallelConfig& p, const Layout& l, int world) {
  p.world_size = world;
  p.tp = l.tp;
  p.pp = l.pp;
  p.vpp = l.vpp;
  p.cp = l.cp;
  p.ep = l.ep;
  p.etp = l.etp;
  p.zero = l.zero;
  p.micro_batch_size = l.mbs;
}
}  // namespace

double Bounds::stage_memory_gib(const Layout& l, const PipeShape& ps, int s, double act_bytes, MemScratch& sc) const {
  set_layout(sc.plan.parallel, l, job_.world);
  StageWork& st = sc.st;
  st.chunks.resize(ps.vpp);
  int layers = 0;
  for (int c = 0; c < ps.vpp; ++c) layers += st.chunks[c].layers = ps.layers[size_t(s) * ps.vpp + c];
  fill_stage_params(st, job_.model(), sc.plan.parallel, ps.params[s], s, layers, counts_);
  return stage_memory(sc.plan, st, act_bytes, prm_).total();
}

void Bounds::stage_memory_lines(const Layout& base, const PipeShape& ps, const std::vector<int>& zeros, double act_bytes,
                                MemScratch& sc, std::array<std::vector<double>, 4>& at_zero,
                                std::array<std::vector<double>, 4>* at_act) const {
  set_layout(sc.plan.parallel, base, job_.world);
  StageWork& st = sc.st;
  st.chunks.resize(ps.vpp);
  for (int z : zeros) {
    if (!at_act) at_zero[size_t(z)].assign(ps.pp, 0.0);
    if (at_act) (*at_act)[size_t(z)].assign(ps.pp, 0.0);
  }
  // with `at_act` only that line (at_zero holds the other)
  std::array<std::vector<double>, 4>& out = at_act ? *at_act : at_zero;
  const double act = at_act ? act_bytes : 0.0;
  StageMemoryInputs prev;
  for (int s = 0; s < ps.pp; ++s) {
    int layers = 0;
    for (int c = 0; c < ps.vpp; ++c) layers += st.chunks[c].layers = ps.layers[size_t(s) * ps.vpp + c];
    fill_stage_params(st, job_.model(), sc.plan.parallel, ps.params[s], s, layers, counts_);  // the same at every level
    const StageMemoryInputs in = stage_memory_inputs(st);
    if (s > 0 && in == prev) {  // the previous stage's doubles (simulator/memory.h)
      for (int z : zeros) out[size_t(z)][s] = out[size_t(z)][s - 1];
      continue;
    }
    prev = in;
    for (int z : zeros) {
      sc.plan.parallel.zero = z;
      out[size_t(z)][s] = stage_memory(sc.plan, st, act, prm_).total();
    }
  }
}

double Bounds::peak_memory_gib(const Layout& l, const PipeShape& ps, const std::vector<double>& act_peak, MemScratch& sc,
                               MemoryBreakdown* worst, int* worst_stage) const {
  set_layout(sc.plan.parallel, l, job_.world);
  StageWork& st = sc.st;
  st.chunks.resize(ps.vpp);
  double best = 0;
  for (int s = 0; s < ps.pp; ++s) {
    int layers = 0;
    for (int c = 0; c < ps.vpp; ++c) layers += st.chunks[c].layers = ps.layers[size_t(s) * ps.vpp + c];
    fill_stage_params(st, job_.model(), sc.plan.parallel, ps.params[s], s, layers, counts_);
    MemoryBreakdown mb = stage_memory(sc.plan, st, act_peak.empty() ? 0.0 : act_peak[s], prm_);
    double g = mb.total();
    if (s == 0 || g > best) {
      best = g;
      if (worst) *worst = mb;
      if (worst_stage) *worst_stage = s;
    }
  }
  return best;
}

}  // namespace mplan::planner
