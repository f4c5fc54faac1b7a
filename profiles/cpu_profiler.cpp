// CPU kernel profiler: the measurement grid (shapes and FLOPs/bytes from core/ops.h), timing with
// warm-up and repetitions, and the driver that writes one transaction per batch.
#include "profiles/cpu_profiler.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>

#include "core/ops.h"
#include "core/stats.h"
#include "core/time_format.h"
#include "profiles/cost_eval.h"
#include "profiles/cpu_kernels.h"
#include "profiles/host_info.h"
#include "profiles/profile_grid.h"

namespace mplan::profiles {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using Buf = std::shared_ptr<std::vector<float>>;
Buf buffer(int64_t n, uint32_t seed = 1) {
  auto b = std::make_shared<std::vector<float>>(size_t(n));
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : *b) x = u(g);
  return b;
}
std::shared_ptr<std::vector<int>> tokens(int64_t n, int64_t vocab) {
  auto t = std::make_shared<std::vector<int>>(size_t(n));
  for (int64_t i = 0; i < n; ++i) (*t)[size_t(i)] = int((i * 7919) % vocab);
  return t;
}

struct Grid {
  std::vector<int64_t> hidden;
  std::vector<std::pair<int64_t, int64_t>> bs;  // (micro-batch, sequence)
  int64_t vocab;
  std::vector<int64_t> adamw_params;
};
Grid grid(bool quick) {
  if (quick) return {{128, 384}, {{1, 64}, {2, 256}}, 2048, {1 << 20}};
  return {{128, 256, 512, 768, 1024}, {{1, 64}, {1, 256}, {2, 512}, {2, 1024}}, 8192, {1 << 20, 1 << 22, 1 << 24}};
}

std::vector<Op> ops_at(const ModelSpec& m, int64_t b, int64_t s) {
  OpContext c;
  c.micro_batch = b;
  c.seq = s;
  c.precision = Precision::fp32;
  std::vector<Op> ops = embedding_ops(m, c);
  for (auto& o : layer_ops(m, 0, c)) ops.push_back(o);
  for (auto& o : head_ops(m, c)) ops.push_back(o);
  return ops;
}

const Op* find_op(const std::vector<Op>& ops, OpId id) {
  for (const auto& o : ops)
    if (o.id == id) return &o;
  return nullptr;
}

std::string impl_name() {
  static const std::string s = std::string("OpenBLAS ") + openblas_get_corename();
  return s;
}

// Three GEMMs of a linear layer out = in @ W^T with in (m, k), W (n, k): forward (m, n, k), input
// gradient (m, k, n) and weight gradient (k, n, m) as the cost model names them.
std::vector<KernelCase> gemm_cases(const Op& op) {
  const int64_t m = op.gemm.m, n = op.gemm.n, k = op.gemm.k;
  auto in = buffer(m * k, 1), w = buffer(n * k, 2), out = buffer(m * n, 3), din = buffer(m * k, 4), dw = buffer(n * k, 5);
  auto row = [&](const char* pass, int64_t M, int64_t N, int64_t K) {
    KernelRow r;
    r.op = op.name;
    r.pass = pass;
    r.dtype = "fp32";
    r.m = M, r.n = N, r.k = K, r.groups = 1;
    r.flops = 2.0 * double(M) * double(N) * double(K);
    r.bytes = 4.0 * (double(M) * K + double(K) * N + double(M) * N);
    r.impl = "cblas_sgemm " + impl_name();
    return r;
  };
  std::vector<KernelCase> cs;
  cs.push_back({row("fwd", m, n, k), [=] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f, in->data(), int(k),
                              w->data(), int(k), 0.0f, out->data(), int(n));
                }});
  cs.push_back({row("dgrad", m, k, n), [=] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(k), int(n), 1.0f, out->data(), int(n),
                              w->data(), int(k), 0.0f, din->data(), int(k));
                }});
  cs.push_back({row("wgrad", k, n, m), [=] {
                  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(n), int(k), int(m), 1.0f, out->data(), int(n),
                              in->data(), int(k), 0.0f, dw->data(), int(k));
                }});
  return cs;
}

KernelRow mem_row(const Op& op, const char* pass, int64_t rows, int64_t width) {
  KernelRow r;
  r.op = op.name;
  r.pass = pass;
  r.dtype = "fp32";
  r.m = rows, r.n = width;
  bool fwd = std::string(pass) == "fwd";
  r.flops = op.fwd_flops * (fwd ? 1 : 2);
  r.bytes = op.fwd_bytes * (fwd ? 1 : 2);
  r.impl = "mplan profiles cpu kernel";
  return r;
}

