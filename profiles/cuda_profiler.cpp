// GPU profiler: CUPTI activity tracing around cuBLASLt GEMMs, the attention and memory-bound
// kernels, and NCCL collectives; rows through ActivityCollector (see cuda_profiler.h).
#include "profiles/cuda_profiler.h"

#include <cublasLt.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

#include "core/ops.h"
#include "core/presets.h"
#include "core/time_format.h"
#include "profiles/calibrate.h"
#include "profiles/cuda_kernels.h"
#include "profiles/cupti_records.h"
#include "profiles/host_info.h"
#include "profiles/profile_db.h"
#include "profiles/profile_grid.h"
#include "profiles/progress.h"

namespace mplan::profiles {

bool cuda_backend_built() { return true; }

namespace {

#define MPLAN_CUDA(x)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) return Error(std::string(#x) + ": " + cudaGetErrorString(e_)); \
  } while (0)

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes) { cudaMalloc(&p, std::max<size_t>(bytes, 256)); }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// External ids: one per timed repetition (through the process's one CUPTI trace).
struct Tracer {
  uint64_t next = 1;
  uint64_t push() {
    uint64_t id = next++;
    cupti::ActivityTrace::push(id);
    return id;
  }
  void pop() { cupti::ActivityTrace::pop(); }
};

constexpr int kWarmup = 3;
int reps_for(bool quick) { return quick ? 5 : 20; }

// Runs `launch` warm-up times, then `reps` traced repetitions (synchronising after each).
std::vector<uint64_t> traced(Tracer& tr, int reps, const std::function<void()>& launch, const std::function<void()>& sync) {
  for (int i = 0; i < kWarmup; ++i) launch();
  sync();
  std::vector<uint64_t> ids;
  for (int r = 0; r < reps; ++r) {
    ids.push_back(tr.push());
    launch();
    tr.pop();
    sync();
  }
  return ids;
}

// cuBLASLt GEMM C(m, n) = A(m, k) B(k, n) in row-major terms, bf16 or fp8 (e4m3) inputs, bf16 out.
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t h, int64_t m, int64_t n, int64_t k, bool fp8, void* ws, size_t ws_bytes)
      : h_(h), ws_(ws), ws_bytes_(ws_bytes) {
    cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    // column-major view: C^T (n x m) = B^T (n x k) * A^T (k x m); FP8 needs the "TN" form
    cublasOperation_t ta = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (fp8)
      cublasLtMatrixLayoutCreate(&la_, in, uint64_t(k), uint64_t(n), k);
    else
      cublasLtMatrixLayoutCreate(&la_, in, uint64_t(n), uint64_t(k), n);
    cublasLtMatrixLayoutCreate(&lb_, in, uint64_t(k), uint64_t(m), k);
    cublasLtMatrixLayoutCreate(&lc_, CUDA_R_16BF, uint64_t(n), uint64_t(m), n);
    cublasLtMatmulPreferenceCreate(&pref_);
    cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes_, sizeof ws_bytes_);
    int found = 0;
    ok_ = cublasLtMatmulAlgoGetHeuristic(h_, desc_, la_, lb_, lc_, lc_, pref_, 1, &heur_, &found) == CUBLAS_STATUS_SUCCESS &&
          found > 0;
    size_t eb = fp8 ? 1 : 2;
    a_ = std::make_unique<DevBuf>(size_t(m * k) * eb);
    b_ = std::make_unique<DevBuf>(size_t(k * n) * eb);
    c_ = std::make_unique<DevBuf>(size_t(m * n) * 2);
  }
  ~LtGemm() {
    cublasLtMatmulPreferenceDestroy(pref_);
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatrixLayoutDestroy(lc_);
    cublasLtMatmulDescDestroy(desc_);
  }
  bool ok() const { return ok_; }
  void run(cudaStream_t s) {
    float alpha = 1, beta = 0;
    cublasLtMatmul(h_, desc_, &alpha, b_->p, la_, a_->p, lb_, &beta, c_->p, lc_, c_->p, lc_, &heur_.algo, ws_, ws_bytes_, s);
  }

 private:
  cublasLtHandle_t h_;
  void* ws_;
  size_t ws_bytes_;
  cublasLtMatmulDesc_t desc_{};
  cublasLtMatrixLayout_t la_{}, lb_{}, lc_{};
  cublasLtMatmulPreference_t pref_{};
  cublasLtMatmulHeuristicResult_t heur_{};
  bool ok_ = false;
  std::unique_ptr<DevBuf> a_, b_, c_;
};

