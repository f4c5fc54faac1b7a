// The GPU-free part of the cuDNN attention path: the forward/backward graphs as data (strides of the
// executor's layouts, uids, shapes consistent node by node, every virtual tensor written once before
// it is read), the support check's refusals, MPLAN_ATTENTION parsing and the cuDNN library that loads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "executor/backend/cuda/cudnn_attention.h"
#include "executor/backend/cuda/cudnn_attention_graph.h"

using namespace mplan::exec::gpu;
using sdpa::Graph;
using sdpa::OpKind;
using sdpa::Shape;

namespace {

Shape shape(int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t D) { return {B, T, T, Hq, Hkv, D, D, 0.125f}; }

const sdpa::TensorDesc& tensor(const Graph& g, int64_t uid) {
  const sdpa::TensorDesc* t = g.find(uid);
  EXPECT_NE(t, nullptr) << "uid " << uid;
  static const sdpa::TensorDesc none;
  return t ? *t : none;
}

// Every input exists and is written before it is read (or is bound by the caller); every tensor
// is written at most once; every virtual tensor is written and read.
void expect_well_formed(const Graph& g) {
  std::set<int64_t> written, read;
  for (const sdpa::OpDesc& o : g.ops) {
    SCOPED_TRACE(o.name);
    for (int64_t in : o.in) {
      const sdpa::TensorDesc& t = tensor(g, in);
      if (t.is_virtual) {
        EXPECT_TRUE(written.count(in)) << t.name << " read before it is written";
      }
      read.insert(in);
    }
    EXPECT_TRUE(written.insert(o.out).second) << tensor(g, o.out).name << " written twice";
    EXPECT_FALSE(tensor(g, o.out).by_value);
  }
  for (const sdpa::TensorDesc& t : g.tensors) {
    if (t.is_virtual) {
      EXPECT_TRUE(written.count(t.uid)) << t.name;
      EXPECT_TRUE(read.count(t.uid)) << t.name << " is computed but unused";
    } else {
      EXPECT_TRUE(written.count(t.uid) || read.count(t.uid)) << t.name << " is bound but unused";
    }
  }
}

// Node-by-node shapes: matmul (.., M, K) x (.., K, N) -> (.., M, N) with the heads of an operand
// dividing the output's (GQA broadcast); pointwise inputs broadcast to the output; reductions keep
// or collapse each dim (heads to a divisor).
void expect_consistent_shapes(const Graph& g) {
  for (const sdpa::OpDesc& o : g.ops) {
    SCOPED_TRACE(o.name);
    const auto& y = tensor(g, o.out).dims;
    if (o.kind == OpKind::matmul) {
      const auto& a = tensor(g, o.in[0]).dims;
      const auto& b = tensor(g, o.in[1]).dims;
      EXPECT_EQ(a[0], y[0]);
      EXPECT_EQ(b[0], y[0]);
      EXPECT_EQ(y[1] % a[1], 0);
      EXPECT_EQ(y[1] % b[1], 0);
      EXPECT_EQ(a[2], y[2]);
      EXPECT_EQ(a[3], b[2]);
      EXPECT_EQ(b[3], y[3]);
    } else if (o.kind == OpKind::pointwise) {
      for (int64_t in : o.in)
        for (int d = 0; d < 4; ++d) {
          const int64_t x = tensor(g, in).dims[size_t(d)];
          EXPECT_TRUE(x == y[size_t(d)] || x == 1) << tensor(g, in).name << " dim " << d;
        }
    } else if (o.kind == OpKind::reduction) {
      const auto& x = tensor(g, o.in[0]).dims;
      for (int d = 0; d < 4; ++d)
        EXPECT_TRUE(y[size_t(d)] == x[size_t(d)] || (y[size_t(d)] > 0 && x[size_t(d)] % y[size_t(d)] == 0));
    } else {  // reshape: same element count
      const auto& x = tensor(g, o.in[0]).dims;
      EXPECT_EQ(x[0] * x[1] * x[2] * x[3], y[0] * y[1] * y[2] * y[3]);
    }
  }
}

int count_ops(const Graph& g, const std::string& name) {
  int n = 0;
  for (const sdpa::OpDesc& o : g.ops) n += o.name == name;
  return n;
}

}  // namespace

