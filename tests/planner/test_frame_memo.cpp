// The memos of the search's preparation return the doubles the uncached functions return: InputMemo
// through evictions, a frame's data-parallel collectives (each distinct stage / chunk input costed
// once) against simulator/dp_costs.h called per stage and chunk, its memory slopes added later
// (add_slopes) against those made with the frame, ZeRO 3's FSDP traffic (add_fsdp) against
// exposed_comm_s per chunk, the probes shapes share (a MoE model's dense-layer probes, a selective
// shape's plain parts) against a cache that probes every shape on its own, and likewise the structure
// floors' dense, embedding and head pieces; the structures' variant counts (VariantCounter) against
// structure_variants per structure.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "planner/bounds.h"
#include "planner/floor.h"
#include "planner/frame.h"
#include "planner/input_memo.h"
#include "planner/layer_costs.h"
#include "planner/placement.h"
#include "planner/space.h"
#include "planner_test_util.h"
#include "simulator/dp_costs.h"
#include "simulator/layer_cost.h"

namespace mplan {
namespace {

using namespace planner;

TEST(InputMemo, ReturnsTheFunctionsDoublesThroughEvictions) {
  auto fn = [](double a, double b) { return std::array<double, 2>{a * 0.1 + b / 3.0, a - b * 1e-7}; };
  InputMemo<2, 2, 4> memo;
  std::mt19937_64 rng(7);
  int computed = 0;
  for (int i = 0; i < 5000; ++i) {
    // 9 distinct keys over 4 slots: hits and evictions both happen
    double a = double(rng() % 3) / 7.0, b = double(rng() % 3) * 1e9 + 0.5;
    auto v = memo.get({a, b}, [&] {
      ++computed;
      return fn(a, b);
    });
    auto w = fn(a, b);
    ASSERT_EQ(v[0], w[0]);
    ASSERT_EQ(v[1], w[1]);
  }
  EXPECT_GT(memo.hits(), 0u);
  EXPECT_GT(computed, 9);  // evicted keys were computed again
  // keys compare by their bits: -0.0 is not 0.0
  InputMemo<1, 1> z;
  EXPECT_EQ(z.get({0.0}, [] { return std::array<double, 1>{1.0}; })[0], 1.0);
  EXPECT_EQ(z.get({-0.0}, [] { return std::array<double, 1>{2.0}; })[0], 2.0);
}

void expect_frame_collectives(const Plan& job_in, int samples, uint64_t seed) {
  Plan job = job_in;
  job = test::open_layout(job);
  const CostParams prm = shipped_calibration().params_for(job.cluster.gpu);
  const CostParams fp = framework_params(prm, job.training.framework);
  Job J(job);
  Limits lim;
  Space space = enumerate_structures(J, lim, false);
  ASSERT_FALSE(space.structures.empty());
  Bounds bounds(J, prm);
  FrameBuilder frames(J, prm, bounds);
  Bounds::MemScratch ms = bounds.scratch();
  const std::vector<int> zeros = {0, 1, 2, 3};
  std::mt19937_64 rng(seed);
  int zero3_chunks = 0;
  for (int k = 0; k < samples; ++k) {
    const Structure& st = space.structures[rng() % space.structures.size()];
    const PipeShape& ps = space.pipes[st.pipe_id];
    Layout base = st.base;
    base.mbs = 1;
    Frame f = frames.build(base, st.pipe_id, ps, zeros, ms);
    frames.add_collectives(f, ps, zeros);
    {  // the search's frames get their memory slopes later (add_slopes): the same doubles
      Frame late = frames.build(base, st.pipe_id, ps, zeros, ms, false);
      ASSERT_FALSE(late.slopes);
      frames.add_slopes(late, ps, zeros, ms);
      for (int z : zeros) {
        ASSERT_EQ(late.mem_base[z], f.mem_base[z]) << short_name(base) << " z" << z;
        ASSERT_EQ(late.mem_slope[z], f.mem_slope[z]) << short_name(base) << " z" << z;
        ASSERT_EQ(late.static_mem[z], f.static_mem[z]) << short_name(base) << " z" << z;
      }
    }
    auto pl = [&](Dim d) { return fast_placement(base.tp, base.cp, base.dp, base.pp, base.etp, base.ep, d, J.domain); };
    const GroupPlacement dp = pl(Dim::dp), edp = pl(Dim::edp);
    const std::string at = short_name(base);
    for (int s = 0; s < ps.pp; ++s) {
      double dense = ps.params[s].dense / base.tp, expert = ps.params[s].expert / (double(base.ep) * base.etp);
      for (int z : {0, 1, 2}) {
        ASSERT_EQ(f.grad[z][s], dp_grad_reduce_s(z, dense, expert, dp, edp, job.cluster, fp)) << at << " z" << z << " s" << s;
        ASSERT_EQ(f.gather[z][s], dp_param_gather_s(z, dense, expert, dp, edp, job.cluster, fp)) << at << " z" << z;
      }
      int stage_layers = 0;
      for (int c = 0; c < ps.vpp; ++c) stage_layers += ps.layers[size_t(s) * ps.vpp + c];
      for (int c = 0; c < ps.vpp; ++c) {
        size_t i = size_t(s) * ps.vpp + c;
        double frac = ps.params[s].dense + ps.params[s].expert > 0 ? double(ps.layers[i]) / std::max(1, stage_layers) : 0;
        FsdpTraffic t = fsdp_chunk_traffic(dense, expert, frac, dp, edp, job.cluster, fp);
        ASSERT_EQ(f.fsdp_ag[i], t.gather_s) << at << " chunk " << i;
        ASSERT_EQ(f.fsdp_rs[i], t.scatter_s) << at << " chunk " << i;
        ++zero3_chunks;
      }
    }
    // ZeRO 3's FSDP traffic beside each chunk's compute: a chunk with the previous one's inputs takes
    // its doubles (add_fsdp), the same as exposed_comm_s called for every chunk
    Layout l = base;
    l.zero = 3;
    std::vector<ChunkTotals> ct(ps.layers.size()), want;
    for (size_t i = 0; i < ct.size(); ++i) ct[i].F = 1e-3 * ps.layers[i] + (i == 0 ? 1e-4 : 0.0), ct[i].B = 2.5e-3 * ps.layers[i];
    want = ct;
    for (size_t i = 0; i < want.size(); ++i) {
      want[i].F += exposed_comm_s(f.fsdp_ag[i], ct[i].F, ps.layers[i], prm);
      want[i].B += exposed_comm_s(f.fsdp_ag[i] + f.fsdp_rs[i], ct[i].B, ps.layers[i], prm);
    }
    add_fsdp(f, l, ps, prm, ct);
    for (size_t i = 0; i < ct.size(); ++i) {
      ASSERT_EQ(ct[i].F, want[i].F) << at << " chunk " << i;
      ASSERT_EQ(ct[i].B, want[i].B) << at << " chunk " << i;
    }
  }
  EXPECT_GT(zero3_chunks, samples);
}

TEST(FrameMemo, CollectivesAreThoseOfEachStageAndChunk) {
  expect_frame_collectives(test::job(test::tiny_dense(), test::cluster("dgx-h100"), 64, 256, 4096), 300, 11);
  expect_frame_collectives(test::job(test::tiny_moe(), test::cluster("dgx-h100"), 64, 256, 4096), 300, 12);
  expect_frame_collectives(test::job(model_preset("mixtral-8x7b").value(), test::cluster("dgx-h100"), 128, 512, 4096), 200, 13);
}

void expect_same_piece(const PieceCost& a, const PieceCost& b, const std::string& at) {
  EXPECT_EQ(a.F, b.F) << at;
  EXPECT_EQ(a.B, b.B) << at;
  EXPECT_EQ(a.W, b.W) << at;
  EXPECT_EQ(a.act, b.act) << at;
  EXPECT_EQ(a.act_w, b.act_w) << at;
  EXPECT_EQ(a.transient, b.transient) << at;
  EXPECT_EQ(a.fwd_transient, b.fwd_transient) << at;
}

TEST(LayerCostMemo, SharedDenseProbesAreEachShapesOwn) {
  for (Plan job : {test::job(test::tiny_moe(), test::cluster("dgx-h100"), 64, 256, 4096),
                   test::job(model_preset("mixtral-8x7b").value(), test::cluster("dgx-h100"), 64, 256, 4096)}) {
    job = test::open_layout(job);
    const CostParams prm = shipped_calibration().params_for(job.cluster.gpu);
    Job J(job);
    Limits lim;
    Space space = enumerate_structures(J, lim, false);
    std::vector<Layout> all;
    for (const Structure& s : space.structures) structure_variants(J, lim, s, space.pipes[s.pipe_id], &all, nullptr);
    std::vector<ShapeKey> keys;
    keys.reserve(all.size());
    for (const Layout& l : all) keys.push_back(shape_of(l));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end(), [](const ShapeKey& a, const ShapeKey& b) { return !(a < b) && !(b < a); }),
               keys.end());
    std::mt19937_64 rng(5);
    std::shuffle(keys.begin(), keys.end(), rng);
    if (keys.size() > 160) keys.resize(160);
    LayerCostCache shared(job, prm), own(job, prm, false);
    std::set<std::tuple<int, int, int>> ep_etp_mbs;
    for (const ShapeKey& k : keys) {
      const bool sel = k.rmods != 0;
      const ShapeCosts& a = shared.get(k, sel);
      const ShapeCosts& b = own.get(k, sel);
      const std::string at = "tp" + std::to_string(k.tp) + " ep" + std::to_string(k.ep) + " etp" + std::to_string(k.etp) +
                             " mbs" + std::to_string(k.mbs) + (sel ? " selective" : "");
      expect_same_piece(a.dense.none, b.dense.none, at + " dense none");
      expect_same_piece(a.dense.full, b.dense.full, at + " dense full");
      expect_same_piece(a.moe.none, b.moe.none, at + " moe none");
      expect_same_piece(a.emb, b.emb, at + " embedding");
      expect_same_piece(a.head, b.head, at + " head");
      if (sel) {
        expect_same_piece(a.dense.selective, b.dense.selective, at + " dense selective");
        expect_same_piece(a.moe.selective, b.moe.selective, at + " moe selective");
      }
      ep_etp_mbs.insert({k.ep, k.etp, k.mbs});
    }
    EXPECT_GT(ep_etp_mbs.size(), 3u);  // shapes that share a dense probe were compared
  }
}

