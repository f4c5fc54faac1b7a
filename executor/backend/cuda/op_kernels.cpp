// The executor's CUDA backend ops timed by the CUDA profile (see op_kernels.h).
#include "executor/backend/cuda/op_kernels.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "executor/backend/cuda/cuda_backend.h"
#include "executor/backend/cuda/cudnn_attention.h"

namespace mplan::exec {

OpKernelCall op_kernel_call(const Op& op, const ModelSpec& m, int64_t T) {
  OpKernelCall c;
  c.N = T, c.C = m.hidden_size;
  c.H = m.num_attention_heads;
  c.Hkv = m.num_query_groups > 0 ? m.num_query_groups : m.num_attention_heads;
  c.D = m.kv_channels > 0 ? m.kv_channels : m.hidden_size / std::max(1, m.num_attention_heads);
  c.F = m.ffn_hidden_size;
  switch (op.id) {
    case OpId::attn_core:
      c.call = BackendCall::attention;
      break;
    case OpId::attn_norm:
    case OpId::mlp_norm:
    case OpId::final_norm:
      c.call = m.norm == NormKind::rmsnorm ? BackendCall::rmsnorm : BackendCall::layernorm;
      break;
    case OpId::act:
      c.call = BackendCall::act;
      break;
    case OpId::attn_residual:
    case OpId::mlp_residual:
      c.call = BackendCall::add;  // the backward passes the gradient through (a copy in the layers)
      break;
    case OpId::rope:
      if (m.position_embedding == PositionEmbedding::rope) c.call = BackendCall::rope;
      break;
    default:
      break;
  }
  c.has_backward = c.call != BackendCall::none && c.call != BackendCall::add;
  return c;
}

struct BackendOpKernels::Buffers {
  int64_t elems = 0, rows = 0;
  Tensor a, b, c, d, e, f, g, h, stat1, stat2;
  std::vector<int32_t> pos;  // token positions on the host, as the layers pass them (cuDNN attention needs that)
};

std::unique_ptr<profiles::OpKernels> make_backend_op_kernels(int device, std::string* error) {
  CudaBackendOptions o;
  o.device = device;
  // the attention a bf16 plan of the grid's shapes would run (the rows model bf16 training)
  gpu::AttentionRequest request = gpu::AttentionRequest::automatic;
  if (!gpu::attention_request_from_env(&request, error)) return nullptr;
  if (request != gpu::AttentionRequest::simt) {
    gpu::sdpa::Shape s;  // the GPU grid's attention: 32 heads of 128 (profiles/cuda_profiler.cpp)
    s.B = s.Tq = s.Tk = 1;
    s.Hq = s.Hkv = 32;
    s.D = s.Dv = 128;
    const gpu::AttentionDecision d = gpu::decide_attention_on(device, request, true, s);
    if (!d.error.empty()) {
      *error = d.error;
      return nullptr;
    }
    o.cudnn_attention = d.cudnn;
    o.attention_note = d.note;
  }
  return std::make_unique<BackendOpKernels>(std::make_unique<CudaBackend>(o));
}

BackendOpKernels::BackendOpKernels(std::unique_ptr<CudaBackend> be)
    : owned_(std::move(be)), be_(*owned_), buf_(std::make_unique<Buffers>()) {}
BackendOpKernels::~BackendOpKernels() = default;

std::string BackendOpKernels::impl() const { return "mplan executor CUDA backend: " + be_.describe(); }

void BackendOpKernels::sync() { be_.synchronize(); }

namespace {
ActKind act_of(const ModelSpec& m) {
  return m.activation == Activation::swiglu         ? ActKind::swiglu
         : m.activation == Activation::squared_relu ? ActKind::squared_relu
                                                    : ActKind::gelu;
}
}  // namespace

bool BackendOpKernels::prepare(const Op& op, const ModelSpec& m, int64_t T, std::function<void()>* fwd,
                               std::function<void()>* bwd) {
  const OpKernelCall c = op_kernel_call(op, m, T);
  if (c.call == BackendCall::none) return false;
  Buffers& B = *buf_;
  // one set of buffers, large enough for every op of the grid at this T (random inputs, so
  // exp/norm kernels see realistic values)
  const int64_t need = std::max({c.N * c.C, c.N * 2 * c.F, c.N * c.H * c.D}), rows = std::max(c.N, c.H * c.N);
  if (need > B.elems || rows > B.rows) {
    B = Buffers();
    B.elems = need, B.rows = rows;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> h(static_cast<size_t>(need));
    for (float& x : h) x = nd(rng);
    for (Tensor* t : {&B.a, &B.b, &B.c, &B.d, &B.e, &B.f, &B.g, &B.h}) {
      *t = be_.alloc({need});
      be_.upload(t->data(), h.data(), need);
    }
    B.stat1 = be_.alloc({rows});
    B.stat2 = be_.alloc({rows});
    B.pos.assign(static_cast<size_t>(rows), 0);
    for (size_t i = 0; i < B.pos.size(); ++i) B.pos[i] = int32_t(int64_t(i) % std::max<int64_t>(1, c.N));
  }
  float *a = B.a.data(), *b = B.b.data(), *o = B.c.data(), *da = B.d.data(), *db = B.e.data(), *dw = B.f.data();
  float *g1 = B.g.data(), *g2 = B.h.data();
  float *s1 = B.stat1.data(), *s2 = B.stat2.data();
  const int32_t* pos = B.pos.data();
  CudaBackend& be = be_;
  *bwd = nullptr;
  switch (c.call) {
    case BackendCall::attention: {
      Backend::AttnShape s;
      s.B = 1, s.Tq = c.N, s.Tk = c.N, s.Hq = c.H, s.Hkv = c.Hkv, s.D = c.D, s.Dv = c.D;
      s.scale = 1.0f / std::sqrt(float(c.D));
      // q = a, k = b, v = da, out = o, lse = s1, delta = s2, dout = db; dq, dk, dv = dw, g1, g2
      *fwd = [&be, o, s1, a, b, da, pos, s] { be.attention_forward(o, s1, a, b, da, pos, pos, s, false); };
      *bwd = [&be, o, s1, s2, a, b, da, db, dw, g1, g2, pos, s] {
        be.attention_backward_prepare(s2, db, o, s);
        be.attention_backward(dw, g1, g2, db, s1, s2, a, b, da, pos, pos, s);
      };
      break;
    }
    case BackendCall::layernorm:
      *fwd = [&be, o, s1, s2, a, b, dw, c] { be.layernorm_forward(o, s1, s2, a, b, dw, c.N, c.C, 1e-5f); };
      *bwd = [&be, da, db, dw, o, a, b, s1, s2, c] { be.layernorm_backward(da, db, dw, o, a, b, s1, s2, c.N, c.C, false); };
      break;
    case BackendCall::rmsnorm:
      *fwd = [&be, o, s1, a, b, c] { be.rmsnorm_forward(o, s1, a, b, c.N, c.C, 1e-5f); };
      *bwd = [&be, da, db, o, a, b, s1, c] { be.rmsnorm_backward(da, db, o, a, b, s1, c.N, c.C, false); };
      break;
    case BackendCall::act: {
      const ActKind k = act_of(m);
      *fwd = [&be, k, o, a, c] { be.act_forward(k, o, a, c.N, c.F); };
      *bwd = [&be, k, da, o, a, c] { be.act_backward(k, da, o, a, c.N, c.F); };
      break;
    }
    case BackendCall::add:
      *fwd = [&be, o, a, b, c] { be.add(o, a, b, c.N * c.C); };
      break;
    case BackendCall::rope: {
      const float base = float(m.rotary_base);
      *fwd = [&be, a, b, pos, c, base] {
        be.rope_forward(a, pos, c.N, c.H, c.D, base);
        be.rope_forward(b, pos, c.N, c.Hkv, c.D, base);
      };
      *bwd = [&be, da, db, pos, c, base] {
        be.rope_backward(da, pos, c.N, c.H, c.D, base);
        be.rope_backward(db, pos, c.N, c.Hkv, c.D, base);
      };
      break;
    }
    case BackendCall::none:
      return false;
  }
  return true;
}

}  // namespace mplan::exec