ModelSpec gpu_grid_model(int64_t h) { return grid_model("gpu-profile-grid", h, 128, 32768); }

struct Batch {
  std::string name;
  std::vector<PendingKernel> kernels;
  std::vector<PendingCollective> collectives;
};

class GpuRun {
 public:
  GpuRun(ProfileDb& db, int64_t device, int64_t session, const CudaProfileOptions& o, Progress& bar)
      : db_(db), device_(device), session_(session), o_(o), bar_(bar) {}

  // Flushes CUPTI, turns the batch's repetitions into rows and commits them in one transaction.
  Status commit(Batch& b, CudaProfileResult& res) {
    trace->flush();
    std::map<uint64_t, ExternalSpan> spans = trace->spans();
    std::vector<std::string> missing;
    auto ks = kernel_rows_from(b.kernels, spans, missing);
    auto cs = collective_rows_from(b.collectives, spans, missing);
    for (auto& r : ks) r.device_id = device_, r.session_id = session_;
    for (auto& r : cs) r.device_id = device_, r.session_id = session_;
    if (!missing.empty())
      res.notes.push_back(b.name + ": no CUPTI kernel records for " + missing.front() + " and " +
                          std::to_string(missing.size() - 1) + " more");
    if (auto s = db_.insert_kernels(ks); !s) return s;
    if (auto s = db_.insert_collectives(cs); !s) return s;
    res.kernel_rows += int(ks.size());
    res.collective_rows += int(cs.size());
    bar_.step(b.name);
    return {};
  }

  std::unique_ptr<cupti::ActivityTrace> trace;
  Tracer tracer;

 private:
  ProfileDb& db_;
  int64_t device_, session_;
  const CudaProfileOptions& o_;
  Progress& bar_;
};

KernelRow gemm_row(const std::string& op, const char* pass, int64_t m, int64_t n, int64_t k, bool fp8) {
  KernelRow r;
  r.op = op;
  r.pass = pass;
  r.dtype = fp8 ? "fp8" : "bf16";
  r.m = m, r.n = n, r.k = k, r.groups = 1;
  r.flops = 2.0 * double(m) * n * k;
  r.bytes = (fp8 ? 1.0 : 2.0) * (double(m) * k + double(k) * n) + 2.0 * double(m) * n;
  r.impl = "cuBLASLt";
  return r;
}

Status gemm_batches(GpuRun& s, cublasLtHandle_t lt, cudaStream_t st, bool fp8, const CudaProfileOptions& o,
                    CudaProfileResult& res) {
  DevBuf ws(size_t(64) << 20);
  std::vector<int64_t> hidden = o.quick ? std::vector<int64_t>{4096} : std::vector<int64_t>{2048, 4096, 8192};
  std::vector<int64_t> tokens = o.quick ? std::vector<int64_t>{2048} : std::vector<int64_t>{1024, 4096, 8192};
  for (int64_t h : hidden)
    for (int64_t T : tokens) {
      if (stop_requested()) return {};
      OpContext c;
      c.seq = T;
      c.precision = fp8 ? Precision::fp8 : Precision::bf16;
      Batch b;
      b.name = std::string(fp8 ? "fp8" : "bf16") + " GEMMs h=" + std::to_string(h) + " T=" + std::to_string(T);
      std::vector<std::unique_ptr<LtGemm>> keep;
      for (const Op& op : layer_ops(gpu_grid_model(h), 0, c)) {
        if (op.kind != OpKind::gemm) continue;
        const int64_t m = op.gemm.m, n = op.gemm.n, k = op.gemm.k;
        for (auto [pass, M, N, K] : {std::tuple{"fwd", m, n, k}, std::tuple{"dgrad", m, k, n}, std::tuple{"wgrad", k, n, m}}) {
          auto g = std::make_unique<LtGemm>(lt, M, N, K, fp8, ws.p, size_t(64) << 20);
          if (!g->ok()) continue;
          LtGemm* gp = g.get();
          auto ids = traced(
              s.tracer, reps_for(o.quick), [gp, st] { gp->run(st); }, [st] { cudaStreamSynchronize(st); });
          b.kernels.push_back({gemm_row(op.name, pass, M, N, K, fp8), ids});
          keep.push_back(std::move(g));
        }
      }
      if (auto r = s.commit(b, res); !r) return r;
    }
  return {};
}

