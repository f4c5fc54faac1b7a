// search(): best-first branch and bound over the search space.
//  1. Enumerate the structures (space.h); count their variants and ZeRO levels; drop ZeRO levels
//     whose weights, gradients and optimizer states alone exceed the GPU (frame.h).
//  2. Give every structure a cheap lower bound (floor.h, structure_time_floor); its probe-free bound
//     (structure_time_lb) is computed when the search reaches it (structure_queue.h: the structures
//     still come out in the order of their probe-free bounds).
//  3. Take the smallest bound of the structures and the candidate heap. A structure is expanded (with
//     the next ones, in parallel): its candidates get exact per-layer costs from probes
//     (layer_costs.h) and a tight bound (bounds.h + frame.h) and go on the heap.
//     A candidate joins the next batch, which is evaluated on worker threads: exact activation
//     memory first (no simulation when it cannot fit), then simulate().
//  4. Stop when the smallest bound left is worse than the K-th best simulated result.
// Bounds are sound and ties are broken by the layout's total order, so the result is the exact top K
// of simulating everything; batches have a fixed size, so neither the result nor the counts depend
// on the number of threads.
// Cancellation is looked at between the phases of step 1 and inside its parallel loops, and before
// every batch. Progress: step 1 reports up to kPrepareShare; then the share of structures done among
// those still able to beat the current top K (the threshold falls as results come in, so the
// estimate rises steadily instead of jumping to the end when the rest is pruned).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <set>
#include <thread>

#include "planner/bounds.h"
#include "planner/floor.h"
#include "planner/frame.h"
#include "planner/layer_costs.h"
#include "planner/planner.h"
#include "planner/ranking.h"
#include "planner/search_shared.h"
#include "planner/space.h"
#include "planner/structure_queue.h"
#include "planner/worker_pool.h"

namespace mplan {

using namespace planner;

namespace {

constexpr size_t kBatch = 32;        // candidates per evaluation round (fixed: results do not depend on threads)
constexpr size_t kExpandGroup = 16;  // structures expanded together
constexpr double kSlack = 1e-9;      // relative slack of bounds against rounding
// Relative margin over GroupedTop::keep_limit() (the threshold times the interval ratio) beyond which a
// candidate is dropped when made: above the member limits' kSlack and the ratio's rounding.
constexpr double kDropSlack = 1e-6;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPrepareShare = 0.1;  // progress reported by the enumeration (step 1)
// Relative margin under structure_time_floor (the structures' cheap bounds): above the rounding of its
// other order of summation, so that a structure's bound is never below its cheap one.
constexpr double kCheapSlack = 1e-6;

struct StructInfo {
  int frame = 0;
  int mbs = 1;
  int64_t variants = 0;  // candidates = variants x fitting ZeRO levels
  int zeros_fit = 0;
  double bound = 0;  // the structure's bound once resolved (StructureQueue)
  double cheap = 0;  // a lower bound of it (structure_time_floor)
};

struct Node {
  Layout l;
  int frame = 0;
  double bound = 0;
  int64_t structure = 0;
};

// The candidates made so far, in blocks that never move: most of a large search's candidates are
// made and never popped (DeepSeek-V3 on 2,048 GPUs: 275 k made, 3 k evaluated), and one growing
// vector copied them at every doubling and touched three times their memory.
class NodeStore {
 public:
  int64_t push(const Node& n) {
    if (size_ % kBlock == 0) blocks_.push_back(std::make_unique_for_overwrite<Node[]>(kBlock));
    blocks_.back()[size_ % kBlock] = n;
    return int64_t(size_++);
  }
  Node& operator[](size_t i) { return blocks_[i / kBlock][i % kBlock]; }
  const Node& operator[](size_t i) const { return blocks_[i / kBlock][i % kBlock]; }