std::vector<KernelCase> attention_cases(const Op& op) {
  const AttnShape& a = op.attn;
  const int64_t B = a.batch, H = a.heads, T = a.q_len, D = a.head_dim_qk;
  const int64_t n = B * H * T * D;
  auto q = buffer(n, 1), k = buffer(n, 2), v = buffer(n, 3), o = buffer(n, 4), dout = buffer(n, 5);
  auto dq = buffer(n, 6), dk = buffer(n, 7), dv = buffer(n, 8), lse = buffer(B * H * T, 9);
  auto s1 = buffer(T * T, 10), s2 = buffer(T * T, 11), rd = buffer(T, 12);
  cpu::attention_forward(o->data(), lse->data(), q->data(), k->data(), v->data(), s1->data(), B, H, T, D);
  auto row = [&](const char* pass, double flops) {
    KernelRow r;
    r.op = op.name;
    r.pass = pass;
    r.dtype = "fp32";
    r.batch = B, r.heads = H, r.q_len = T, r.kv_len = a.kv_len, r.head_dim = D, r.causal = a.causal;
    r.flops = flops;
    r.bytes = op.fwd_bytes * (std::string(pass) == "fwd" ? 1 : 2);
    r.impl = "mplan profiles cpu attention (cblas_sgemm " + impl_name() + ")";
    return r;
  };
  return {{row("fwd", op.fwd_flops),
           [=] { cpu::attention_forward(o->data(), lse->data(), q->data(), k->data(), v->data(), s1->data(), B, H, T, D); }},
          {row("bwd", 2.0 * op.fwd_flops), [=] {
             cpu::attention_backward(dq->data(), dk->data(), dv->data(), dout->data(), q->data(), k->data(), v->data(), o->data(),
                                     lse->data(), s1->data(), s2->data(), rd->data(), B, H, T, D);
           }}};
}

// Memory-bound ops of one (h, b, s) point.
std::vector<KernelCase> memory_cases(const std::vector<Op>& ops, const ModelSpec& m, int64_t b, int64_t s) {
  const int64_t T = b * s, h = m.hidden_size, f = m.ffn_hidden_size, V = m.vocab_size, H = m.num_attention_heads;
  std::vector<KernelCase> cs;
  if (const Op* op = find_op(ops, OpId::attn_norm)) {
    auto x = buffer(T * h, 1), y = buffer(T * h, 2), w = buffer(h, 3), bi = buffer(h, 4), mean = buffer(T, 5),
         rstd = buffer(T, 6), dx = buffer(T * h, 7), dw = buffer(h, 8), db = buffer(h, 9);
    cpu::layernorm_forward(y->data(), mean->data(), rstd->data(), x->data(), w->data(), bi->data(), T, h);
    cs.push_back({mem_row(*op, "fwd", T, h), [=] {
                    cpu::layernorm_forward(y->data(), mean->data(), rstd->data(), x->data(), w->data(), bi->data(), T, h);
                  }});
    cs.push_back({mem_row(*op, "bwd", T, h), [=] {
                    std::fill(dx->begin(), dx->end(), 0.0f);
                    cpu::layernorm_backward(dx->data(), dw->data(), db->data(), y->data(), x->data(), w->data(), mean->data(),
                                            rstd->data(), T, h);
                  }});
  }
  if (const Op* op = find_op(ops, OpId::rope)) {
    auto qk = buffer(2 * T * h, 1);
    cs.push_back({mem_row(*op, "fwd", T, 2 * h), [=] { cpu::rope_forward(qk->data(), 2 * T, H, 64); }});
    cs.push_back({mem_row(*op, "bwd", T, 2 * h), [=] { cpu::rope_backward(qk->data(), 2 * T, H, 64); }});
  }
  if (const Op* op = find_op(ops, OpId::attn_residual)) {
    auto a = buffer(T * h, 1), c = buffer(T * h, 2), o = buffer(T * h, 3);
    cs.push_back({mem_row(*op, "fwd", T, h), [=] { cpu::residual_forward(o->data(), a->data(), c->data(), T * h); }});
  }
  if (const Op* op = find_op(ops, OpId::act)) {
    auto x = buffer(T * f, 1), y = buffer(T * f, 2), dx = buffer(T * f, 3);
    cs.push_back({mem_row(*op, "fwd", T, f), [=] { cpu::gelu_forward(y->data(), x->data(), T * f); }});
    cs.push_back({mem_row(*op, "bwd", T, f), [=] {
                    std::fill(dx->begin(), dx->end(), 0.0f);
                    cpu::gelu_backward(dx->data(), x->data(), y->data(), T * f);
                  }});
  }
  if (const Op* op = find_op(ops, OpId::embedding)) {
    auto wte = buffer(V * h, 1), out = buffer(T * h, 2), dwte = buffer(V * h, 3);
    auto tok = tokens(T, V);
    cs.push_back({mem_row(*op, "fwd", T, h), [=] { cpu::embedding_forward(out->data(), tok->data(), wte->data(), T, h); }});
    cs.push_back({mem_row(*op, "bwd", T, h), [=] { cpu::embedding_backward(dwte->data(), tok->data(), out->data(), T, h); }});
  }
  if (const Op* op = find_op(ops, OpId::cross_entropy)) {
    auto logits = buffer(T * V, 1), losses = buffer(T, 2);
    auto tgt = tokens(T, V);
    cs.push_back(
        {mem_row(*op, "fwd", T, V), [=] { cpu::crossentropy_forward(losses->data(), logits->data(), tgt->data(), T, V); }});
    cs.push_back({mem_row(*op, "bwd", T, V), [=] { cpu::crossentropy_backward(logits->data(), tgt->data(), 1.0f / T, T, V); }});
  }
  return cs;
}

