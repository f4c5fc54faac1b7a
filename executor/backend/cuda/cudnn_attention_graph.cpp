// The cuDNN SDPA forward/backward graphs as data and the support check (see cudnn_attention_graph.h).
// Node order and shapes follow the composite SDPA graphs cuDNN's flash engines match (as built by
// cudnn-frontend's SDPA nodes): scores = matmul(Q, K^T) * scale, causal mask by row/column index
// (row >= column kept, the rest -inf), softmax with the log-sum-exp saved, matmul with V.
#include "executor/backend/cuda/cudnn_attention_graph.h"

#include <algorithm>
#include <cstdio>

namespace mplan::exec::gpu::sdpa {

std::string describe(const Shape& s) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "B=%lld Tq=%lld Tk=%lld Hq=%lld Hkv=%lld D=%lld Dv=%lld", (long long)s.B, (long long)s.Tq,
                (long long)s.Tk, (long long)s.Hq, (long long)s.Hkv, (long long)s.D, (long long)s.Dv);
  return buf;
}

std::string support_error(const Shape& s, int64_t version, int sm) {
  const std::string what = "cuDNN attention (" + describe(s) + "): ";
  if (version < kMinCudnnVersion)
    return what + "cuDNN " + std::to_string(version) + " is too old: the fused flash graphs need cuDNN >= 9.0.0 (" +
           std::to_string(kMinCudnnVersion) + ")";
  if (sm < 80)
    return what + "needs a GPU of compute capability >= 8.0 (found " + std::to_string(sm / 10) + "." + std::to_string(sm % 10) +
           ")";
  if (s.D != s.Dv) return what + "needs equal query/key and value head dims (D == Dv)";
  if (s.D != 64 && s.D != 128) return what + "head dim " + std::to_string(s.D) + " is not supported: supported are 64 and 128";
  if (s.Hkv <= 0 || s.Hq % s.Hkv != 0) return what + "query heads must be a multiple of key/value heads (GQA)";
  if (s.Tq != s.Tk)
    return what + "needs Tq == Tk (a causal mask over whole sequences; context-parallel blocks are not supported)";
  if (s.B <= 0 || s.Tq <= 0) return what + "needs B > 0 and T > 0";
  return {};
}

const TensorDesc* Graph::find(int64_t u) const {
  for (const TensorDesc& t : tensors)
    if (t.uid == u) return &t;
  return nullptr;
}

std::vector<int64_t> Graph::io_uids() const {
  std::vector<int64_t> r;
  for (const TensorDesc& t : tensors)
    if (!t.is_virtual && !t.by_value) r.push_back(t.uid);
  std::sort(r.begin(), r.end());
  return r;
}

int64_t softmax_sum_bytes(const Shape& s) { return s.B * s.Hq * s.Tq * int64_t(sizeof(float)); }
int64_t dq_accum_bytes(const Shape& s) { return s.B * s.Hq * s.Tq * s.D * int64_t(sizeof(float)); }

namespace {

using Dims = std::array<int64_t, 4>;

// Appends tensors and nodes; virtual tensors get uids from kFirstVirtual on.
class Builder {
 public:
  Graph g;
  int64_t tensor(int64_t u, std::string name, Dims dims, Dims strides, DType t) {
    g.tensors.push_back({u, std::move(name), dims, strides, t, false, false});
    return u;
  }
  int64_t scalar(int64_t u, std::string name) {
    g.tensors.push_back({u, std::move(name), {1, 1, 1, 1}, {1, 1, 1, 1}, DType::f32, false, true});
    return u;
  }
  int64_t virt(std::string name, Dims dims, Dims strides, DType t = DType::f32) {
    g.tensors.push_back({next_++, std::move(name), dims, strides, t, true, false});
    return next_ - 1;
  }
  int64_t op(OpKind k, Pw pw, Red red, std::vector<int64_t> in, int64_t out, std::string name, int64_t axis = -1,
             DType compute = DType::f32) {
    g.ops.push_back({k, pw, red, axis, compute, std::move(in), out, std::move(name)});
    return out;
  }
  int64_t pw(Pw m, std::vector<int64_t> in, int64_t out, std::string name, int64_t axis = -1, DType compute = DType::f32) {
    return op(OpKind::pointwise, m, Red::none, std::move(in), out, std::move(name), axis, compute);
  }
  int64_t matmul(int64_t a, int64_t b, int64_t c, std::string name) {
    return op(OpKind::matmul, Pw::none, Red::none, {a, b}, c, std::move(name));
  }
  int64_t reduce(Red r, int64_t x, int64_t y, std::string name) {
    return op(OpKind::reduction, Pw::none, r, {x}, y, std::move(name));
  }
  int64_t reshape(int64_t x, int64_t y, std::string name) {
    return op(OpKind::reshape, Pw::none, Red::none, {x}, y, std::move(name));
  }