 private:
  static constexpr size_t kBlock = 4096;
  std::vector<std::unique_ptr<Node[]>> blocks_;
  size_t size_ = 0;
};

struct Evaluated {
  Candidate cand;
  bool fits = false, simulated = false, pruned_memory = false, pruned_bound = false;
  double rebound = -1;  // > 0: not simulated, its bound with the selective probe's costs exceeds the limit or `defer`
  int64_t violations = 0;
  double mem_gib = 0;
  std::string invalid;  // validate_layout's first complaint (the planner's rules should make this impossible)
};

class Searcher {
 public:
  Searcher(const Plan& job, const CostParams& prm, const SearchOptions& opt, SearchShared& shared)
      : job_(job),
        prm_(prm),
        opt_(opt),
        J_(job_),
        lim_{opt.fix, opt.max},
        bounds_(J_, prm_, &shared.sim()),
        frames_b_(J_, prm_, bounds_),
        floors_(shared.floors()),
        costs_(shared.costs()),
        top_(opt.objective, std::max(1, opt.top_k), opt.distinct),
        threads_(opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(threads_) {
    mem_obj_ = opt.objective == Objective::memory_headroom;
    cap_ = job.cluster.gpu.memory_gib;
    probes_before_ = costs_.probes();
  }
  SearchResult run();

 private:
  bool cancelled() const { return opt_.cancel && opt_.cancel->load(); }
  void report(double f) const {
    if (opt_.progress) opt_.progress(f);
  }
  // The branch-and-bound share done: structures expanded among those expanded or still under the threshold.
  double search_progress(int64_t popped) const;
  bool prepare();  // false when cancelled
  void expand(const std::vector<int64_t>& group);
  // `ct_ready`: `ct` holds the chunk totals memory_lb() computed for `n` (reused when they are the same).
  double node_bound(const Node& n, std::vector<ChunkTotals>& ct, std::vector<double>& tail, bool exact,
                    bool ct_ready = false) const;
  // Memory (GiB) with the activations each stage holds at its first backward: a lower bound.
  double memory_lb(const Node& n, std::vector<ChunkTotals>& ct, std::vector<double>& act, Bounds::MemScratch& ms,
                   bool ct_ready = false) const;
  // `limit`: the step time above which the node cannot matter (the threshold, or the member limit of
  // its group in complete_groups()).
  // `closest_gib`: the closest layout's memory noted before this batch (closest_gib_). `defer`: the
  // smallest bound left to pop after this batch (first pass; infinite in complete_groups()): a node
  // whose exact bound exceeds it goes back to the heap instead of being simulated now.
  Evaluated evaluate(const Node& n, double threshold, double limit, double defer, double closest_gib,
                     Bounds::MemScratch& ms) const;
  void flush();
  // After the top K groups are known: simulate the candidates that may still fold into one of them
  // (same structure, bound within the group's member limit); everything else is pruned.
  void complete_groups();
  void note_closest(double gib, const Layout& l) {
    if (gib > cap_ && gib < closest_gib_) {
      closest_gib_ = gib;
      closest_ = l;
    }
  }
  double threshold() const { return opt_.exhaustive ? kInf : top_.threshold(); }

  const Plan& job_;
  CostParams prm_;
  const SearchOptions& opt_;
  Job J_;
  Limits lim_;
  Bounds bounds_;
  FrameBuilder frames_b_;
  FloorCache& floors_;     // shared by the searches of a sweep (SearchShared)
  LayerCostCache& costs_;  // likewise
  GroupedTop top_;
  int threads_ = 1;
  WorkerPool pool_;  // the threads of every parallel loop of this search
  bool mem_obj_ = false;
  double cap_ = 0;
  Space space_;
  std::vector<int> zeros_;
  std::vector<Frame> frames_;
  std::vector<StructInfo> structs_;
  NodeStore nodes_;
  ItemHeap heap_;             // candidates
  StructureQueue structs_q_;  // structures, best bound first (bounds computed as the search reaches them)
  // the bounds of structures `index` (StructureQueue::Resolve)
  void resolve_structures(const std::vector<int64_t>& index, std::vector<double>& bound);
  // the smallest item of the heap and the structures (an unresolved structure is returned with its cheap
  // bound only when that is above the threshold: nothing is popped then)
  bool have_next() const { return !heap_.empty() || !structs_q_.empty(); }
  Item peek() {
    const Item h = heap_.empty() ? Item{kInf, 0, 0, true} : heap_.top().item();
    const Item* s = structs_q_.front(heap_.empty() ? nullptr : &h, threshold());
    if (!s) return h;
    return heap_.empty() || h > *s ? *s : h;
  }
  Item pop() {
    if (!peek().is_node) return structs_q_.pop_front();
    Item it = heap_.top().item();
    heap_.pop();
    return it;
  }
  std::vector<int64_t> batch_;
  std::vector<double> batch_limit_;  // per batch entry: its limit (evaluate), kUseThreshold = threshold()
  static constexpr double kUseThreshold = -1;
  void add_to_batch(int64_t node, double limit) {
    batch_.push_back(node);
    batch_limit_.push_back(limit);
  }
  SearchStats st_;
  double closest_gib_ = kInf;
  Layout closest_;
  int64_t nonfit_sim_ = 0;
  bool second_pass_ = false;  // in complete_groups()
  int64_t probes_before_ = 0;
};

bool Searcher::prepare() {
  zeros_ = zero_levels(lim_);
  // only the levels the job's framework has
  const unsigned fw_zero = framework_memory(job_.training.framework).zero_levels;
  zeros_.erase(std::remove_if(zeros_.begin(), zeros_.end(), [&](int z) { return !(fw_zero & (1u << z)); }), zeros_.end());
  // options of the job that need a sharded optimizer (fp8 primary weights, hybrid sharding)
  if (job_.parallel.fp8_param_gather || job_.parallel.dp_replicate > 1)
    zeros_.erase(std::remove(zeros_.begin(), zeros_.end(), 0), zeros_.end());
  if (cancelled()) return false;
  space_ = enumerate_structures(J_, lim_, opt_.allow_tp_across_nvlink);
  report(0.2 * kPrepareShare);
  if (cancelled()) return false;
  const size_t n = space_.structures.size();
  st_.structures = int64_t(n);
  structs_.assign(n, StructInfo{});
  // frames (serial: a map from the frame's sizes to its index)
  std::map<std::tuple<int, int, int, int, int, int, int, int, int, int>, int> frame_ids;
  std::vector<Layout> frame_base;
  std::vector<int> frame_pipe;
  // (the structures of a frame come one after another, differing in the micro-batch size only)
  std::tuple<int, int, int, int, int, int, int, int, int, int> last_key{};
  int last_id = -1;
  for (size_t i = 0; i < n; ++i) {
    const Layout& b = space_.structures[i].base;
    auto key = std::make_tuple(b.tp, b.pp, b.vpp, int(b.pipe), int(b.first_layers), int(b.last_layers), b.cp, b.dp, b.ep, b.etp);
    if (last_id >= 0 && key == last_key) {
      structs_[i].frame = last_id;
      structs_[i].mbs = b.mbs;
      continue;
    }
    auto [it, inserted] = frame_ids.emplace(key, int(frame_base.size()));
    last_key = key;
    last_id = it->second;
    if (inserted) {
      Layout fb = b;
      fb.mbs = 1;
      frame_base.push_back(fb);
      frame_pipe.push_back(space_.structures[i].pipe_id);
    }
    structs_[i].frame = it->second;
    structs_[i].mbs = b.mbs;
  }
  frames_.resize(frame_base.size());
  pool_.run(frames_.size(), [&](size_t b, size_t e) {
    Bounds::MemScratch ms = bounds_.scratch();
    for (size_t k = b; k < e && !cancelled(); ++k) {
      const PipeShape& ps = space_.pipes[frame_pipe[k]];
      frames_[k] = frames_b_.build(frame_base[k], frame_pipe[k], ps, zeros_, ms, false);  // slopes, collectives: when resolved
    }
  });
  report(0.5 * kPrepareShare);
  if (cancelled()) return false;
  // per-layer floors of every shape
  if (!mem_obj_) {
    // each shape once, in order (a set of the few hundred shapes, not a sort of one per structure)
    std::set<std::tuple<int, int, int, int, int>> shape_set;
    for (const Structure& s : space_.structures) shape_set.insert({s.base.tp, s.base.cp, s.base.ep, s.base.etp, s.base.mbs});
    const std::vector<std::tuple<int, int, int, int, int>> shapes(shape_set.begin(), shape_set.end());
    pool_.run(shapes.size(), [&](size_t b, size_t e) {
      for (size_t k = b; k < e && !cancelled(); ++k) {
        auto [tp, cp, ep, etp, mbs] = shapes[k];
        floors_.get(tp, cp, ep, etp, mbs);
      }
    });
  }
  report(0.7 * kPrepareShare);
  if (cancelled()) return false;
  // variants (with their rejections), memory and the structure bound
  std::mutex merge_mu;  // per-task counters are summed (order-free) under this lock
  pool_.run(n, [&](size_t b, size_t e) {
    Space local;
    VariantCounter counter;
    std::vector<int> fit;
    int64_t en = 0, pr = 0;
    for (size_t i = b; i < e && !cancelled(); ++i) {
      const Structure& s = space_.structures[i];
      const PipeShape& ps = space_.pipes[s.pipe_id];
      StructInfo& si = structs_[i];
      si.variants = counter.count(J_, lim_, s, ps, &local);
      const Frame& f = frames_[si.frame];
      fit.clear();
      for (int z : zeros_)
        if (opt_.exhaustive || f.static_mem[z] <= cap_ * (1 + kSlack)) fit.push_back(z);
      si.zeros_fit = int(fit.size());
      en += si.variants * int64_t(zeros_.size());
      pr += si.variants * int64_t(zeros_.size() - fit.size());
      if (fit.empty() || si.variants == 0) {
        si.bound = si.cheap = kInf;
        continue;
      }
      if (mem_obj_) {
        double m = kInf;
        for (int z : fit) m = std::min(m, f.static_mem[z]);
        si.bound = si.cheap = m * (1 - kSlack);
      } else {
        const ShapeFloor& fl = floors_.get(s.base.tp, s.base.cp, s.base.ep, s.base.etp, s.base.mbs);
        si.cheap = structure_time_floor(J_, ps, f, fit, fl, bounds_.microbatches(s.base)) * (1 - kCheapSlack);
        if (!std::isfinite(si.cheap)) si.cheap = 0;  // (infinite floors) resolved first
      }
    }
    std::lock_guard<std::mutex> lock(merge_mu);
    st_.enumerated += en;
    st_.pruned_memory += pr;
    space_.rejected += local.rejected;
    for (auto& [r, c] : local.rejected_by_rule) st_.rejected_by_rule[r] += c;
  });
  std::vector<Item> cheap;
  for (size_t i = 0; i < n; ++i) {
    const StructInfo& si = structs_[i];
    const Frame& f = frames_[si.frame];
    for (int z : zeros_) {
      Layout l = space_.structures[i].base;
      l.zero = z;
      note_closest(f.static_mem[z], l);
    }
    if (si.variants > 0 && si.zeros_fit > 0) cheap.push_back({si.cheap, int64_t(i) - int64_t(n), int64_t(i), false});
  }
  structs_q_.reset(std::move(cheap),
                   [this](const std::vector<int64_t>& index, std::vector<double>& bound) { resolve_structures(index, bound); });
  st_.rejected = space_.rejected;
  st_.enumerated += space_.rejected;
  for (const auto& [r, c] : space_.rejected_by_rule) st_.rejected_by_rule[r] += c;
  if (cancelled()) return false;
  report(kPrepareShare);
  return true;
}

void Searcher::resolve_structures(const std::vector<int64_t>& index, std::vector<double>& bound) {
  // the memory slopes and data-parallel collectives of their frames (each frame once, in parallel)
  std::vector<int> fr;
  for (int64_t i : index) {
    const Frame& f = frames_[size_t(structs_[size_t(i)].frame)];
    if (!f.slopes || (!mem_obj_ && !f.collectives)) fr.push_back(structs_[size_t(i)].frame);
  }
  std::sort(fr.begin(), fr.end());
  fr.erase(std::unique(fr.begin(), fr.end()), fr.end());
  pool_.run(fr.size(), [&](size_t b, size_t e) {
    Bounds::MemScratch ms = bounds_.scratch();
    for (size_t k = b; k < e; ++k) {
      Frame& f = frames_[size_t(fr[k])];
      const PipeShape& ps = space_.pipes[size_t(f.pipe_id)];
      frames_b_.add_slopes(f, ps, zeros_, ms);
      if (!mem_obj_) frames_b_.add_collectives(f, ps, zeros_);
    }
  });
  if (mem_obj_) {  // the static memory, already exact
    for (size_t k = 0; k < index.size(); ++k) bound[k] = structs_[size_t(index[k])].bound;
    return;
  }
  pool_.run(index.size(), [&](size_t b, size_t e) {
    std::vector<int> fit;
    for (size_t k = b; k < e; ++k) {
      StructInfo& si = structs_[size_t(index[k])];
      const Structure& s = space_.structures[size_t(index[k])];
      const Frame& f = frames_[size_t(si.frame)];
      fit.clear();
      for (int z : zeros_)
        if (opt_.exhaustive || f.static_mem[z] <= cap_ * (1 + kSlack)) fit.push_back(z);
      Layout pl = s.base;
      pl.sp = s.base.tp > 1;  // sequence parallel halves the transfer: the smaller of the variants
      const ShapeFloor& fl = floors_.get(s.base.tp, s.base.cp, s.base.ep, s.base.etp, s.base.mbs);
      si.bound = structure_time_lb(J_, space_.pipes[size_t(s.pipe_id)], f, fit, fl, bounds_.microbatches(s.base),
                                   p2p_time(J_, prm_, pl), bounds_.moe_prefix(), prm_) *
                 (1 - kSlack);
      bound[k] = si.bound;
    }
  });
}

double Searcher::search_progress(int64_t popped) const {
  double thr = threshold();
  double live = double(structs_q_.live(thr));
  double done = popped + live > 0 ? double(popped) / (double(popped) + live) : 1.0;
  return kPrepareShare + (1 - kPrepareShare) * done;
}

double Searcher::node_bound(const Node& n, std::vector<ChunkTotals>& ct, std::vector<double>& tail, bool exact,
                            bool ct_ready) const {
  const Frame& f = frames_[n.frame];
  return candidate_time_lb(bounds_, f, n.l, space_.pipes[f.pipe_id], costs_, prm_, p2p_time(J_, prm_, n.l), exact, ct, tail,
                           ct_ready) *
         (1 - kSlack);
}

void Searcher::expand(const std::vector<int64_t>& group) {
  // data-parallel collectives of the frames (made when the structures were resolved), the variants
  // and their probes
  std::vector<std::vector<Layout>> vars(group.size());
  std::vector<std::vector<ShapeKey>> shape_keys(group.size());
  for (int64_t i : group) {  // (done when they were resolved)
    Frame& f = frames_[structs_[size_t(i)].frame];
    const PipeShape& ps = space_.pipes[space_.structures[size_t(i)].pipe_id];
    if (!f.slopes) {
      Bounds::MemScratch ms = bounds_.scratch();
      frames_b_.add_slopes(f, ps, zeros_, ms);
    }
    frames_b_.add_collectives(f, ps, zeros_);
  }
  pool_.run(group.size(), [&](size_t b, size_t e) {
    for (size_t g = b; g < e; ++g) {
      const Structure& s = space_.structures[size_t(group[g])];
      structure_variants(J_, lim_, s, space_.pipes[s.pipe_id], &vars[g], nullptr);
      // the shapes the candidate bounds read: without selective recomputation (a selective variant's
      // own probe is made when it is evaluated); the last few are skipped (prefill deduplicates the rest)
      std::vector<ShapeKey>& keys = shape_keys[g];
      for (const Layout& v : vars[g]) {
        Layout lp = v;
        if (lp.recompute == Recompute::selective) lp.recompute = Recompute::none;
        const ShapeKey k = shape_of(lp);
        bool seen = false;
        for (size_t i = keys.size(); i > 0 && i + 8 > keys.size() && !seen; --i) seen = keys[i - 1].tie() == k.tie();
        if (!seen) keys.push_back(k);
      }
    }
  });
  std::vector<ShapeKey> keys;
  for (const auto& k : shape_keys) keys.insert(keys.end(), k.begin(), k.end());
  costs_.prefill(keys, pool_);
  // candidate bounds, one structure per task, or parts of its variants when the group has fewer
  // structures than twice the threads (each part makes its own shared bounds below: the same doubles)
  struct Task {
    size_t g, begin, end;
  };
  std::vector<Task> tasks;
  const size_t want = threads_ > 1 ? 2 * size_t(threads_) : 1;
  for (size_t g = 0; g < group.size(); ++g) {
    const size_t nv = vars[g].size();
    const size_t parts =
        group.size() >= want ? 1 : std::max<size_t>(1, std::min((want + group.size() - 1) / group.size(), nv / 32));
    for (size_t k = 0; k < parts; ++k) tasks.push_back({g, nv * k / parts, nv * (k + 1) / parts});
  }
  // A candidate above every limit a later step can use (the threshold and the group members' limits,
  // which never rise) would stay on the heap until the end: counted as pruned where it is made, never
  // stored (most of a large search's candidates end here). The limits do not move during the loop.
  const double drop = opt_.exhaustive ? kInf : (top_.distinct() ? top_.keep_limit() : top_.threshold()) * (1 + kDropSlack);
  struct Made {
    std::vector<Node> nodes;
    int64_t pruned_memory = 0, pruned_by_bound = 0;
  };
  std::vector<Made> made(tasks.size());
  pool_.run(tasks.size(), [&](size_t b, size_t e) {
    // A variant's chunk totals without selective recomputation (a selective candidate's time bound
    // before its probe, R5) and the bounds made from them: the same for every ZeRO level, and for the
    // variants of a structure with the same shape costs, recompute mode and schedule (the selective
    // variants share the plain one's).
    struct Base {
      const ShapeCosts* sc = nullptr;
      Recompute rc = Recompute::none;
      int layers = 0;
      Schedule sched = Schedule::one_f_one_b;
      std::vector<ChunkTotals> ct;
      LevelBounds lb;
    };
    std::vector<std::unique_ptr<Base>> bases;  // the first `used` serve the current structure
    size_t used = 0;
    // the costs of the last few shapes (a structure's variants cycle through a handful: the schedule
    // changes fastest), without the cache's lock and lookup
    constexpr size_t kRecent = 8;
    std::array<std::pair<ShapeKey, const ShapeCosts*>, kRecent> recent{};
    size_t next_recent = 0;
    auto costs_of = [&](const ShapeKey& k) -> const ShapeCosts& {
      for (const auto& [rk, sc] : recent)
        if (sc && rk.tie() == k.tie()) return *sc;
      const ShapeCosts& sc = costs_.get(k);
      recent[next_recent++ % kRecent] = {k, &sc};
      return sc;
    };
    for (size_t t = b; t < e; ++t) {
      const size_t g = tasks[t].g;
      const StructInfo& si = structs_[size_t(group[g])];
      const Frame& f = frames_[si.frame];
      const PipeShape& ps = space_.pipes[f.pipe_id];
      used = 0;
      for (size_t vi = tasks[t].begin; vi < tasks[t].end; ++vi) {
        const Layout& v = vars[g][vi];
        const bool sel = v.recompute == Recompute::selective;
        LevelBounds* lb = nullptr;
        for (int z : zeros_) {
          if (!opt_.exhaustive && f.static_mem[z] > cap_ * (1 + kSlack)) continue;
          Node n{v, si.frame, 0.0, group[g]};
          n.l.zero = z;
          if (!lb) {
            Layout lp = v;
            if (sel) lp.recompute = Recompute::none;
            const ShapeCosts* sc = &costs_of(shape_of(lp));
            for (size_t i = 0; i < used && !lb; ++i) {
              const Base& e = *bases[i];
              if (e.sc == sc && e.rc == lp.recompute && e.layers == lp.recompute_layers && e.sched == lp.schedule)
                lb = &bases[i]->lb;
            }
            if (!lb) {
              if (used == bases.size()) bases.push_back(std::make_unique<Base>());
              Base& e = *bases[used++];
              e.sc = sc, e.rc = lp.recompute, e.layers = lp.recompute_layers, e.sched = lp.schedule;
              bounds_.chunk_totals(lp, ps, *sc, e.ct);
              e.lb.reset(bounds_, f, lp, ps, prm_, p2p_time(J_, prm_, lp), e.ct);
              lb = &e.lb;
            }
          }
          double mem = lb->memory_lb(z, sel);
          if (!opt_.exhaustive && mem > cap_ * (1 + kSlack)) {
            ++made[t].pruned_memory;  // activations at the first backward already exceed the GPU
            continue;
          }
          n.bound =
              mem_obj_ ? std::max(f.static_mem[z], mem) * (1 - kSlack) : std::max(si.bound, lb->time_lb(z, sel) * (1 - kSlack));
          if (n.bound == kInf) {  // (as before the blocks: an unbounded candidate counts as not fitting)
            ++made[t].pruned_memory;
            continue;
          }
          if (n.bound > drop) {
            ++made[t].pruned_by_bound;
            continue;
          }
          made[t].nodes.push_back(n);
        }
      }
    }
  });
  for (const Made& m : made) {
    st_.pruned_memory += m.pruned_memory;
    st_.pruned_by_bound += m.pruned_by_bound;
    for (const Node& n : m.nodes) {
      heap_.push({n.bound, nodes_.push(n)});
    }
  }
}

double Searcher::memory_lb(const Node& n, std::vector<ChunkTotals>& ct, std::vector<double>& act, Bounds::MemScratch&,
                           bool ct_ready) const {
  const Frame& f = frames_[n.frame];
  return candidate_memory_lb(bounds_, f, n.l, space_.pipes[f.pipe_id], costs_, ct, act, ct_ready);
}

Evaluated Searcher::evaluate(const Node& n, double threshold, double limit, double defer, double closest_gib,
                             Bounds::MemScratch& ms) const {
  Evaluated ev;
  const Frame& f = frames_[n.frame];
  const PipeShape& ps = space_.pipes[f.pipe_id];
  // scratch reused by this thread's evaluations (every element is written before it is read)
  thread_local std::vector<ChunkTotals> ct, ct2;
  thread_local std::vector<double> tail, act, budget;
  bounds_.chunk_totals(n.l, ps, costs_.get(shape_of(n.l), n.l.recompute == Recompute::selective), ct);
  if (!opt_.exhaustive && !mem_obj_ && n.l.recompute == Recompute::selective) {
    // The node's bound took the plain costs (relaxation R5); with the selective probe's costs (the
    // chunk totals above needed the probe) the bound is exact. Above the limit the node goes back
    // with it (flush()) instead of being checked and simulated; so it does above the next bound to
    // pop (`defer`): best-first by the exact bound, the candidates that set the threshold come first
    // and fewer are simulated (the node is popped again while its bound is under the threshold).
    ct2 = ct;  // the exact bound's chunk totals (it adds the FSDP traffic to its copy)
    double tb = std::max(n.bound, node_bound(n, ct2, tail, true, true));
    if (tb > limit || tb > defer) {
      ev.rebound = tb;
      return ev;
    }
  }
  if (!opt_.exhaustive) {
    // Walk each stage's activations only until the stage is known not to fit: above the GPU and above
    // the closest layout noted so far (so the pruned layout cannot be the closest one: flush() then
    // never needs its exact peak). Stage memory grows with the activations; the frame's linear form
    // says where to look, stage_memory_gib decides.
    const double lim = std::max(cap_ * (1 + kSlack), closest_gib);
    budget.resize(size_t(ps.pp));
    for (int s = 0; s < ps.pp; ++s) {
      double slope = f.mem_slope[n.l.zero][size_t(s)];
      budget[size_t(s)] = slope > 0 ? (lim - f.mem_base[n.l.zero][size_t(s)]) / slope : kInf;
    }
    double over_gib = 0;
    auto over = [&](int s, double pk) { return (over_gib = bounds_.stage_memory_gib(n.l, ps, s, pk, ms)) > lim; };
    // First what each stage holds at its first backward (closed forms, R6): a value the walk passes
    // (it sums the same forwards one by one: kSlack covers their rounding). Above `lim` there, the
    // walk would end the same way (pruned, its memory above the closest noted), without walking the
    // lists: this decides most selective candidates, whose node bound had only the static memory.
    bounds_.activations_at_first_backward(n.l, ps, ct, act);
    for (int s = 0; s < ps.pp; ++s) {
      const double a = act[size_t(s)] * (1 - kSlack);
      if (a > budget[size_t(s)] && over(s, a)) {
        ev.pruned_memory = true;
        ev.mem_gib = over_gib;
        return ev;
      }
    }
    if (bounds_.peak_activations_until(n.l, ps, ct, budget, over, act) >= 0) {
      ev.pruned_memory = true;
      ev.mem_gib = over_gib;  // at most the exact peak memory, above the closest noted
      return ev;
    }
  } else {
    bounds_.peak_activations(n.l, ps, ct, act);
  }
  double mem = bounds_.peak_memory_gib(n.l, ps, act, ms);
  ev.mem_gib = mem;
  bool fits_lb = mem <= cap_ * (1 + kSlack);
  if (!opt_.exhaustive) {
    if (!fits_lb) {
      ev.pruned_memory = true;
      return ev;
    }
    if (mem_obj_ && mem * (1 - kSlack) > threshold) {
      ev.pruned_bound = true;
      return ev;
    }
  }
  Plan p = job_;
  p.parallel = to_parallel(n.l, job_.model, J_.world, job_.parallel);
  auto r = simulate(p, prm_, SimOptions{false, false, &bounds_.sim_cache()});
  if (!r) {  // simulate() validates every layout; the enumerator's rules should never let one through
    ev.invalid = r.error().problems.empty() ? "invalid layout" : r.error().problems.front();
    return ev;
  }
  ev.simulated = true;
  if (opt_.exhaustive) {  // every bound must be at or below what the simulation says
    double tb = mem_obj_ ? 0.0 : node_bound(n, ct2, tail, true);
    Bounds::MemScratch ms2 = bounds_.scratch();
    double mlb = memory_lb(n, ct2, tail, ms2);
    double sb = structs_[size_t(n.structure)].bound;
    double key = mem_obj_ ? r->peak_memory_gib : r->step_time_s;  // what the node and structure bounds bound
    bool bad_t = r->step_time_s < tb || key < n.bound || key < structs_[size_t(n.structure)].bound;
    bool bad_m = mem * (1 - kSlack) > r->peak_memory_gib || mlb * (1 - kSlack) > r->peak_memory_gib;
    if (bad_t) ++ev.violations;
    if (bad_m) ++ev.violations;
    if ((bad_t || bad_m) && std::getenv("MPLAN_PLANNER_DEBUG"))  // which bound broke, for whoever debugs it
      std::fprintf(stderr, "VIOLATION %s: step %.9g node %.9g exact %.9g structure %.9g | mem %.9g lb %.9g first-b %.9g\n",
                   short_name(n.l).c_str(), r->step_time_s, n.bound, tb, sb, r->peak_memory_gib, mem, mlb);
    if (r->fits && !fits_lb) ++ev.violations;
  }
  ev.fits = r->fits;
  ev.mem_gib = r->peak_memory_gib;
  ev.cand.plan = std::move(p);
  ev.cand.report = std::move(r).value();
  return ev;
}

void Searcher::flush() {
  if (batch_.empty()) return;
  std::vector<Evaluated> out(batch_.size());
  const double thr = threshold(), closest = closest_gib_;
  // complete_groups() evaluates every candidate under its limit once: nothing is deferred there; nor
  // before the top K holds K results (what those first simulations give sets the threshold)
  const double defer = !second_pass_ && std::isfinite(thr) && have_next() ? peek().bound : kInf;
  pool_.run(batch_.size(), [&](size_t b, size_t e) {
    Bounds::MemScratch ms = bounds_.scratch();
    for (size_t k = b; k < e; ++k)
      out[k] =
          evaluate(nodes_[size_t(batch_[k])], thr, batch_limit_[k] == kUseThreshold ? thr : batch_limit_[k], defer, closest, ms);
  });
  for (size_t k = 0; k < out.size(); ++k) {
    Evaluated& ev = out[k];
    const Layout& l = nodes_[size_t(batch_[k])].l;
    st_.bound_violations += ev.violations;
    if (ev.rebound > 0) {  // back on the heap with its tighter bound
      Node& n = nodes_[size_t(batch_[k])];
      n.bound = ev.rebound;
      heap_.push({n.bound, batch_[k]});
      continue;
    }
    if (ev.pruned_memory) {
      ++st_.pruned_memory;
      note_closest(ev.mem_gib, l);
    }
    if (ev.pruned_bound) ++st_.pruned_by_bound;
    if (!ev.invalid.empty()) {
      ++st_.rejected;
      ++st_.rejected_by_rule["validate_layout: " + ev.invalid];
    }
    if (!ev.simulated) continue;
    ++st_.simulated;
    if (!ev.fits) {
      ++nonfit_sim_;
      note_closest(ev.mem_gib, l);
      continue;
    }
    ++st_.fits;
    top_.offer(std::move(ev.cand));
  }
  top_.settle();
  batch_.clear();
  batch_limit_.clear();
}

SearchResult Searcher::run() {
  auto t0 = std::chrono::steady_clock::now();
  SearchResult res;
  report(0.0);
  if (!prepare()) {  // cancelled while enumerating: nothing was simulated
    res.cancelled = true;
    st_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.stats = st_;
    return res;
  }
  int64_t popped_structs = 0;
  while (true) {
    if (cancelled()) {
      res.cancelled = true;
      break;
    }
    if (!have_next() || peek().bound > threshold()) {
      if (batch_.empty()) break;
      flush();
      report(search_progress(popped_structs));
      continue;
    }
    Item it = pop();
    if (it.is_node) {
      add_to_batch(it.index, kUseThreshold);
      if (batch_.size() >= kBatch) {
        flush();
        report(search_progress(popped_structs));
      }
    } else {
      // expand this structure and the next ones on the heap together (in parallel)
      std::vector<int64_t> group = {it.index};
      double thr = threshold();
      while (group.size() < kExpandGroup && have_next() && !peek().is_node && peek().bound <= thr) group.push_back(pop().index);
      popped_structs += int64_t(group.size());
      expand(group);
      report(search_progress(popped_structs));
    }
  }
  if (!res.cancelled && !opt_.exhaustive) complete_groups();
  // whatever is left was pruned by its bound (counted without popping: the heap holds candidates only)
  st_.pruned_by_bound += int64_t(heap_.size());
  structs_q_.for_each_left(
      [&](int64_t i) { st_.pruned_by_bound += structs_[size_t(i)].variants * structs_[size_t(i)].zeros_fit; });
  st_.pruned_by_bound += int64_t(batch_.size());
  st_.probes = costs_.probes() - probes_before_;  // this search's (the cache may be a sweep's)
  GroupedResult g = top_.take();
  res.top = std::move(g.best);
  res.folded = std::move(g.folded);
  mark_ties(res.top);
  res.top_rejection_reasons = rejection_reasons(st_, nonfit_sim_, cap_, job_.cluster.gpu.name, closest_gib_, closest_,
                                                space_.structures.empty() && space_.rejected == 0, J_.world);
  st_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.stats = st_;
  if (!res.cancelled) report(1.0);
  return res;
}

void Searcher::complete_groups() {
  second_pass_ = true;
  const std::vector<std::pair<Layout, double>> limits = top_.member_limits();
  double most = 0;
  for (const auto& [key, lim] : limits) most = std::max(most, lim * (1 + kSlack));
  // the structure's sizes (what a structure fixes besides vpp and the split) match a group's
  auto structure_matches = [&](const Layout& b) {
    for (const auto& [k, lim] : limits)
      if (k.tp == b.tp && k.pp == b.pp && k.cp == b.cp && k.dp == b.dp && k.ep == b.ep && k.etp == b.etp && k.mbs == b.mbs)
        return true;
    return false;
  };
  auto node_limit = [&](const Layout& l) {
    // group_key keeps these sizes: without a limit that has them, no group's key can match
    bool sizes = false;
    for (const auto& [gk, gl] : limits)
      sizes = sizes || (gk.tp == l.tp && gk.pp == l.pp && gk.cp == l.cp && gk.dp == l.dp && gk.ep == l.ep && gk.etp == l.etp &&
                        gk.mbs == l.mbs && gk.zero == l.zero);
    if (!sizes) return -kInf;
    Layout k = group_key(l);
    double lim = -kInf;
    for (const auto& [gk, gl] : limits)
      if (gk == k) lim = std::max(lim, gl * (1 + kSlack));
    return lim;
  };
  // the structures that may still hold members (their nodes join the heap), then every candidate under
  // the largest limit, best first; those under their own group's limit are evaluated (the set does
  // not depend on the order: the limits are fixed, and a candidate whose exact bound exceeds its limit
  // goes back to the heap)
  std::vector<int64_t> group;
  while (!cancelled()) {
    const Item* next = structs_q_.front(nullptr, most);
    if (!next || next->bound > most) break;
    const int64_t i = structs_q_.pop_front().index;
    const StructInfo& si = structs_[size_t(i)];
    if (!structure_matches(space_.structures[size_t(i)].base)) {
      st_.pruned_by_bound += si.variants * si.zeros_fit;
      continue;
    }
    group.push_back(i);
    if (group.size() >= kExpandGroup) expand(group), group.clear();
  }
  if (!group.empty()) expand(group);
  // (most of them are above their own limit: pruned before the rest is sorted, best first)
  std::vector<std::pair<HeapItem, double>> todo;
  for (const HeapItem& it : heap_.take_up_to(most)) {
    const double lim = node_limit(nodes_[size_t(it.index)].l);
    if (nodes_[size_t(it.index)].bound > lim)
      ++st_.pruned_by_bound;
    else
      todo.emplace_back(it, lim);
  }
  std::sort(todo.begin(), todo.end(), [](const auto& x, const auto& y) { return y.first > x.first; });
  for (size_t k = 0; k < todo.size(); ++k) {
    if (cancelled()) {  // the rest stays on the heap (counted as pruned)
      for (; k < todo.size(); ++k) heap_.push(todo[k].first);
      break;
    }
    add_to_batch(todo[k].first.index, todo[k].second);
    if (batch_.size() >= kBatch) flush();
  }
  flush();
}

}  // namespace

Expected<SearchResult> search(const Plan& job, const Calibration& cal, const SearchOptions& opt) {
  SearchShared shared;
  return search_shared(job, cal, opt, shared);
}

Expected<SearchResult> planner::search_shared(const Plan& job_in, const Calibration& cal, const SearchOptions& opt,
                                              SearchShared& shared) {
  Plan job = job_in;
  // the job's runtime choices carried into every candidate; the rest of the layout is searched
  ParallelConfig keep = job.parallel;
  job.parallel = ParallelConfig{};
  job.parallel.world_size = keep.world_size;
  copy_job_runtime(job.parallel, keep);
  if (auto st = check_search_job(job, opt.fix, opt.max); !st.ok()) return st.error();
  // a job that asks for the MoE all-to-all overlap keeps it; otherwise the search tries both
  SearchOptions o = opt;
  if (keep.moe_a2a_overlap && !o.fix.count("moe_a2a_overlap")) o.fix["moe_a2a_overlap"] = 1;
  const CostParams prm = cal.params_for(job.cluster.gpu);
  shared.bind(job, prm);
  Searcher s(job, prm, o, shared);
  return s.run();
}

}  // namespace mplan