std::vector<KernelCase> adamw_cases(int64_t n) {
  auto p = buffer(n, 1), g = buffer(n, 2), m = buffer(n, 3), v = buffer(n, 4);
  std::fill(v->begin(), v->end(), 0.01f);
  KernelRow r;
  r.op = "adamw";
  r.pass = "fwd";
  r.dtype = "fp32";
  r.m = n;
  r.flops = 14.0 * double(n);
  r.bytes = 28.0 * double(n);  // read param, grad, m, v; write param, m, v (fp32)
  r.impl = "mplan profiles cpu kernel";
  auto step = std::make_shared<int>(0);
  return {
      {r, [=] { cpu::adamw_update(p->data(), g->data(), m->data(), v->data(), n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, ++*step); }}};
}

}  // namespace

std::vector<KernelBatch> cpu_kernel_plan(bool quick) {
  Grid g = grid(quick);
  std::vector<KernelBatch> plan;
  for (int64_t h : g.hidden) {
    ModelSpec m = grid_model("profile-grid-h" + std::to_string(h), h, 64, g.vocab);
    for (auto [b, s] : g.bs) {
      std::vector<Op> ops = ops_at(m, b, s);
      std::string at = " h=" + std::to_string(h) + " b=" + std::to_string(b) + " s=" + std::to_string(s);
      for (const auto& op : ops)
        if (op.kind == OpKind::gemm) plan.push_back({op.name + at, 3, [op] { return gemm_cases(op); }});
      if (const Op* a = find_op(ops, OpId::attn_core))
        plan.push_back({"attn_core" + at, 2, [op = *a] { return attention_cases(op); }});
      plan.push_back({"memory-bound ops" + at, 11, [ops, m, b = b, s = s] { return memory_cases(ops, m, b, s); }});
    }
  }
  for (int64_t n : g.adamw_params) plan.push_back({"adamw n=" + std::to_string(n), 1, [n] { return adamw_cases(n); }});
  return plan;
}

RepPolicy cpu_rep_policy(bool quick) {
  RepPolicy p;
  if (quick) {
    p.warmup = 1, p.min_reps = 3, p.max_reps = 30, p.min_time_s = 0.02;
  } else {
    p.warmup = 2, p.min_reps = 5, p.max_reps = 200, p.min_time_s = 0.25;
  }
  return p;
}

Timing time_kernel(const std::function<void()>& run, const RepPolicy& p) {
  for (int i = 0; i < p.warmup; ++i) run();
  auto t = Clock::now();
  run();
  double one = seconds_since(t);
  int inner = one >= p.min_rep_s ? 1 : int(std::min(10000.0, std::ceil(p.min_rep_s / std::max(one, 1e-9))));
  std::vector<double> samples;
  double total = one;
  while (int(samples.size()) < p.min_reps || (total < p.min_time_s && int(samples.size()) < p.max_reps)) {
    auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) run();
    double dt = seconds_since(t0);
    samples.push_back(dt / inner);
    total += dt;
  }
  stats::Summary s = stats::summarize(samples);
  return {s.median, s.p10, s.p90, int(samples.size())};
}

