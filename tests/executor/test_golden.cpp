// Every CPU-backend op (forward and backward) and four whole tiny models (logits, loss, every
// parameter gradient) against golden values from PyTorch, written by tests/golden/gen_golden.py.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "executor/backend/cpu/cpu_backend.h"
#include "executor/train/trainer.h"
#include "mpi_env.h"
#include "test_plans.h"

using namespace mplan;
using namespace mplan::exec;
using nlohmann::json;

namespace {

const json& golden() {
  static json j = [] {
    std::ifstream in(std::string(MPLAN_SOURCE_DIR) + "/tests/golden/executor_golden.json");
    json g;
    in >> g;
    return g;
  }();
  return j;
}

const json& op(const std::string& name) {
  for (const json& c : golden()["ops"])
    if (c["name"] == name) return c;
  throw std::runtime_error("no golden op " + name);
}

std::vector<float> f(const json& a) { return a.get<std::vector<float>>(); }
std::vector<int32_t> ints(const json& a) { return a.get<std::vector<int32_t>>(); }

// max |got - want| <= tol * max(1, max |want|)
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double mx = 1, err = 0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    mx = std::max(mx, double(std::fabs(want[i])));
    double e = std::fabs(double(got[i]) - double(want[i]));
    if (e > err || std::isnan(e)) {
      err = e;
      at = i;
    }
  }
  EXPECT_LE(err, tol * mx) << what << ": worst element " << at << " got " << got[at] << " want " << want[at];
}

struct OpFixture : ::testing::Test {
  CpuBackend be;
};

}  // namespace

TEST_F(OpFixture, Matmul) {
  const json& c = op("matmul");
  auto inp = f(c["inputs"]["inp"]), w = f(c["inputs"]["w"]), b = f(c["inputs"]["b"]), up = f(c["upstream"]["out"]);
  const int64_t M = 5, K = 7, N = 6;
  std::vector<float> out(M * N), dinp(M * K), dw(N * K), db(N);
  be.matmul_forward(out.data(), inp.data(), w.data(), b.data(), M, K, N);
  expect_close(out, f(c["outputs"]["out"]), 2e-6, "matmul out");
  be.matmul_backward_input(dinp.data(), up.data(), w.data(), M, K, N, false);
  be.matmul_backward_weight(dw.data(), db.data(), up.data(), inp.data(), M, K, N);
  expect_close(dinp, f(c["grads"]["inp"]), 2e-6, "matmul dinp");
  expect_close(dw, f(c["grads"]["w"]), 2e-6, "matmul dw");
  expect_close(db, f(c["grads"]["b"]), 2e-6, "matmul db");
}

TEST_F(OpFixture, LayerNormAndRmsNorm) {
  for (std::string name : {"layernorm", "rmsnorm"}) {
    const json& c = op(name);
    const int64_t R = 6, C = 16;
    auto x = f(c["inputs"]["x"]), w = f(c["inputs"]["w"]), up = f(c["upstream"]["out"]);
    std::vector<float> out(R * C), mean(R), rstd(R), dx(R * C), dw(C), db(C);
    if (name == "layernorm") {
      auto b = f(c["inputs"]["b"]);
      be.layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), R, C, 1e-5f);
      be.layernorm_backward(dx.data(), dw.data(), db.data(), up.data(), x.data(), w.data(), mean.data(), rstd.data(), R, C,
                            false);
      expect_close(db, f(c["grads"]["b"]), 5e-6, name + " db");
    } else {
      be.rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), R, C, 1e-5f);
      be.rmsnorm_backward(dx.data(), dw.data(), up.data(), x.data(), w.data(), rstd.data(), R, C, false);
    }
    expect_close(out, f(c["outputs"]["out"]), 5e-6, name + " out");
    expect_close(dx, f(c["grads"]["x"]), 5e-6, name + " dx");
    expect_close(dw, f(c["grads"]["w"]), 5e-6, name + " dw");
  }
}

TEST_F(OpFixture, Rope) {
  const json& c = op("rope");
  auto x = f(c["inputs"]["x"]), up = f(c["upstream"]["out"]);
  auto pos = ints(c["inputs"]["pos"]);
  be.rope_forward(x.data(), pos.data(), 8, 3, 8, 10000.0f);
  expect_close(x, f(c["outputs"]["out"]), 5e-6, "rope out");
  be.rope_backward(up.data(), pos.data(), 8, 3, 8, 10000.0f);
  expect_close(up, f(c["grads"]["x"]), 5e-6, "rope dx");
}