TEST(CudaCudnnAttention, ForwardTensorsUseTheExecutorLayouts) {
  const Shape s = shape(2, 100, 8, 2, 64);
  const Graph g = sdpa::forward_graph(s);
  const auto& q = tensor(g, sdpa::uid::Q);
  EXPECT_EQ(q.dims, (std::array<int64_t, 4>{2, 8, 100, 64}));
  EXPECT_EQ(q.strides, (std::array<int64_t, 4>{100 * 8 * 64, 64, 8 * 64, 1}));  // (B, T, Hq, D) row-major
  EXPECT_EQ(q.dtype, sdpa::DType::bf16);
  const auto& kt = tensor(g, sdpa::uid::K);  // K^T: (B, Hkv, D, T) over (B, T, Hkv, D) memory
  EXPECT_EQ(kt.dims, (std::array<int64_t, 4>{2, 2, 64, 100}));
  EXPECT_EQ(kt.strides, (std::array<int64_t, 4>{100 * 2 * 64, 64, 1, 2 * 64}));
  const auto& stats = tensor(g, sdpa::uid::Stats);  // the executor's lse (B, Hq, T), fp32
  EXPECT_EQ(stats.dims, (std::array<int64_t, 4>{2, 8, 100, 1}));
  EXPECT_EQ(stats.strides, (std::array<int64_t, 4>{8 * 100, 100, 1, 1}));
  EXPECT_EQ(stats.dtype, sdpa::DType::f32);
  EXPECT_EQ(g.io_uids(), (std::vector<int64_t>{sdpa::uid::Q, sdpa::uid::K, sdpa::uid::V, sdpa::uid::O, sdpa::uid::Stats}));
  EXPECT_TRUE(tensor(g, sdpa::uid::Scale).by_value);
  EXPECT_TRUE(tensor(g, sdpa::uid::NegInf).by_value);
  for (const sdpa::TensorDesc& t : g.tensors) EXPECT_EQ(t.is_virtual, t.uid >= sdpa::uid::kFirstVirtual) << t.name;
}

TEST(CudaCudnnAttention, GraphsAreWellFormedAndShapeConsistent) {
  for (const Shape& s : {shape(1, 64, 4, 4, 64), shape(2, 100, 8, 2, 128), shape(3, 33, 6, 1, 64)}) {
    SCOPED_TRACE(sdpa::describe(s));
    for (const Graph& g : {sdpa::forward_graph(s), sdpa::backward_graph(s)}) {
      expect_well_formed(g);
      expect_consistent_shapes(g);
      EXPECT_EQ(count_ops(g, "row_ge_col"), 1);  // the causal mask, once per graph
      EXPECT_EQ(count_ops(g, "select_causal"), 1);
      for (const sdpa::OpDesc& o : g.ops) {  // index math in int32, the comparison in boolean
        if (o.pw == sdpa::Pw::gen_index) {
          EXPECT_EQ(tensor(g, o.out).dtype, sdpa::DType::i32) << o.name;
        }
        if (o.pw == sdpa::Pw::cmp_ge) {
          EXPECT_EQ(o.compute, sdpa::DType::boolean) << o.name;
        }
      }
    }
  }
}

// The flash engines take a matmul's A and B in the I/O type (bf16): an fp32 softmax output P before the
// second forward matmul made cuDNN 9.19 on an H200 refuse the graph ("MHA only supports FP32 I/O").
// The one fp32 operand the backward keeps is dS into dQ's fp32 accumulator, as cudnn-frontend builds it.
TEST(CudaCudnnAttention, MatmulOperandsAreInTheIoTypeButDsIntoTheDqAccumulator) {
  for (const Shape& s : {shape(1, 64, 4, 4, 64), shape(2, 100, 8, 2, 128)}) {
    SCOPED_TRACE(sdpa::describe(s));
    for (const Graph& g : {sdpa::forward_graph(s), sdpa::backward_graph(s)}) {
      for (const sdpa::OpDesc& o : g.ops) {
        if (o.kind != sdpa::OpKind::matmul) continue;
        EXPECT_EQ(tensor(g, o.in[1]).dtype, sdpa::DType::bf16) << o.name;
        if (o.name != "matmul_dS_k") {
          EXPECT_EQ(tensor(g, o.in[0]).dtype, sdpa::DType::bf16) << o.name;
        }
        if (o.out >= sdpa::uid::kFirstVirtual && o.name != "matmul_q_kt" && o.name != "matmul_dO_vt") {
          EXPECT_EQ(tensor(g, o.out).dtype, sdpa::DType::bf16) << o.name;  // GQA's per-query-head gradients
        }
      }
    }
  }
}

