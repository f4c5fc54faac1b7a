// Roofline op costs. GEMM: time = (padded work + ramp) / (peak * eff_max * precision_eff), where the
// padded work counts whole output tiles (the least wasteful of a few shapes) on every SM of every wave
// (tile and wave quantization) and the ramp is the work of a fixed time, gemm_ramp_us, at that peak;
// never faster than its HBM traffic. Backward of a GEMM is
// two GEMMs of the same size (dgrad: m x k from m x n and n x k; wgrad: k x n from k x m and m x n).
#include "simulator/compute_cost.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mplan {

namespace {
double peak_flops(const ClusterSpec& c, Precision p) {
  auto v = c.gpu.peak(p);
  if (!v) v = c.gpu.peak(Precision::bf16);
  if (!v) v = c.gpu.peak_tflops.begin()->second;
  return *v * 1e12;
}

// Efficiency of one GEMM with `eff_max` in place of p.gemm_eff_max (grouped GEMMs scale it).
double gemm_eff(const GemmShape& s, double eff_max, const ComputeRates& r, const CostParams& p) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return eff_max;
  double W = 2.0 * double(s.m) * double(s.n) * double(s.k) * double(s.groups);
  double padded = W;  // a CPU (sm_count 1) has no tiles to quantize: its BLAS blocks are small
  if (r.sm_count > 1) {
    // the GPU does the work of every SM slot of every wave with whole output tiles (tile
    // quantization: padded edge tiles; wave quantization: idle SMs of the last wave); like a BLAS
    // heuristic, the tile shape that wastes least is used: the configured one, transposed, halved
    const double sms = r.sm_count, TM = p.gemm_tile_m, TN = p.gemm_tile_n;
    const double m = double(s.m), n = double(s.n);
    // tile counts along m and n, each edge length divided once: m by TM, TN, TM/2; n by TN, TM, TN/2, TN/4
    const double m_tm = std::ceil(m / TM), m_tn = std::ceil(m / TN), m_tm2 = std::ceil(m / (TM / 2));
    const double n_tn = std::ceil(n / TN), n_tm = std::ceil(n / TM), n_tn2 = std::ceil(n / (TN / 2)),
                 n_tn4 = std::ceil(n / (TN / 4));
    const struct {
      double tm, tn, tiles_m, tiles_n;
    } shapes[] = {{TM, TN, m_tm, n_tn},
                  {TN, TM, m_tn, n_tm},
                  {TM, TN / 2, m_tm, n_tn2},
                  {TM / 2, TN / 2, m_tm2, n_tn2},
                  {TM / 2, TN / 4, m_tm2, n_tn4}};
    padded = std::numeric_limits<double>::infinity();
    for (const auto& t : shapes) {
      double tiles = t.tiles_m * t.tiles_n * double(s.groups);
      padded = std::min(padded, 2.0 * std::ceil(tiles / sms) * sms * t.tm * t.tn * double(s.k));
    }
  }
  // plus a ramp of a fixed time per kernel (pipeline fill and drain, epilogue, launch): small GEMMs are
  // less efficient, and by the same time on every GPU, however fast its tensor cores
  double ramp = p.gemm_ramp_us * 1e-6 * r.peak;
  return eff_max * r.prec_eff * W / (padded + ramp);
}

double gemm_time_uncached(const GemmShape& s, double eff_max, const ComputeRates& r, const CostParams& p) {
  double W = 2.0 * double(s.m) * double(s.n) * double(s.k) * double(s.groups);
  if (W <= 0) return 0;
  double bytes = gemm_input_bytes(r.prec) * double(s.groups) * (double(s.m) * s.k + double(s.k) * s.n) +
                 2.0 * double(s.groups) * double(s.m) * s.n;
  double t = W / (r.peak * gemm_eff(s, eff_max, r, p));
  return std::max(t, bytes / r.hbm) + r.overhead;
}
// The forward, dgrad and wgrad times of one GEMM: dgrad is m x k from m x n and n x k, wgrad k x n
// from k x m and m x n.
using GemmTimes = std::array<double, 3>;
GemmTimes gemm_times_uncached(const GemmShape& s, double eff_max, const ComputeRates& r, const CostParams& p) {
  return {gemm_time_uncached(s, eff_max, r, p), gemm_time_uncached({s.m, s.k, s.n, s.groups}, eff_max, r, p),
          gemm_time_uncached({s.k, s.n, s.m, s.groups}, eff_max, r, p)};
}