// The forward (and backward) row of one op: work from the op vocabulary, times from CUPTI.
void backend_rows(Batch& b, const KernelRow& r, const Op& op, const std::function<void()>& fwd, const std::function<void()>& bwd,
                  Tracer& tracer, int reps, const std::function<void()>& sync) {
  KernelRow rf = r;
  rf.pass = "fwd";
  rf.flops = op.fwd_flops;
  rf.bytes = op.fwd_bytes;
  b.kernels.push_back({rf, traced(tracer, reps, fwd, sync)});
  if (bwd) {
    KernelRow rb = r;
    rb.pass = "bwd";
    rb.flops = 2 * op.fwd_flops;
    rb.bytes = 2 * op.fwd_bytes;
    b.kernels.push_back({rb, traced(tracer, reps, bwd, sync)});
  }
}

Status attention_and_memory_batches(GpuRun& s, cudaStream_t st, const CudaProfileOptions& o, CudaProfileResult& res) {
  std::vector<int64_t> seqs = o.quick ? std::vector<int64_t>{1024} : std::vector<int64_t>{1024, 2048, 4096};
  const int64_t h = 4096;
  ModelSpec m = gpu_grid_model(h);
  for (int64_t T : seqs) {
    if (stop_requested()) return {};
    OpContext c;
    c.seq = T;
    c.precision = Precision::bf16;
    // the rows count the bytes their kernels move: the executor's ops read and write fp32 tensors
    if (o.ops && o.ops->dtype() == "fp32") c.activation_bytes = 4;
    std::vector<Op> ops = layer_ops(m, 0, c);
    Batch b;
    b.name = "attention and memory-bound ops s=" + std::to_string(T);
    const int H = m.num_attention_heads, D = m.kv_channels;
    const int64_t n = int64_t(H) * T * D;
    DevBuf q(n * 2), k(n * 2), v(n * 2), out(n * 2), dout(n * 2), dq(n * 2), dk(n * 2), dv(n * 2), lse(H * T * 4), rd(H * T * 4);
    for (DevBuf* x : {&q, &k, &v, &dout}) cuda::fill_random(x->as<__nv_bfloat16>(), n, 7, st);
    auto sync = [st] { cudaStreamSynchronize(st); };
    for (const Op& op : ops) {
      KernelRow r;
      r.op = op.name;
      r.dtype = "bf16";
      r.impl = "mplan simple CUDA kernel";
      std::function<void()> fwd, bwd;
      if (o.ops) {  // the executor's own kernels
        if (!o.ops->prepare(op, m, T, &fwd, &bwd)) continue;
        r.dtype = o.ops->dtype();
        r.impl = o.ops->impl();
        if (op.kind == OpKind::attention)
          r.batch = 1, r.heads = H, r.q_len = T, r.kv_len = T, r.head_dim = D, r.causal = true;
        else
          r.m = T, r.n = h;
        backend_rows(b, r, op, fwd, bwd, s.tracer, reps_for(o.quick), [&] { o.ops->sync(); });
        continue;
      }
      if (op.kind == OpKind::attention) {
        r.batch = 1, r.heads = H, r.q_len = T, r.kv_len = T, r.head_dim = D, r.causal = true;
        r.impl = "mplan simple CUDA attention (one thread per row, not flash-attention)";
        fwd = [&] {
          cuda::attention_forward(out.as<__nv_bfloat16>(), lse.as<float>(), q.as<__nv_bfloat16>(), k.as<__nv_bfloat16>(),
                                  v.as<__nv_bfloat16>(), 1, H, int(T), D, st);
        };
        bwd = [&] {
          cuda::attention_backward(dq.as<__nv_bfloat16>(), dk.as<__nv_bfloat16>(), dv.as<__nv_bfloat16>(),
                                   dout.as<__nv_bfloat16>(), q.as<__nv_bfloat16>(), k.as<__nv_bfloat16>(), v.as<__nv_bfloat16>(),
                                   out.as<__nv_bfloat16>(), lse.as<float>(), rd.as<float>(), 1, H, int(T), D, st);
        };
      } else if (op.id == OpId::attn_norm) {
        r.m = T, r.n = h;
        fwd = [&] {
          cuda::layernorm_forward(out.as<__nv_bfloat16>(), lse.as<float>(), rd.as<float>(), q.as<__nv_bfloat16>(), dk.as<float>(),
                                  dv.as<float>(), int(T), int(h), st);
        };
        bwd = [&] {
          cuda::layernorm_backward(dq.as<__nv_bfloat16>(), dout.as<__nv_bfloat16>(), q.as<__nv_bfloat16>(), dk.as<float>(),
                                   lse.as<float>(), rd.as<float>(), int(T), int(h), st);
        };
      } else if (op.id == OpId::act) {
        int64_t e = std::min<int64_t>(T * m.ffn_hidden_size, n);  // buffers hold n elements
        r.m = T, r.n = e / T;
        fwd = [&, e] { cuda::gelu_forward(out.as<__nv_bfloat16>(), q.as<__nv_bfloat16>(), e, st); };
        bwd = [&, e] { cuda::gelu_backward(dq.as<__nv_bfloat16>(), q.as<__nv_bfloat16>(), dout.as<__nv_bfloat16>(), e, st); };
      } else if (op.id == OpId::attn_residual) {
        r.m = T, r.n = h;
        fwd = [&] { cuda::residual_forward(out.as<__nv_bfloat16>(), q.as<__nv_bfloat16>(), k.as<__nv_bfloat16>(), T * h, st); };
      } else {
        continue;
      }
      backend_rows(b, r, op, fwd, bwd, s.tracer, reps_for(o.quick), sync);
    }
    if (auto r = s.commit(b, res); !r) return r;
  }
  return {};
}