TEST(CudaCudnnAttention, BackwardSumsGradientsOverQueryHeadsOnlyUnderGqa) {
  const Graph mha = sdpa::backward_graph(shape(1, 64, 4, 4, 64)), gqa = sdpa::backward_graph(shape(1, 64, 8, 2, 64));
  EXPECT_EQ(count_ops(mha, "reduce_dK_heads") + count_ops(mha, "reduce_dV_heads"), 0);
  EXPECT_EQ(count_ops(gqa, "reduce_dK_heads"), 1);
  EXPECT_EQ(count_ops(gqa, "reduce_dV_heads"), 1);
  const auto& dk = tensor(gqa, sdpa::uid::dK);
  EXPECT_EQ(dk.dims, (std::array<int64_t, 4>{1, 2, 64, 64}));
  EXPECT_EQ(gqa.io_uids().size(), 11u);  // Q K V O Stats dO dQ dK dV softmax_sum dQ_accum
  EXPECT_EQ(sdpa::dq_accum_bytes(shape(1, 64, 8, 2, 64)), int64_t(1 * 8 * 64 * 64 * 4));
  EXPECT_EQ(sdpa::softmax_sum_bytes(shape(1, 64, 8, 2, 64)), int64_t(8 * 64 * 4));
}

TEST(CudaCudnnAttention, SupportCheckRefusesWithWhatIsSupported) {
  EXPECT_EQ(sdpa::support_error(shape(2, 128, 8, 2, 64), 91900, 90), "");
  EXPECT_EQ(sdpa::support_error(shape(2, 128, 8, 8, 128), 90000, 80), "");
  auto refused = [](const Shape& s, int64_t v, int sm, const std::string& needle) {
    const std::string e = sdpa::support_error(s, v, sm);
    EXPECT_NE(e.find(needle), std::string::npos) << e;
  };
  refused(shape(1, 64, 4, 4, 96), 91900, 90, "supported are 64 and 128");
  refused(shape(1, 64, 4, 4, 256), 91900, 90, "supported are 64 and 128");
  refused(shape(1, 64, 4, 4, 64), 8907, 90, "cuDNN >= 9.0.0");
  refused(shape(1, 64, 4, 4, 64), 91900, 75, "compute capability >= 8.0");
  refused(shape(1, 64, 6, 4, 64), 91900, 90, "multiple of key/value heads");
  refused({1, 32, 64, 4, 4, 64, 64, 1.0f}, 91900, 90, "context-parallel");
  refused({1, 64, 64, 4, 4, 64, 128, 1.0f}, 91900, 90, "D == Dv");
  EXPECT_NE(sdpa::support_error(shape(1, 64, 4, 4, 96), 91900, 90).find("Hq=4"), std::string::npos);  // names the shape
}

TEST(CudaCudnnAttention, EnvironmentSelectsThePath) {
  AttentionRequest r = AttentionRequest::cudnn;
  std::string err;
  unsetenv("MPLAN_ATTENTION");
  EXPECT_TRUE(attention_request_from_env(&r, &err));
  EXPECT_EQ(r, AttentionRequest::automatic);
  setenv("MPLAN_ATTENTION", "simt", 1);
  EXPECT_TRUE(attention_request_from_env(&r, &err));
  EXPECT_EQ(r, AttentionRequest::simt);
  setenv("MPLAN_ATTENTION", "cudnn", 1);
  EXPECT_TRUE(attention_request_from_env(&r, &err));
  EXPECT_EQ(r, AttentionRequest::cudnn);
  setenv("MPLAN_ATTENTION", "flash3", 1);
  EXPECT_FALSE(attention_request_from_env(&r, &err));
  EXPECT_NE(err.find("'simt'"), std::string::npos) << err;
  EXPECT_NE(err.find("'cudnn'"), std::string::npos) << err;
  unsetenv("MPLAN_ATTENTION");
}