// A memo of GEMM times per thread: a search costs the same few GEMMs under the same rates hundreds
// of thousands of times. An entry keeps every input gemm_time_uncached reads (doubles by their bits),
// so a hit returns the very doubles the computation would.
class GemmMemo {
 public:
  GemmTimes times(const GemmShape& s, double eff_max, const ComputeRates& r, const CostParams& p) {
    Key key{s.m,
            s.n,
            s.k,
            s.groups,
            p.gemm_tile_m,
            p.gemm_tile_n,
            r.sm_count,
            int(r.prec),
            {bits(eff_max), bits(r.peak), bits(r.prec_eff), bits(r.hbm), bits(r.overhead), bits(p.gemm_ramp_us)}};
    Entry& e = table_[slot(key)];
    if (e.used && e.key == key) return e.t;
    e = {key, gemm_times_uncached(s, eff_max, r, p), true};
    return e.t;
  }

 private:
  struct Key {
    int64_t m, n, k, groups;
    int tile_m, tile_n, sm_count, prec;
    std::array<uint64_t, 6> d;  // eff_max, peak, prec_eff, hbm, overhead, gemm_ramp_us (all a GEMM's time reads)
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key{};
    GemmTimes t{};
    bool used = false;
  };
  static constexpr size_t kSlots = 1024;
  static uint64_t bits(double v) { return std::bit_cast<uint64_t>(v); }
  static size_t slot(const Key& k) {
    uint64_t h = uint64_t(k.m) * 0x9E3779B97F4A7C15ull;
    for (uint64_t v : {uint64_t(k.n), uint64_t(k.k), uint64_t(k.groups), k.d[0], uint64_t(k.prec)})
      h = (h ^ v) * 0x100000001B3ull + (h >> 29);
    return size_t(h ^ (h >> 32)) % kSlots;
  }
  std::array<Entry, kSlots> table_{};
};

GemmTimes gemm_times(const GemmShape& s, double eff_max, const ComputeRates& r, const CostParams& p) {
  thread_local GemmMemo memo;
  return memo.times(s, eff_max, r, p);
}
}  // namespace

ComputeRates compute_rates(Precision prec, const ClusterSpec& c, const CostParams& p) {
  ComputeRates r;
  r.prec = prec;
  r.peak = peak_flops(c, prec);
  r.peak_bf16 = peak_flops(c, Precision::bf16);
  auto fp32 = c.gpu.peak(Precision::fp32);
  r.vec_peak = (fp32 ? *fp32 : 1e3) * 1e12;
  r.prec_eff = p.eff_for(prec);
  r.hbm = c.gpu.hbm_gbps * 1e9 * p.hbm_eff;
  r.ssm_bw = r.hbm;
  if (c.gpu.sm_count > 1 && p.ssm_kernel_sm_gbps > 0) r.ssm_bw = std::min(r.hbm, c.gpu.sm_count * p.ssm_kernel_sm_gbps * 1e9);
  r.overhead = p.kernel_overhead_us * 1e-6;
  r.sm_count = c.gpu.sm_count;
  return r;
}

double gemm_efficiency(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p) {
  return gemm_eff(s, p.gemm_eff_max, compute_rates(prec, c, p), p);
}

double gemm_time_s(const GemmShape& s, Precision prec, const ClusterSpec& c, const CostParams& p) {
  return gemm_time_uncached(s, p.gemm_eff_max, compute_rates(prec, c, p), p);
}

OpCost compute_op_cost(const Op& op, Precision gp, const ClusterSpec& c, const CostParams& p) {
  return compute_op_cost(op, compute_rates(gp, c, p), p);
}