 private:
  int64_t next_ = uid::kFirstVirtual;
};

// (B, T, H, Dim) row-major seen as (B, H, T, Dim), and transposed as (B, H, Dim, T).
Dims bhtd(int64_t B, int64_t T, int64_t H, int64_t Dim) { return {B, H, T, Dim}; }
Dims bhtd_strides(int64_t T, int64_t H, int64_t Dim) { return {T * H * Dim, Dim, H * Dim, 1}; }
Dims bhdt(int64_t B, int64_t T, int64_t H, int64_t Dim) { return {B, H, Dim, T}; }
Dims bhdt_strides(int64_t T, int64_t H, int64_t Dim) { return {T * H * Dim, Dim, 1, H * Dim}; }
Dims rows_dims(const Shape& s) { return {s.B, s.Hq, s.Tq, 1}; }
Dims rows_strides(const Shape& s) { return {s.Hq * s.Tq, s.Tq, 1, 1}; }
Dims score_dims(const Shape& s) { return {s.B, s.Hq, s.Tq, s.Tk}; }
Dims score_strides(const Shape& s) { return {s.Hq * s.Tq * s.Tk, s.Tq * s.Tk, s.Tk, 1}; }

// scale * matmul(Q, K^T) with the causal mask applied (row >= column kept, else -inf).
int64_t masked_scores(Builder& b, const Shape& s, int64_t q, int64_t kt) {
  const Dims sd = score_dims(s), ss = score_strides(s);
  const int64_t raw = b.matmul(q, kt, b.virt("s", sd, ss), "matmul_q_kt");
  const int64_t scaled = b.pw(Pw::mul, {raw, uid::Scale}, b.virt("s_scaled", sd, ss), "mul_scale");
  // indices in int32, the comparison in boolean (as cudnn-frontend's causal mask)
  const int64_t row = b.pw(Pw::gen_index, {scaled}, b.virt("row_index", sd, ss, DType::i32), "gen_row_index", 2, DType::i32);
  const int64_t col = b.pw(Pw::gen_index, {scaled}, b.virt("col_index", sd, ss, DType::i32), "gen_col_index", 3, DType::i32);
  const int64_t keep =
      b.pw(Pw::cmp_ge, {row, col}, b.virt("causal_keep", sd, ss, DType::boolean), "row_ge_col", -1, DType::boolean);
  return b.pw(Pw::binary_select, {scaled, uid::NegInf, keep}, b.virt("s_masked", sd, ss), "select_causal");
}

}  // namespace

