// cuDNN fused attention: sdpa::Graph -> backend descriptors -> execution plans (cached per shape),
// and the forward/backward calls with their bf16 conversions (see cudnn_attention.h).
#include "executor/backend/cuda/cudnn_attention.h"

#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "executor/backend/cuda/cuda_check.h"

namespace mplan::exec::gpu {

namespace {

[[noreturn]] void cudnn_fail(const char* op, const sdpa::Shape& s, const char* call, cudnnStatus_t st) {
  char last[1024] = "";
  cudnnGetLastErrorString(last, sizeof(last));
  const std::string msg = std::string(op) + " (" + sdpa::describe(s) + "): " + cudnnGetErrorString(st) +
                          (last[0] ? std::string("; ") + last : std::string());
  fatal_error(call, msg.c_str(), __FILE__, __LINE__);
}

#define MPLAN_CUDNN(op, s, call)                                                \
  do {                                                                          \
    cudnnStatus_t mplan_st_ = (call);                                           \
    if (mplan_st_ != CUDNN_STATUS_SUCCESS) cudnn_fail(op, s, #call, mplan_st_); \
  } while (0)

// One backend descriptor, destroyed with its owner.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  Desc() = default;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
};

// indexed by sdpa::DType (bf16, f32, i32, boolean)
cudnnDataType_t data_type(sdpa::DType t) {
  static constexpr cudnnDataType_t kTypes[] = {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_DATA_INT32, CUDNN_DATA_BOOLEAN};
  return kTypes[int(t)];
}

// indexed by sdpa::Pw (none, mul, sub, add, div, exp, log, gen_index, cmp_ge, binary_select, identity)
cudnnPointwiseMode_t pointwise_mode(sdpa::Pw m) {
  static constexpr cudnnPointwiseMode_t kModes[] = {
      CUDNN_POINTWISE_IDENTITY, CUDNN_POINTWISE_MUL,           CUDNN_POINTWISE_SUB,     CUDNN_POINTWISE_ADD,
      CUDNN_POINTWISE_DIV,      CUDNN_POINTWISE_EXP,           CUDNN_POINTWISE_LOG,     CUDNN_POINTWISE_GEN_INDEX,
      CUDNN_POINTWISE_CMP_GE,   CUDNN_POINTWISE_BINARY_SELECT, CUDNN_POINTWISE_IDENTITY};
  return kModes[int(m)];
}

// Builds one graph's descriptors; every call names the op and the shape when it fails.
class Materializer {
 public:
  Materializer(const char* op, const sdpa::Shape& s) : op_(op), s_(s) {}
  std::vector<std::unique_ptr<Desc>> keep;  // every descriptor the graph refers to

  // soft: the first failure is kept in `error` instead of ending the job (the host-side validation)
  bool soft = false;
  std::string error;

  void check(cudnnStatus_t st, const char* call) {
    if (st == CUDNN_STATUS_SUCCESS) return;
    if (!soft) cudnn_fail(op_, s_, call, st);
    if (error.empty()) {
      char last[512] = "";
      cudnnGetLastErrorString(last, sizeof(last));
      error = std::string(call) + ": " + cudnnGetErrorString(st) + (last[0] ? std::string("; ") + last : std::string());
    }
  }
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t t) {
    keep.push_back(std::make_unique<Desc>());
    check(cudnnBackendCreateDescriptor(t, &keep.back()->d), "cudnnBackendCreateDescriptor");
    return keep.back()->d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n, const void* v) {
    check(cudnnBackendSetAttribute(d, a, t, n, v), "cudnnBackendSetAttribute");
  }
  void finalize(cudnnBackendDescriptor_t d) { check(cudnnBackendFinalize(d), "cudnnBackendFinalize"); }
  // A finalized descriptor of `type` whose attributes are the descriptors `refs` (one each).
  cudnnBackendDescriptor_t linked(cudnnBackendDescriptorType_t type,
                                  std::initializer_list<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> refs) {
    cudnnBackendDescriptor_t d = make(type);
    for (const auto& [a, ref] : refs) set(d, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ref);
    finalize(d);
    return d;
  }