void expect_same_floor(const FloorPiece& a, const FloorPiece& b, const std::string& at) {
  EXPECT_EQ(a.F, b.F) << at;
  EXPECT_EQ(a.B, b.B) << at;
  EXPECT_EQ(a.T, b.T) << at;
  EXPECT_EQ(a.FB, b.FB) << at;
  EXPECT_EQ(a.BWmax, b.BWmax) << at;
  EXPECT_EQ(a.Wmax, b.Wmax) << at;
  EXPECT_EQ(a.BWmin, b.BWmin) << at;
}

TEST(FloorMemo, SharedDensePiecesAreEachShapesOwn) {
  for (Plan job : {test::job(test::tiny_moe(), test::cluster("dgx-h100"), 64, 256, 4096, Precision::fp8),
                   test::job(test::tiny_moe(), test::cluster("gb200-nvl72"), 32, 64, 4096),
                   test::job(test::tiny_dense(), test::cluster("dgx-h100"), 32, 64, 4096)}) {
    job = test::open_layout(job);
    const CostParams prm = shipped_calibration().params_for(job.cluster.gpu);
    Job J(job);
    Space space = enumerate_structures(J, Limits{}, false);
    std::vector<std::tuple<int, int, int, int, int>> shapes;
    for (const Structure& s : space.structures) shapes.emplace_back(s.base.tp, s.base.cp, s.base.ep, s.base.etp, s.base.mbs);
    std::sort(shapes.begin(), shapes.end());
    shapes.erase(std::unique(shapes.begin(), shapes.end()), shapes.end());
    std::mt19937_64 rng(3);
    std::shuffle(shapes.begin(), shapes.end(), rng);
    FloorCache shared(J, prm), own(J, prm, false);
    std::set<std::tuple<int, int, int>> tp_cp_mbs;
    for (auto [tp, cp, ep, etp, mbs] : shapes) {
      const ShapeFloor& a = shared.get(tp, cp, ep, etp, mbs);
      const ShapeFloor& b = own.get(tp, cp, ep, etp, mbs);
      const std::string at = "tp" + std::to_string(tp) + " cp" + std::to_string(cp) + " ep" + std::to_string(ep) + " etp" +
                             std::to_string(etp) + " mbs" + std::to_string(mbs);
      expect_same_floor(a.dense, b.dense, at + " dense");
      expect_same_floor(a.moe, b.moe, at + " moe");
      expect_same_floor(a.emb, b.emb, at + " embedding");
      expect_same_floor(a.head, b.head, at + " head");
      tp_cp_mbs.insert({tp, cp, mbs});
    }
    if (job.model.moe) EXPECT_LT(tp_cp_mbs.size(), shapes.size());  // some shapes shared their dense pieces
  }
}