// Unset, cuDNN serves bf16 plans whose shape it supports; fp32 plans keep the exact kernels; a shape
// cuDNN cannot run falls back with a note, unless cuDNN was asked for (then it is refused by name).
TEST(CudaCudnnAttention, AutomaticChoiceTakesCudnnForSupportedBf16Plans) {
  const Shape ok = shape(1, 64, 8, 2, 128), d96 = shape(1, 64, 8, 2, 96);
  AttentionDecision d = decide_attention(AttentionRequest::automatic, true, ok, 91900, 90);
  EXPECT_TRUE(d.cudnn);
  EXPECT_TRUE(d.note.empty() && d.error.empty());
  d = decide_attention(AttentionRequest::automatic, false, ok, 91900, 90);
  EXPECT_FALSE(d.cudnn);
  EXPECT_TRUE(d.error.empty());
  d = decide_attention(AttentionRequest::automatic, true, d96, 91900, 90);
  EXPECT_FALSE(d.cudnn);
  EXPECT_NE(d.note.find("head dim 96"), std::string::npos) << d.note;
  EXPECT_TRUE(d.error.empty());
  d = decide_attention(AttentionRequest::automatic, true, ok, 91900, 75);  // pre-Ampere
  EXPECT_FALSE(d.cudnn);
  EXPECT_FALSE(d.note.empty());
  d = decide_attention(AttentionRequest::cudnn, false, ok, 91900, 90);  // asked for: even an fp32 plan
  EXPECT_TRUE(d.cudnn);
  d = decide_attention(AttentionRequest::cudnn, true, d96, 91900, 90);
  EXPECT_FALSE(d.cudnn);
  EXPECT_NE(d.error.find("MPLAN_ATTENTION=cudnn"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("head dim 96"), std::string::npos) << d.error;
  d = decide_attention(AttentionRequest::simt, true, ok, 91900, 90);
  EXPECT_FALSE(d.cudnn);
  EXPECT_TRUE(d.note.empty() && d.error.empty());
}

TEST(CudaCudnnAttention, LinkedLibraryIsCudnn9) {
  const int64_t v = cudnn_runtime_version();  // no device needed
  EXPECT_GE(v, sdpa::kMinCudnnVersion);
  EXPECT_LT(v, 100000);
}

// cuDNN itself checks each tensor and node (types, dims, strides, modes) when it finalizes them,
// which needs no device: everything up to the operation graph (that one needs a handle).
TEST(CudaCudnnAttention, CudnnAcceptsEveryTensorAndNode) {
  for (const Shape& s : {shape(1, 64, 4, 4, 64), shape(2, 100, 8, 2, 128)}) {
    SCOPED_TRACE(sdpa::describe(s));
    EXPECT_EQ(cudnn_validate_operations(sdpa::forward_graph(s), s), "");
    EXPECT_EQ(cudnn_validate_operations(sdpa::backward_graph(s), s), "");
  }
}

TEST(CudaCudnnAttention, CudnnRefusalNamesTheNode) {
  const Shape s = shape(1, 64, 4, 4, 64);
  Graph g = sdpa::forward_graph(s);
  for (sdpa::TensorDesc& t : g.tensors)
    if (t.uid == sdpa::uid::Q) t.dims[3] = -1;  // an impossible dimension
  const std::string e = cudnn_validate_operations(g, s);
  EXPECT_NE(e.find("tensor Q"), std::string::npos) << e;
}

TEST(CudaCudnnAttention, CudnnChecksNodeShapes) {
  const Shape s = shape(1, 64, 4, 4, 64);
  Graph g = sdpa::forward_graph(s);
  for (sdpa::TensorDesc& t : g.tensors)
    if (t.uid == sdpa::uid::V) t.dims[2] = 32;  // V with fewer keys than the scores have columns
  const std::string e = cudnn_validate_operations(g, s);
  EXPECT_NE(e.find("node matmul_p_v"), std::string::npos) << e;
}