  cudnnBackendDescriptor_t tensor(const sdpa::TensorDesc& t) {
    cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const cudnnDataType_t dt = data_type(t.dtype);
    const int64_t align = 16;
    set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t.dims.data());
    set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t.strides.data());
    set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t.uid);
    set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    const bool virt = t.is_virtual, by_value = t.by_value;
    set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (by_value) set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    finalize(d);
    return d;
  }

  cudnnBackendDescriptor_t operation(const sdpa::OpDesc& o, const std::map<int64_t, cudnnBackendDescriptor_t>& t) {
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t y = t.at(o.out);
    if (o.kind == sdpa::OpKind::matmul) {
      cudnnBackendDescriptor_t mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
      set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
      finalize(mm);
      return linked(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, t.at(o.in[0])},
                                                                {CUDNN_ATTR_OPERATION_MATMUL_BDESC, t.at(o.in[1])},
                                                                {CUDNN_ATTR_OPERATION_MATMUL_CDESC, y},
                                                                {CUDNN_ATTR_OPERATION_MATMUL_DESC, mm}});
    }
    if (o.kind == sdpa::OpKind::reduction) {
      cudnnBackendDescriptor_t r = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
      const cudnnReduceTensorOp_t rop = o.red == sdpa::Red::max ? CUDNN_REDUCE_TENSOR_MAX : CUDNN_REDUCE_TENSOR_ADD;
      set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &rop);
      set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
      finalize(r);
      return linked(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, {{CUDNN_ATTR_OPERATION_REDUCTION_XDESC, t.at(o.in[0])},
                                                                   {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y},
                                                                   {CUDNN_ATTR_OPERATION_REDUCTION_DESC, r}});
    }
    if (o.kind == sdpa::OpKind::reshape)
      return linked(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
                    {{CUDNN_ATTR_OPERATION_RESHAPE_XDESC, t.at(o.in[0])}, {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y}});
    cudnnBackendDescriptor_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    const cudnnPointwiseMode_t mode = pointwise_mode(o.pw);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    const cudnnDataType_t prec = data_type(o.compute);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (o.pw == sdpa::Pw::gen_index) set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &o.axis);
    finalize(pw);
    cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    set(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t.at(o.in[0]));
    if (o.in.size() > 1) set(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t.at(o.in[1]));
    if (o.in.size() > 2) set(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t.at(o.in[2]));
    set(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    finalize(d);
    return d;
  }

 private:
  const char* op_;
  sdpa::Shape s_;
};

int64_t env_version_logged() {
  const int64_t v = int64_t(cudnnGetVersion());
  std::fprintf(stderr, "mplan: attention through cuDNN %lld (headers %d; MPLAN_ATTENTION=simt for the fp32 kernels)\n",
               (long long)v, CUDNN_VERSION);
  return v;
}

}  // namespace

struct CudnnAttention::Plan {
  Materializer m;
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace = 0;
  Plan(const char* op, const sdpa::Shape& s) : m(op, s) {}
};

bool attention_request_from_env(AttentionRequest* request, std::string* error) {
  const char* e = std::getenv("MPLAN_ATTENTION");
  const std::string v = e ? e : "";
  if (v.empty())
    *request = AttentionRequest::automatic;
  else if (v == "simt")
    *request = AttentionRequest::simt;
  else if (v == "cudnn")
    *request = AttentionRequest::cudnn;
  else {
    *error = "MPLAN_ATTENTION='" + v +
             "' is not known: use 'simt' (the fp32 kernels), 'cudnn' (cuDNN fused attention) or leave it unset (cuDNN for bf16 "
             "plans where it supports the shape)";
    return false;
  }
  return true;
}

AttentionDecision decide_attention(AttentionRequest request, bool bf16_gemms, const sdpa::Shape& s, int64_t cudnn_version,
                                   int sm) {
  AttentionDecision d;
  if (request == AttentionRequest::simt) return d;
  const std::string why = sdpa::support_error(s, cudnn_version, sm);
  if (request == AttentionRequest::cudnn) {
    if (!why.empty()) d.error = "MPLAN_ATTENTION=cudnn: " + why + "; unset MPLAN_ATTENTION for the fp32 attention kernels";
    d.cudnn = why.empty();
    return d;
  }
  if (!bf16_gemms) return d;  // fp32 plans: the exact kernels
  d.cudnn = why.empty();
  if (!d.cudnn) d.note = why;
  return d;
}

AttentionDecision decide_attention_on(int device, AttentionRequest request, bool bf16_gemms, const sdpa::Shape& s) {
  cudaDeviceProp prop{};
  const int sm = cudaGetDeviceProperties(&prop, device) == cudaSuccess ? prop.major * 10 + prop.minor : 0;
  return decide_attention(request, bf16_gemms, s, int64_t(cudnnGetVersion()), sm);
}

int64_t cudnn_runtime_version() { return int64_t(cudnnGetVersion()); }