Graph forward_graph(const Shape& s) {
  Builder b;
  const int64_t q = b.tensor(uid::Q, "Q", bhtd(s.B, s.Tq, s.Hq, s.D), bhtd_strides(s.Tq, s.Hq, s.D), DType::bf16);
  const int64_t kt = b.tensor(uid::K, "K^T", bhdt(s.B, s.Tk, s.Hkv, s.D), bhdt_strides(s.Tk, s.Hkv, s.D), DType::bf16);
  const int64_t v = b.tensor(uid::V, "V", bhtd(s.B, s.Tk, s.Hkv, s.Dv), bhtd_strides(s.Tk, s.Hkv, s.Dv), DType::bf16);
  const int64_t o = b.tensor(uid::O, "O", bhtd(s.B, s.Tq, s.Hq, s.Dv), bhtd_strides(s.Tq, s.Hq, s.Dv), DType::bf16);
  const int64_t stats = b.tensor(uid::Stats, "Stats", rows_dims(s), rows_strides(s), DType::f32);
  b.scalar(uid::Scale, "attn_scale");
  b.scalar(uid::NegInf, "negative_inf");

  const int64_t masked = masked_scores(b, s, q, kt);
  const Dims sd = score_dims(s), ss = score_strides(s), rd = rows_dims(s), rs = rows_strides(s);
  const int64_t mx = b.reduce(Red::max, masked, b.virt("row_max", rd, rs), "reduce_max");
  const int64_t sub = b.pw(Pw::sub, {masked, mx}, b.virt("s_minus_max", sd, ss), "sub_max");
  const int64_t ex = b.pw(Pw::exp, {sub}, b.virt("exp", sd, ss), "exp");
  const int64_t sum = b.reduce(Red::add, ex, b.virt("row_sum", rd, rs), "reduce_sum");
  const int64_t lg = b.pw(Pw::log, {sum}, b.virt("log_sum", rd, rs), "log");
  b.pw(Pw::add, {mx, lg}, stats, "add_stats");
  // P enters the second matmul in the I/O type: the flash engines take bf16 (fp32) A/B operands only
  // (cuDNN 9.19 on sm_90 refuses an fp32 P with "MHA only supports FP32 I/O"; cudnn-frontend sets it too)
  const int64_t p = b.pw(Pw::div, {ex, sum}, b.virt("p", sd, ss, DType::bf16), "div_softmax");
  b.matmul(p, v, o, "matmul_p_v");
  return b.g;
}

