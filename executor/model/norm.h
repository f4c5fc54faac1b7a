// attn_norm / mlp_norm / final_norm (and the per-head q/k norms): LayerNorm or RMSNorm over rows,
// with the statistics kept for the backward.
#pragma once
#include <string>

#include "executor/model/exec.h"

namespace mplan::exec {

struct NormParams {
  int w = -1, b = -1;  // b only for LayerNorm
};

struct NormActs {
  Tensor inp, mean, rstd;
};

// A parameter every tp rank holds whole (rows x cols), counted once in the gradient norm; its gradient
// is all-reduced over tp when `partial_over_tp` (the rows a rank sees differ between tp ranks).
ParamSpec tp_replicated(const LayoutDims& d, const std::string& name, int64_t rows, int64_t cols, bool partial_over_tp);

// Registers "<name>.weight" (and ".bias" for LayerNorm) of `width`, replicated over tp.
// `partial_over_tp`: the rows a rank normalises differ between tp ranks (sequence parallel, or
// per-head norms), so gradients are all-reduced over tp.
NormParams register_norm(ParamStore& ps, const LayoutDims& d, const std::string& name, int64_t width, bool partial_over_tp);

// out (rows, C) = norm(x (rows, C))
Tensor norm_forward(Exec& ex, const char* op, const NormParams& p, const Tensor& x, int64_t rows, int64_t C, NormActs& a);
// dinp (rows, C) (+)= d norm / dx
void norm_backward(Exec& ex, const char* op, const NormParams& p, const float* dout, NormActs& a, float* dinp, bool accumulate,
                   int64_t rows, int64_t C);

}  // namespace mplan::exec