Status nccl_batches(GpuRun& s, int ndev, const CudaProfileOptions& o, CudaProfileResult& res) {
  int nv = 0;
  ncclGetVersion(&nv);
  const std::string impl =
      "NCCL " + std::to_string(nv / 10000) + "." + std::to_string((nv / 100) % 100) + "." + std::to_string(nv % 100);
  std::vector<int> groups;
  for (int g = 2; g <= ndev; g *= 2) groups.push_back(g);
  if (groups.empty() || groups.back() != ndev) groups.push_back(ndev);
  const int64_t max_bytes = o.quick ? (int64_t(16) << 20) : (int64_t(256) << 20);
  for (int g : groups) {
    std::vector<ncclComm_t> comms(static_cast<size_t>(g));
    std::vector<int> devs(static_cast<size_t>(g));
    for (int d = 0; d < g; ++d) devs[size_t(d)] = d;
    if (ncclCommInitAll(comms.data(), g, devs.data()) != ncclSuccess)
      return Error("ncclCommInitAll failed for " + std::to_string(g) + " GPUs");
    std::vector<cudaStream_t> streams(static_cast<size_t>(g));
    std::vector<std::unique_ptr<DevBuf>> send, recv;
    for (int d = 0; d < g; ++d) {
      cudaSetDevice(d);
      cudaStreamCreate(&streams[size_t(d)]);
      send.push_back(std::make_unique<DevBuf>(size_t(max_bytes)));
      recv.push_back(std::make_unique<DevBuf>(size_t(max_bytes)));
    }
    auto sync = [&] {
      for (int d = 0; d < g; ++d) cudaSetDevice(d), cudaStreamSynchronize(streams[size_t(d)]);
    };
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                         Collective::send_recv}) {
      if (stop_requested()) break;
      Batch b;
      b.name = to_string(c) + " on " + std::to_string(g) + " GPUs";
      for (int64_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        size_t count = size_t(bytes / 4), per = count / size_t(g);
        auto launch = [&] {
          ncclGroupStart();
          for (int d = 0; d < g; ++d) {
            void* sb = send[size_t(d)]->p;
            void* rb = recv[size_t(d)]->p;
            ncclComm_t cm = comms[size_t(d)];
            cudaStream_t st = streams[size_t(d)];
            switch (c) {
              case Collective::all_reduce:
                ncclAllReduce(sb, rb, count, ncclFloat, ncclSum, cm, st);
                break;
              case Collective::all_gather:
                ncclAllGather(sb, rb, per, ncclFloat, cm, st);
                break;
              case Collective::reduce_scatter:
                ncclReduceScatter(sb, rb, per, ncclFloat, ncclSum, cm, st);
                break;
              case Collective::all_to_all:
                for (int p = 0; p < g; ++p) {
                  ncclSend(static_cast<float*>(sb) + size_t(p) * per, per, ncclFloat, p, cm, st);
                  ncclRecv(static_cast<float*>(rb) + size_t(p) * per, per, ncclFloat, p, cm, st);
                }
                break;
              default:
                ncclSend(sb, count, ncclFloat, (d + 1) % g, cm, st);
                ncclRecv(rb, count, ncclFloat, (d + g - 1) % g, cm, st);
                break;
            }
          }
          ncclGroupEnd();
        };
        CollectiveRow r = one_domain_collective(c, g, bytes);
        r.transport = "nvlink";
        r.impl = impl;
        b.collectives.push_back({r, traced(s.tracer, reps_for(o.quick), launch, sync)});
      }
      if (auto st = s.commit(b, res); !st) return st;
    }
    sync();
    for (int d = 0; d < g; ++d) ncclCommDestroy(comms[size_t(d)]), cudaStreamDestroy(streams[size_t(d)]);
  }
  return {};
}

}  // namespace