Graph backward_graph(const Shape& s) {
  Builder b;
  const DType bf = DType::bf16;
  const int64_t q = b.tensor(uid::Q, "Q", bhtd(s.B, s.Tq, s.Hq, s.D), bhtd_strides(s.Tq, s.Hq, s.D), bf);
  const int64_t kt = b.tensor(uid::K, "K^T", bhdt(s.B, s.Tk, s.Hkv, s.D), bhdt_strides(s.Tk, s.Hkv, s.D), bf);
  const int64_t vt = b.tensor(uid::V, "V^T", bhdt(s.B, s.Tk, s.Hkv, s.Dv), bhdt_strides(s.Tk, s.Hkv, s.Dv), bf);
  const int64_t o = b.tensor(uid::O, "O", bhtd(s.B, s.Tq, s.Hq, s.Dv), bhtd_strides(s.Tq, s.Hq, s.Dv), bf);
  const int64_t dout = b.tensor(uid::dO, "dO", bhtd(s.B, s.Tq, s.Hq, s.Dv), bhtd_strides(s.Tq, s.Hq, s.Dv), bf);
  const int64_t stats = b.tensor(uid::Stats, "Stats", rows_dims(s), rows_strides(s), DType::f32);
  const int64_t dq = b.tensor(uid::dQ, "dQ", bhtd(s.B, s.Tq, s.Hq, s.D), bhtd_strides(s.Tq, s.Hq, s.D), bf);
  const int64_t dk = b.tensor(uid::dK, "dK", bhtd(s.B, s.Tk, s.Hkv, s.D), bhtd_strides(s.Tk, s.Hkv, s.D), bf);
  const int64_t dv = b.tensor(uid::dV, "dV", bhtd(s.B, s.Tk, s.Hkv, s.Dv), bhtd_strides(s.Tk, s.Hkv, s.Dv), bf);
  const int64_t ssum = b.tensor(uid::SoftmaxSum, "softmax_sum", rows_dims(s), rows_strides(s), DType::f32);
  const int64_t dqacc =
      b.tensor(uid::DqAccum, "dQ_accum", {s.B, s.Hq, s.Tq, s.D}, {s.Hq * s.Tq * s.D, s.Tq * s.D, s.D, 1}, DType::f32);
  b.scalar(uid::Scale, "attn_scale");
  b.scalar(uid::NegInf, "negative_inf");
  b.scalar(uid::One, "one");
  const Dims sd = score_dims(s), ss = score_strides(s), rd = rows_dims(s), rs = rows_strides(s);
  const Dims sdt = {s.B, s.Hq, s.Tk, s.Tq}, sst = {s.Hq * s.Tq * s.Tk, s.Tq * s.Tk, 1, s.Tk};  // transposed scores
  const bool gqa = s.Hq != s.Hkv;

  // softmax_sum = rowsum(dO * O)
  const int64_t dOO =
      b.pw(Pw::mul, {dout, o}, b.virt("dO_O", {s.B, s.Hq, s.Tq, s.Dv}, bhtd_strides(s.Tq, s.Hq, s.Dv)), "mul_dO_O");
  const int64_t red = b.reduce(Red::add, dOO, b.virt("dO_O_rowsum", rd, rs), "reduce_dO_O");
  b.pw(Pw::mul, {red, uid::One}, ssum, "softmax_sum");

  // P = exp(masked scores - Stats)
  const int64_t masked = masked_scores(b, s, q, kt);
  const int64_t sub = b.pw(Pw::sub, {masked, stats}, b.virt("s_minus_stats", sd, ss), "sub_stats");
  const int64_t p = b.pw(Pw::exp, {sub}, b.virt("p", sd, ss), "exp_p");

  // A key/value gradient `out` = x y of head size `hd`, summed over the query heads of a group under GQA
  // (through the per-query-head product `full`).
  auto kv_grad = [&](int64_t x, int64_t y, int64_t out, int64_t hd, const char* mm, const char* full, const char* sum) {
    if (!gqa) {
      b.matmul(x, y, out, mm);
      return;
    }
    const Dims fd = {s.B, s.Hq, s.Tk, hd}, fs = {s.Hq * s.Tk * hd, s.Tk * hd, hd, 1};
    b.reduce(Red::add, b.matmul(x, y, b.virt(full, fd, fs, bf), mm), out, sum);  // per-head product in the I/O type
  };

  // dV = P^T dO
  const int64_t pt = b.reshape(p, b.virt("p_t", sdt, sst, bf), "reshape_p");
  kv_grad(pt, dout, dv, s.Dv, "matmul_pt_dO", "dV_fullhead", "reduce_dV_heads");

  // dS = P * (dO V^T - softmax_sum) * scale
  const int64_t dp = b.matmul(dout, vt, b.virt("dP", sd, ss), "matmul_dO_vt");
  const int64_t dps = b.pw(Pw::sub, {dp, ssum}, b.virt("dP_minus_sum", sd, ss), "sub_softmax_sum");
  const int64_t ds0 = b.pw(Pw::mul, {dps, p}, b.virt("dS_unscaled", sd, ss), "mul_p");
  const int64_t ds = b.pw(Pw::mul, {ds0, uid::Scale}, b.virt("dS", sd, ss), "mul_scale_dS");

  // dK = dS^T Q
  const int64_t dst = b.reshape(ds, b.virt("dS_t", sdt, sst, bf), "reshape_dS");
  kv_grad(dst, q, dk, s.D, "matmul_dSt_q", "dK_fullhead", "reduce_dK_heads");

  // dQ = dS K (fp32 accumulator, then bf16)
  const int64_t k = b.reshape(kt, b.virt("K", bhtd(s.B, s.Tk, s.Hkv, s.D), bhtd_strides(s.Tk, s.Hkv, s.D), bf), "reshape_k");
  b.matmul(ds, k, dqacc, "matmul_dS_k");
  b.pw(Pw::identity, {dqacc}, dq, "identity_dQ");
  return b.g;
}

}  // namespace mplan::exec::gpu::sdpa