std::string cudnn_validate_operations(const sdpa::Graph& g, const sdpa::Shape& s) {
  Materializer m("cuDNN attention graph validation", s);
  m.soft = true;
  std::map<int64_t, cudnnBackendDescriptor_t> tensors;
  for (const sdpa::TensorDesc& t : g.tensors) {
    tensors[t.uid] = m.tensor(t);
    if (!m.error.empty()) return "tensor " + t.name + ": " + m.error;
  }
  for (const sdpa::OpDesc& o : g.ops) {
    m.operation(o, tensors);
    if (!m.error.empty()) return "node " + o.name + ": " + m.error;
  }
  return {};
}

CudnnAttention::CudnnAttention(cudaStream_t stream, int sm, std::shared_ptr<DevicePool> pool)
    : stream_(stream), sm_(sm), pool_(std::move(pool)) {
  static const int64_t version = env_version_logged();
  sdpa::Shape probe;
  probe.B = probe.Tq = probe.Tk = probe.Hq = probe.Hkv = 1;
  probe.D = probe.Dv = 64;
  const std::string err = sdpa::support_error(probe, version, sm_);
  if (!err.empty()) out_of_memory_exit("MPLAN_ATTENTION=cudnn: " + err + " (unset MPLAN_ATTENTION for the fp32 kernels)");
  cudnnHandle_t h = nullptr;
  MPLAN_CUDNN("cudnnCreate", probe, cudnnCreate(&h));
  handle_ = h;
  MPLAN_CUDNN("cudnnSetStream", probe, cudnnSetStream(h, stream_));
}

CudnnAttention::~CudnnAttention() {
  cudaStreamSynchronize(stream_);
  plans_.clear();
  for (Block& b : scratch_) pool_->release(b.p);
  if (handle_) cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

void CudnnAttention::require_supported(const sdpa::Shape& s) const {
  const std::string err = sdpa::support_error(s, cudnn_runtime_version(), sm_);
  if (!err.empty()) out_of_memory_exit("MPLAN_ATTENTION=cudnn: " + err + " (unset MPLAN_ATTENTION for the fp32 kernels)");
}

void* CudnnAttention::scratch(int slot, int64_t bytes) {
  Block& b = scratch_[slot];
  if (b.bytes < bytes) {
    pool_->release(b.p);  // stream-ordered reuse: later work on the stream runs after earlier users
    b.p = pool_->allocate(bytes);
    b.bytes = bytes;
  }
  return b.p;
}

CudnnAttention::Plan& CudnnAttention::plan(bool backward, const sdpa::Shape& s) {
  auto key = std::make_tuple(backward, s.B, s.Tq, s.Tk, s.Hq, s.Hkv, s.D, s.Dv);
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  require_supported(s);
  const char* op = backward ? "cuDNN attention backward graph" : "cuDNN attention forward graph";
  auto p = std::make_unique<Plan>(op, s);
  Materializer& m = p->m;
  const sdpa::Graph g = backward ? sdpa::backward_graph(s) : sdpa::forward_graph(s);
  std::map<int64_t, cudnnBackendDescriptor_t> tensors;
  for (const sdpa::TensorDesc& t : g.tensors) tensors[t.uid] = m.tensor(t);
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const sdpa::OpDesc& o : g.ops) ops.push_back(m.operation(o, tensors));
  cudnnBackendDescriptor_t graph = m.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  m.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data());
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  m.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
#pragma GCC diagnostic pop
  m.finalize(graph);
  cudnnBackendDescriptor_t heur = m.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  m.set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  m.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  m.finalize(heur);
  constexpr int kMaxConfigs = 16;
  std::vector<cudnnBackendDescriptor_t> configs;
  configs.reserve(kMaxConfigs);
  for (int i = 0; i < kMaxConfigs; ++i) configs.push_back(m.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  int64_t n = 0;
  MPLAN_CUDNN(op, s,
              cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxConfigs, &n,
                                       configs.data()));
  for (int64_t i = 0; i < n && !p->plan; ++i) {  // the first engine configuration that finalizes
    cudnnBackendDescriptor_t ep = m.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    m.set(ep, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
#pragma GCC diagnostic pop
    m.set(ep, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[size_t(i)]);
    if (cudnnBackendFinalize(ep) != CUDNN_STATUS_SUCCESS) continue;
    int64_t got = 0;
    MPLAN_CUDNN(op, s,
                cudnnBackendGetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &p->workspace));
    p->plan = ep;
  }
  if (!p->plan) cudnn_fail(op, s, "cudnnBackendFinalize(execution plan): no engine configuration", CUDNN_STATUS_NOT_SUPPORTED);
  return *(plans_[key] = std::move(p));
}

