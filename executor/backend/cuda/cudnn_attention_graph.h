// cuDNN fused scaled-dot-product attention as data: the tensors (uid, dims, strides, type) and
// nodes (matmul, pointwise, reduction, reshape) of the forward and backward graphs that cuDNN's
// fused flash-attention engines recognise, plus the support check. Pure host code (no cuDNN call):
// cudnn_attention.cpp turns a Graph into backend descriptors; the unit tests check the layout here.
// Layouts are the executor's: q (B, T, Hq, D), k/v (B, T, Hkv, D), out (B, T, Hq, Dv) row-major,
// seen by cuDNN as (B, H, T, D) with strides (T*H*D, D, H*D, 1); stats = lse (B, Hq, T) fp32.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mplan::exec::gpu::sdpa {

struct Shape {
  int64_t B = 0, Tq = 0, Tk = 0, Hq = 0, Hkv = 0, D = 0, Dv = 0;
  float scale = 1.0f;
};
std::string describe(const Shape& s);  // "B=2 Tq=128 Tk=128 Hq=8 Hkv=2 D=64 Dv=64"

// Oldest cuDNN the graphs are written for (fused flash forward + backward with GQA: 9.0.0).
constexpr int64_t kMinCudnnVersion = 90000;
// Empty when cuDNN `version` (cudnnGetVersion()) on a GPU of compute capability `sm` (e.g. 90) can
// run attention of shape `s` with a causal mask; otherwise what is supported.
std::string support_error(const Shape& s, int64_t version, int sm);

enum class DType { bf16, f32, i32, boolean };
enum class OpKind { matmul, pointwise, reduction, reshape };
// (the order of DType and Pw is that of cudnn_attention.cpp's tables)
enum class Pw { none, mul, sub, add, div, exp, log, gen_index, cmp_ge, binary_select, identity };
enum class Red { none, max, add };

struct TensorDesc {
  int64_t uid = 0;
  std::string name;
  std::array<int64_t, 4> dims{}, strides{};
  DType dtype = DType::f32;
  bool is_virtual = false;
  bool by_value = false;  // a host scalar passed in the variant pack
};

// Inputs in cuDNN's order: matmul (A, B) -> C; pointwise (X[, B[, T]]) -> Y; reduction X -> Y;
// reshape X -> Y.
struct OpDesc {
  OpKind kind = OpKind::pointwise;
  Pw pw = Pw::none;
  Red red = Red::none;
  int64_t axis = -1;           // gen_index only
  DType compute = DType::f32;  // pointwise math precision (int32 for indices, boolean for comparisons)
  std::vector<int64_t> in;
  int64_t out = 0;
  std::string name;
};

struct Graph {
  std::vector<TensorDesc> tensors;
  std::vector<OpDesc> ops;
  const TensorDesc* find(int64_t uid) const;
  // Non-virtual tensors the caller binds, in uid order.
  std::vector<int64_t> io_uids() const;
};

// Unique ids of the graphs' non-virtual tensors.
namespace uid {
constexpr int64_t Q = 1, K = 2, V = 3, O = 4, Stats = 5, dO = 6, dQ = 7, dK = 8, dV = 9;
constexpr int64_t Scale = 10, NegInf = 11, One = 12;  // by-value scalars
constexpr int64_t SoftmaxSum = 13, DqAccum = 14;      // fp32 scratch of the backward
constexpr int64_t kFirstVirtual = 100;
}  // namespace uid

// O = softmax(scale Q K^T, causal) V and Stats = log-sum-exp of each masked, scaled row.
Graph forward_graph(const Shape& s);
// dQ, dK, dV from Q, K, V, O, dO and Stats (rows of dO.O summed into SoftmaxSum; dQ accumulated in
// fp32 DqAccum, which must be zero before each execution).
Graph backward_graph(const Shape& s);
// fp32 scratch bytes the backward binds besides cuDNN's own workspace.
int64_t softmax_sum_bytes(const Shape& s);
int64_t dq_accum_bytes(const Shape& s);

}  // namespace mplan::exec::gpu::sdpa