TEST(VariantCounterMemo, CountsAndRejectionsAreEachStructuresOwn) {
  // structures_variants per structure against VariantCounter (structures that agree in what it reads
  // counted once): the same count for each, the same rejections in all
  Plan fp8 = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 32, 64, 4096, Precision::fp8);  // fp8 shape rule
  Plan cp = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 64, 256, 16384);                   // CP exchanges
  Plan tt = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 32, 4096);
  tt.training.framework = Framework::torchtitan;
  int64_t rejected = 0;
  for (Plan job : {fp8, cp, tt}) {
    job = test::open_layout(job);
    Job J(job);
    Limits lim;
    Space space = enumerate_structures(J, lim, false);
    ASSERT_FALSE(space.structures.empty());
    Space each, memo;
    VariantCounter counter;
    int64_t hits = 0;
    std::set<std::array<int, 7>> keys;
    for (const Structure& s : space.structures) {
      const PipeShape& ps = space.pipes[s.pipe_id];
      EXPECT_EQ(counter.count(J, lim, s, ps, &memo), structure_variants(J, lim, s, ps, nullptr, &each)) << short_name(s.base);
      hits += !keys.insert({s.base.tp, s.base.cp, s.base.pp, s.base.vpp, s.base.ep, s.base.mbs, ps.min_chunk}).second;
    }
    EXPECT_EQ(memo.rejected, each.rejected);
    rejected += each.rejected;
    std::map<std::string, int64_t> a, b;
    for (const auto& [r, n] : memo.rejected_by_rule) a[r] += n;
    for (const auto& [r, n] : each.rejected_by_rule) b[r] += n;
    EXPECT_EQ(a, b);
    EXPECT_GT(hits, 0);  // the memo served some structures
  }
  EXPECT_GT(rejected, 0);  // and replayed rejections
}

}  // namespace
}  // namespace mplan