OpCost compute_op_cost(const Op& op, const ComputeRates& rt, const CostParams& p) {
  OpCost r;
  const double hbm = rt.hbm, overhead = rt.overhead;
  switch (op.kind) {
    case OpKind::gemm: {
      const GemmShape& s = op.gemm;
      // MoE experts run as grouped GEMMs, less efficient than one dense GEMM of the same work
      double eff_max = p.gemm_eff_max;
      const bool grouped = op_has_role(op.id, kGroupedGemm);
      if (grouped) eff_max *= p.grouped_gemm_eff;
      // one kernel per local expert, one after another: each pays its own waves, ramp and overhead
      const bool per_expert = grouped && rt.per_expert_gemms && s.groups > 1;
      const GemmTimes t = gemm_times(per_expert ? GemmShape{s.m, s.n, s.k, 1} : s, eff_max, rt, p);
      const double kernels = per_expert ? double(s.groups) : 1.0;
      r.fwd_s = t[0] * kernels;
      r.bwd_input_s = t[1] * kernels;
      r.bwd_weight_s = t[2] * kernels;
      if (p.gemm_operand_cast_bytes > 0 && !is_fp8_family(rt.prec)) {
        // the executor's conversion kernels of the activation operands (CostParams::gemm_operand_cast_bytes)
        const double g = double(s.groups), cb = p.gemm_operand_cast_bytes;
        r.fwd_s += g * double(s.m) * s.k * cb / hbm + overhead;
        r.bwd_input_s += g * double(s.m) * s.n * cb / hbm + overhead;
        r.bwd_weight_s += g * double(s.m) * s.k * cb / hbm + overhead;
      }
      if (is_fp8_family(rt.prec)) {
        // the framework's scaling kernels (CostParams::fp8_cast_*, from data/frameworks): the
        // activation input and the weight (fwd), the output gradient and the weight again (bwd)
        const double g = double(s.groups), w = g * double(s.k) * s.n;
        const double in = g * double(s.m) * s.k * p.fp8_cast_act_bytes, gout = g * double(s.m) * s.n * p.fp8_cast_act_bytes;
        r.fwd_s += (in + w * p.fp8_cast_weight_fwd_bytes) / hbm + overhead;
        r.bwd_input_s += (gout + w * p.fp8_cast_weight_bwd_bytes) / hbm + overhead;
      }
      break;
    }
    case OpKind::attention: {
      double pk = rt.peak_bf16;                                                 // attention runs in bf16 even in FP8 recipes
      double sat = op.fwd_flops / (op.fwd_flops + p.gemm_ramp_us * 1e-6 * pk);  // the GEMMs' ramp
      r.fwd_s = op.fwd_flops / (pk * p.attn_fwd_eff * sat) + overhead;
      r.bwd_input_s = 2.0 * op.fwd_flops / (pk * p.attn_bwd_eff * sat) + overhead;
      if (op.attn.triton_kernel) {  // the 2022 Triton kernel reaches triton_attn_eff of the fused rate
        r.fwd_s = (r.fwd_s - overhead) / p.triton_attn_eff + overhead;
        r.bwd_input_s = (r.bwd_input_s - overhead) / p.triton_attn_eff + overhead;
      }
      // memory-bound work around the kernel (PyTorch ring attention's merges and fp32 accumulation)
      r.fwd_s += op.side_fwd_bytes / hbm;
      r.bwd_input_s += op.side_bwd_bytes / hbm;
      break;
    }
    case OpKind::scan: {
      // the SSD scan's Triton kernels: their matmuls at the bf16 rate of fused attention kernels or their
      // HBM traffic, whichever is longer. mamba_ssm's ssd_combined.py (state-spaces/mamba@e9594ce) runs
      // five kernels forward; its backward re-runs four of them (chunk cumsum, chunk states, state
      // passing, C.B^T) before about a dozen gradient kernels, so it is charged the forward again plus
      // twice the forward (the rule of every memory-bound op), over 16 kernels
      constexpr double kFwdKernels = 5, kBwdKernels = 16;
      const double pk = rt.peak_bf16, bw = rt.ssm_bw;  // Triton kernels: at most ssm_kernel_sm_gbps per SM
      const double fwd = std::max(op.fwd_bytes / bw, op.fwd_flops / (pk * p.attn_fwd_eff));
      r.fwd_s = fwd + kFwdKernels * overhead;
      r.bwd_input_s = fwd + std::max(2 * op.fwd_bytes / bw, 2 * op.fwd_flops / (pk * p.attn_bwd_eff)) + kBwdKernels * overhead;
      break;
    }
    case OpKind::comm:
      break;
    default: {
      // memory-bound on GPUs; on CPUs the transcendental work of some ops can dominate, hence the max.
      // The Mamba mixer's gated RMSNorm is mamba_ssm's Triton kernel (rate per SM, ComputeRates::ssm_bw)
      const double bw = op.id == OpId::ssm_gate_norm ? rt.ssm_bw : hbm;
      double t = std::max(op.fwd_bytes / bw, op.fwd_flops / rt.vec_peak);
      r.fwd_s = t + overhead;
      r.bwd_input_s = 2.0 * t + overhead;
      if (op.kind == OpKind::embedding) r.bwd_weight_s = 0;
      break;
    }
  }
  if (op.load_scale != 1.0) {  // MoE expert ops on the busiest expert-parallel rank
    r.fwd_s *= op.load_scale;
    r.bwd_input_s *= op.load_scale;
    r.bwd_weight_s *= op.load_scale;
  }
  return r;
}

}  // namespace mplan