TEST_F(OpFixture, AttentionAndRingBlocks) {
  for (std::string name : {"attention", "attention_ring"}) {
    const json& c = op(name);
    Backend::AttnShape s;
    s.B = c["B"];
    s.Tq = c["Tq"];
    s.Tk = c["Tk"];
    s.Hq = c["Hq"];
    s.Hkv = c["Hkv"];
    s.D = s.Dv = c["D"];
    s.scale = 1.0f / std::sqrt(float(s.D));
    auto q = f(c["inputs"]["q"]), k = f(c["inputs"]["k"]), v = f(c["inputs"]["v"]), up = f(c["upstream"]["out"]);
    auto qpos = ints(c["inputs"]["qpos"]), kpos = ints(c["inputs"]["kpos"]);
    const int blocks = c.value("blocks", 1);  // keys fed as `blocks` consecutive blocks (B = 1)
    Backend::AttnShape sb = s;
    sb.Tk = s.Tk / blocks;
    const int64_t kstride = sb.Tk * s.Hkv * s.D;
    std::vector<float> out(size_t(s.B * s.Tq * s.Hq * s.D)), lse(size_t(s.B * s.Hq * s.Tq));
    for (int bl = 0; bl < blocks; ++bl)
      be.attention_forward(out.data(), lse.data(), q.data(), k.data() + bl * kstride, v.data() + bl * kstride, qpos.data(),
                           kpos.data() + bl * sb.Tk, sb, bl > 0);
    expect_close(out, f(c["outputs"]["out"]), 5e-6, name + " out");
    std::vector<float> delta(lse.size()), dq(q.size()), dk(k.size()), dv(v.size());
    be.attention_backward_prepare(delta.data(), up.data(), out.data(), s);
    for (int bl = 0; bl < blocks; ++bl)
      be.attention_backward(dq.data(), dk.data() + bl * kstride, dv.data() + bl * kstride, up.data(), lse.data(), delta.data(),
                            q.data(), k.data() + bl * kstride, v.data() + bl * kstride, qpos.data(), kpos.data() + bl * sb.Tk,
                            sb);
    expect_close(dq, f(c["grads"]["q"]), 1e-5, name + " dq");
    expect_close(dk, f(c["grads"]["k"]), 1e-5, name + " dk");
    expect_close(dv, f(c["grads"]["v"]), 1e-5, name + " dv");
  }
}

TEST_F(OpFixture, Activations) {
  struct A {
    const char* name;
    ActKind kind;
    int64_t N, F;
  };
  for (A a :
       {A{"gelu", ActKind::gelu, 4, 10}, A{"squared_relu", ActKind::squared_relu, 4, 10}, A{"swiglu", ActKind::swiglu, 4, 5}}) {
    const json& c = op(a.name);
    auto x = f(c["inputs"]["x"]), up = f(c["upstream"]["out"]);
    std::vector<float> out(size_t(a.N * a.F)), dx(x.size());
    be.act_forward(a.kind, out.data(), x.data(), a.N, a.F);
    be.act_backward(a.kind, dx.data(), up.data(), x.data(), a.N, a.F);
    expect_close(out, f(c["outputs"]["out"]), 5e-6, std::string(a.name) + " out");
    expect_close(dx, f(c["grads"]["x"]), 5e-6, std::string(a.name) + " dx");
  }
}

TEST_F(OpFixture, EmbeddingAndCrossEntropy) {
  const json& e = op("embedding");
  auto wte = f(e["inputs"]["wte"]), up = f(e["upstream"]["out"]);
  auto tok = ints(e["inputs"]["tokens"]);
  std::vector<float> out(7 * 5), dwte(wte.size());
  be.embedding_forward(out.data(), tok.data(), wte.data(), 7, 5, 0, 11);
  be.embedding_backward(dwte.data(), up.data(), tok.data(), 7, 5, 0, 11);
  expect_close(out, f(e["outputs"]["out"]), 0, "embedding out");
  expect_close(dwte, f(e["grads"]["wte"]), 2e-6, "embedding dwte");
  // cross-entropy through the vocabulary-parallel pieces, with the vocabulary split in two shards
  const json& c = op("cross_entropy");
  auto logits = f(c["inputs"]["logits"]), dl = f(c["upstream"]["out"]);
  auto tgt = ints(c["inputs"]["targets"]);
  const int64_t N = 7, V = 11, half = 6;
  std::vector<float> s0(N * half), s1(N * half);  // shard 1 holds 5 real columns + 1 padding
  for (int64_t n = 0; n < N; ++n)
    for (int64_t v = 0; v < V; ++v) (v < half ? s0[n * half + v] : s1[n * half + v - half]) = logits[n * V + v];
  std::vector<float> m0(N), m1(N), se0(2 * N), se1(2 * N), gmax(N), loss(N);
  be.xent_rowmax(m0.data(), s0.data(), N, half, half);
  be.xent_rowmax(m1.data(), s1.data(), N, half, V - half);
  for (int64_t n = 0; n < N; ++n) gmax[n] = std::max(m0[n], m1[n]);
  be.xent_sumexp_target(se0.data(), se0.data() + N, s0.data(), gmax.data(), tgt.data(), N, half, half, 0);
  be.xent_sumexp_target(se1.data(), se1.data() + N, s1.data(), gmax.data(), tgt.data(), N, half, V - half, half);
  std::vector<float> gsum(N);
  for (int64_t n = 0; n < N; ++n) {
    gsum[n] = se0[n] + se1[n];
    loss[n] = std::log(gsum[n]) + gmax[n] - (se0[N + n] + se1[N + n]);
  }
  expect_close(loss, f(c["outputs"]["out"]), 2e-6, "cross-entropy loss");
  be.xent_backward(s0.data(), gmax.data(), gsum.data(), tgt.data(), dl.data(), N, half, half, 0);
  be.xent_backward(s1.data(), gmax.data(), gsum.data(), tgt.data(), dl.data(), N, half, V - half, half);
  std::vector<float> d(N * V);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t v = 0; v < V; ++v) d[n * V + v] = v < half ? s0[n * half + v] : s1[n * half + v - half];
  expect_close(d, f(c["grads"]["logits"]), 2e-6, "cross-entropy dlogits");
}