Expected<CudaProfileResult> run_cuda_profile(const CudaProfileOptions& o) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0)
    return Error(std::string("no CUDA device (") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") +
                 "): run `mplan profile --backend cuda` on a machine with an NVIDIA GPU and driver, or use --backend cpu");
  install_stop_handlers();
  cudaDeviceProp prop{};
  MPLAN_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::string cluster = o.cluster.empty() ? cluster_for_gpu_name(prop.name) : o.cluster;
  if (cluster.empty())
    return Error(std::string("unknown GPU '") + prop.name + "': give --cluster NAME|FILE with its peaks and links");
  auto cl = resolve_cluster(cluster);
  if (!cl) return cl.error();

  auto opened = ProfileDb::open(o.db);
  if (!opened) return opened.error();
  ProfileDb& db = opened.value();
  Device dev;
  dev.kind = "gpu";
  dev.name = cl->gpu.name;
  dev.host = host_info().hostname;
  for (const auto& [p, v] : cl->gpu.peak_tflops) dev.peak_tflops[std::string(to_string(p))] = v;
  dev.hbm_gbps = cl->gpu.hbm_gbps;
  dev.memory_gib = double(prop.totalGlobalMem) / (1024.0 * 1024 * 1024);
  dev.sm_count = prop.multiProcessorCount;
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  dev.driver = "CUDA driver " + std::to_string(drv);
  int nccl = 0;
  ncclGetVersion(&nccl);
  dev.libraries = {{"cuda_runtime", rt},
                   {"cublasLt", cublasLtGetVersion()},
                   {"nccl", nccl},
                   {"gpu", prop.name},
                   {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                   {"gpus", ndev}};
  dev.created_at = utc_now_iso();
  dev.source = "measured on " + dev.host + " " + dev.created_at.substr(0, 10) + " (" + prop.name +
               "); peaks and HBM from preset " + cluster;
  dev.cluster = cluster;
  auto id = db.add_device(dev);
  if (!id) return id.error();
  auto sess = db.begin_session(*id, "kernels", o.command);
  if (!sess) return sess.error();

  CudaProfileResult res;
  res.device_id = *id;
  // one progress unit per committed batch: GEMM grid points per precision, attention points, and
  // (group size, collective) pairs
  const bool fp8 = prop.major * 10 + prop.minor >= 89;
  int groups = 0;
  for (int g = 2; g <= ndev; g *= 2) ++groups;
  if (ndev >= 2 && (ndev & (ndev - 1)) != 0) ++groups;
  const int grid = o.quick ? 1 : 9, attn = o.quick ? 1 : 3;
  Progress bar("profile cuda", grid * (fp8 ? 2 : 1) + attn + (o.collectives ? groups * 5 : 0), o.progress);
  GpuRun s(db, *id, *sess, o, bar);
  std::string why;
  s.trace = cupti::ActivityTrace::start(&why);
  if (!s.trace) {
    (void)db.finish_session(*sess, "failed");
    return Error("mplan profile --backend cuda: CUPTI activity tracing unavailable: " + why);
  }

  cudaSetDevice(0);
  cudaStream_t st;
  MPLAN_CUDA(cudaStreamCreate(&st));
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  Status status = gemm_batches(s, lt, st, false, o, res);
  if (status && fp8) status = gemm_batches(s, lt, st, true, o, res);
  if (status) status = attention_and_memory_batches(s, st, o, res);
  cublasLtDestroy(lt);
  cudaStreamDestroy(st);
  if (status && o.collectives && ndev >= 2 && !stop_requested())
    status = nccl_batches(s, ndev, o, res);
  else if (ndev < 2)
    res.notes.push_back("one GPU: no NCCL collectives measured");

  s.trace->flush();
  if (s.trace->dropped()) res.notes.push_back(std::to_string(s.trace->dropped()) + " CUPTI records dropped");
  s.trace.reset();
  res.interrupted = stop_requested();
  (void)db.finish_session(*sess, !status ? "failed" : res.interrupted ? "interrupted" : "complete");
  bar.finish(std::to_string(res.kernel_rows) + " kernel rows, " + std::to_string(res.collective_rows) + " collective rows");
  if (!status) return status.error();
  return res;
}

}  // namespace mplan::profiles