double measure_memory_gbps(bool quick) {
  const int64_t n = quick ? (int64_t(1) << 22) : (int64_t(1) << 24);  // 16 or 64 MiB per array
  std::vector<float> a(size_t(n), 0.0f), b(size_t(n), 1.0f), c(size_t(n), 2.0f);
  double best = 0;
  for (int r = 0; r < (quick ? 4 : 8); ++r) {
    auto t0 = Clock::now();
    const float s = 3.0f;
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    const float* __restrict pc = c.data();
    for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    double dt = seconds_since(t0);
    best = std::max(best, 3.0 * 4.0 * double(n) / dt / 1e9);
  }
  volatile float sink = a[size_t(n / 2)];
  (void)sink;
  return best;
}

Device cpu_device_row() {
  HostInfo h = host_info();
  Device d;
  d.kind = "cpu";
  d.name = h.cpu_model + " (one core, OpenBLAS " + h.openblas_core + ", fp32)";
  d.host = h.hostname;
  d.memory_gib = h.memory_gib / double(h.cpus.size());
  d.sm_count = 1;
  d.created_at = utc_now_iso();
  d.source = "measured on " + h.hostname + " " + d.created_at.substr(0, 10);
  d.cluster = "local-cpu";
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  d.libraries = {{"openblas_config", h.openblas_config},
                 {"openblas_core", h.openblas_core},
                 {"OPENBLAS_CORETYPE", coretype ? coretype : ""},
                 {"blas_threads", 1},
                 {"cores", int(h.cpus.size())},
                 {"avx512", h.avx512},
                 {"loadavg_at_start", load_average()}};
  return d;
}

Expected<CpuProfileResult> profile_cpu_kernels(ProfileDb& db, Device& dev, const CpuProfileOptions& o) {
  CpuProfileResult res;
  res.device_id = dev.id;
  HostInfo h = host_info();
  ScopedPin pin(h.cpus.front());
  if (!pin.ok()) res.notes.push_back("could not pin to CPU " + std::to_string(h.cpus.front()));
  auto sess = db.begin_session(dev.id, "kernels", o.command);
  if (!sess) return sess.error();

  std::vector<KernelBatch> plan = cpu_kernel_plan(o.quick);
  int total = 1;
  for (const auto& b : plan) total += b.cases;
  Progress bar("profile kernels", total, o.progress);
  RepPolicy pol = cpu_rep_policy(o.quick);

  bar.step("memory bandwidth", 0);
  res.memory_gbps = measure_memory_gbps(o.quick);
  dev.hbm_gbps = res.memory_gbps;
  bar.step("memory bandwidth");

  double best_gemm = 0;
  for (const auto& batch : plan) {
    if (stop_requested()) break;
    std::vector<KernelCase> cases = batch.make();
    std::vector<KernelRow> rows;
    for (auto& c : cases) {
      if (stop_requested()) break;
      bar.step(batch.name + " " + c.row.pass, 0);
      Timing t = time_kernel(c.run, pol);
      KernelRow r = c.row;
      r.device_id = dev.id;
      r.session_id = *sess;
      r.reps = t.reps;
      r.median_us = t.median_s * 1e6, r.p10_us = t.p10_s * 1e6, r.p90_us = t.p90_s * 1e6;
      if (op_kind_of(r.op) == OpKind::gemm) best_gemm = std::max(best_gemm, r.flops / t.median_s / 1e9);
      rows.push_back(r);
      bar.step(batch.name + " " + c.row.pass);
    }
    if (stop_requested()) break;  // an interrupted batch is dropped whole
    if (auto s = db.insert_kernels(rows); !s) return s.error();
    res.kernel_rows += int(rows.size());
    if (best_gemm > res.peak_gflops) {
      res.peak_gflops = best_gemm;
      dev.peak_tflops["fp32"] = best_gemm / 1000.0;
      if (auto s = db.update_device(dev); !s) return s.error();
    }
  }
  dev.libraries["loadavg_at_end_of_kernels"] = load_average();
  if (auto s = db.update_device(dev); !s) return s.error();
  res.interrupted = stop_requested();
  bar.finish(std::to_string(res.kernel_rows) + " kernel rows" + (res.interrupted ? " (interrupted)" : "") + ", best GEMM " +
             std::to_string(int(res.peak_gflops)) + " GFLOP/s, memory " + std::to_string(int(res.memory_gbps)) + " GB/s");
  if (auto s = db.finish_session(*sess, res.interrupted ? "interrupted" : "complete"); !s) return s.error();
  return res;
}

}  // namespace mplan::profiles