TEST_F(OpFixture, MoeRouting) {
  const json& c = op("moe_route");
  const int64_t N = 5, E = 6, k = 2;
  auto logits = f(c["inputs"]["logits"]);
  std::vector<float> probs(N * E), w(N * k), dl(N * E);
  std::vector<int32_t> idx(N * k);
  be.moe_route_forward(probs.data(), idx.data(), w.data(), logits.data(), N, E, k);
  expect_close(probs, f(c["outputs"]["probs"]), 2e-6, "router probs");
  expect_close(w, f(c["outputs"]["weights"]), 2e-6, "router top-k weights");
  EXPECT_EQ(idx, ints(c["outputs"]["idx"]));
  auto dw = f(c["upstream"]["weights"]), dp = f(c["upstream"]["probs"]);
  be.moe_route_backward(dl.data(), dw.data(), dp.data(), probs.data(), idx.data(), w.data(), N, E, k);
  expect_close(dl, f(c["grads"]["logits"]), 5e-6, "router dlogits");
}

TEST_F(OpFixture, AdamW) {
  const json& c = op("adamw");
  auto p = f(c["inputs"]["param"]), g = f(c["inputs"]["grad"]), m = f(c["inputs"]["m"]), v = f(c["inputs"]["v"]);
  AdamWArgs a;
  a.lr = c["lr"];
  a.beta1 = c["beta1"];
  a.beta2 = c["beta2"];
  a.eps = c["eps"];
  a.weight_decay = c["wd"];
  a.step = c["step"];
  be.adamw(p.data(), g.data(), m.data(), v.data(), int64_t(p.size()), a);
  expect_close(p, f(c["outputs"]["param"]), 1e-6, "adamw param");
  expect_close(m, f(c["outputs"]["m"]), 1e-6, "adamw m");
  expect_close(v, f(c["outputs"]["v"]), 1e-6, "adamw v");
}

// Whole models: the Trainer on one rank with the golden weights and tokens.
class GoldenModel : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenModel, LogitsLossAndEveryGradient) {
  const json* cp = nullptr;
  for (const json& c : golden()["models"])
    if (c["name"] == GetParam()) cp = &c;
  ASSERT_NE(cp, nullptr);
  const json& c = *cp;
  const int64_t B = c["batch"], S = c["seq"];
  auto plan = plan_from_json(test::plan_json(c["model"], {{"world_size", 1}, {"micro_batch_size", B}}, B, S));
  ASSERT_TRUE(plan) << plan.error().message();
  TrainOptions opt;
  opt.peak_gflops = 1;
  auto t = Trainer::create(plan.value(), opt, MPI_COMM_SELF);
  ASSERT_TRUE(t) << t.error().message();
  t.value()->set_data(make_fixed_data(c["sequences"].get<std::vector<std::vector<int32_t>>>()));
  std::map<std::string, std::vector<float>> w;
  for (auto& [k, v] : c["weights"].items()) w[k] = v.get<std::vector<float>>();
  auto missing = t.value()->load_full(w);
  EXPECT_TRUE(missing.empty()) << "golden file lacks " << missing.size() << " tensors, e.g. " << missing[0];
  std::vector<float> logits;
  double loss = t.value()->forward_backward(&logits);
  EXPECT_NEAR(loss, c["loss"].get<double>(), 2e-6 * std::fabs(c["loss"].get<double>()));
  expect_close(logits, f(c["logits"]), c["logits_tol"], "logits");
  auto grads = t.value()->gather_full(true);
  EXPECT_EQ(grads.size(), c["grads"].size());
  for (auto& [name, want] : c["grads"].items()) {
    ASSERT_TRUE(grads.count(name)) << "no gradient for " << name;
    const std::vector<float>& got = grads[name];
    std::vector<float> ref = want.get<std::vector<float>>();
    ASSERT_EQ(got.size(), ref.size()) << name;
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      num += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    const double tol = c["grad_tol"][name];
    EXPECT_LE(std::sqrt(num), tol * std::sqrt(den) + 1e-7 * std::sqrt(double(ref.size())))
        << GetParam() << ": gradient of " << name << " (relative L2 error " << std::sqrt(num / std::max(den, 1e-30)) << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenModel, ::testing::Values("gpt", "llama", "qwen", "moe"));