namespace {

void execute(void* handle, CudnnAttention::Plan& p, const char* op, const sdpa::Shape& s, std::vector<int64_t> uids,
             std::vector<void*> ptrs, void* workspace) {
  Materializer m(op, s);
  cudnnBackendDescriptor_t vp = m.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  m.set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data());
  m.set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()), ptrs.data());
  m.set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  m.finalize(vp);
  MPLAN_CUDNN(op, s, cudnnBackendExecute(static_cast<cudnnHandle_t>(handle), p.plan, vp));
}

}  // namespace

void CudnnAttention::forward(float* out, float* lse, const float* q, const float* k, const float* v, const sdpa::Shape& s) {
  Plan& p = plan(false, s);
  const int64_t nq = s.B * s.Tq * s.Hq * s.D, nk = s.B * s.Tk * s.Hkv * s.D, nv = s.B * s.Tk * s.Hkv * s.Dv;
  const int64_t no = s.B * s.Tq * s.Hq * s.Dv;
  void *q16 = scratch(0, 2 * nq), *k16 = scratch(1, 2 * nk), *v16 = scratch(2, 2 * nv), *o16 = scratch(3, 2 * no);
  void* ws = p.workspace > 0 ? scratch(9, p.workspace) : nullptr;
  f32_to_bf16(q16, q, nq, stream_);
  f32_to_bf16(k16, k, nk, stream_);
  f32_to_bf16(v16, v, nv, stream_);
  float scale = s.scale, neg_inf = -std::numeric_limits<float>::infinity();
  execute(handle_, p, "cuDNN attention forward", s,
          {sdpa::uid::Q, sdpa::uid::K, sdpa::uid::V, sdpa::uid::O, sdpa::uid::Stats, sdpa::uid::Scale, sdpa::uid::NegInf},
          {q16, k16, v16, o16, lse, &scale, &neg_inf}, ws);
  bf16_to_f32(out, o16, no, false, stream_);
}

void CudnnAttention::backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                              const float* q, const float* k, const float* v, const sdpa::Shape& s) {
  Plan& p = plan(true, s);
  const int64_t nq = s.B * s.Tq * s.Hq * s.D, nk = s.B * s.Tk * s.Hkv * s.D, nv = s.B * s.Tk * s.Hkv * s.Dv;
  const int64_t no = s.B * s.Tq * s.Hq * s.Dv;
  void *q16 = scratch(0, 2 * nq), *k16 = scratch(1, 2 * nk), *v16 = scratch(2, 2 * nv), *o16 = scratch(3, 2 * no);
  void *do16 = scratch(4, 2 * no), *dq16 = scratch(5, 2 * nq), *dk16 = scratch(6, 2 * nk), *dv16 = scratch(7, 2 * nv);
  void* ssum = scratch(8, sdpa::softmax_sum_bytes(s) + sdpa::dq_accum_bytes(s));
  void* dqacc = static_cast<char*>(ssum) + sdpa::softmax_sum_bytes(s);
  void* ws = p.workspace > 0 ? scratch(9, p.workspace) : nullptr;
  f32_to_bf16(q16, q, nq, stream_);
  f32_to_bf16(k16, k, nk, stream_);
  f32_to_bf16(v16, v, nv, stream_);
  f32_to_bf16(o16, out, no, stream_);
  f32_to_bf16(do16, dout, no, stream_);
  MPLAN_CUDA_CHECK(cudaMemsetAsync(dqacc, 0, size_t(sdpa::dq_accum_bytes(s)), stream_));
  float scale = s.scale, neg_inf = -std::numeric_limits<float>::infinity(), one = 1.0f;
  namespace u = sdpa::uid;
  execute(handle_, p, "cuDNN attention backward", s,
          {u::Q, u::K, u::V, u::O, u::Stats, u::dO, u::dQ, u::dK, u::dV, u::SoftmaxSum, u::DqAccum, u::Scale, u::NegInf, u::One},
          {q16, k16, v16, o16, const_cast<float*>(lse), do16, dq16, dk16, dv16, ssum, dqacc, &scale, &neg_inf, &one}, ws);
  bf16_to_f32(dq, dq16, nq, true, stream_);
  bf16_to_f32(dk, dk16, nk, true, stream_);
  bf16_to_f32(dv, dv16, nv, true, stream_);
}

}  // namespace mplan::exec::gpu
