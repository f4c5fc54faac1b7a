// The dense MLP half of a transformer layer (and the MLP used for each expert / shared expert):
//   mlp_norm -> [tp_allgather] -> fc1_gemm -> act -> fc2_gemm -> [tp_allreduce | tp_reduce_scatter]
//   -> mlp_residual
// fc1 is column parallel (for SwiGLU its rows are [gate; up], each half split over tp), fc2 row
// parallel.
#pragma once
#include <string>

#include "executor/model/micro.h"
#include "executor/model/norm.h"

namespace mplan::exec {

// Weights of one two-layer MLP shard: fc1 (fc1_rows(f_local), C), fc2 (C, f_local).
struct FfnParams {
  int fc1 = -1, b1 = -1, fc2 = -1, b2 = -1;
  int64_t f_local = 0;
};

// Registers "<name>.fc1/.fc1_bias/.fc2/.fc2_bias" of full width `f` split `parts` ways (this rank
// holds part `part`). `shard_replicated`: the fc2 bias is replicated over the splitting group.
FfnParams register_ffn(ParamStore& ps, const LayoutDims& d, const std::string& name, int64_t f, int parts, int part,
                       ParamClass cls);

struct FfnActs {
  Tensor inp;  // (M, C)
  Tensor u;    // (M, fc1_rows) fc1 output
  Tensor g;    // (M, f_local) activation output
};

// y (M, C) = fc2(act(fc1(x (M, C)))) without the fc2 bias (the caller adds it after the reduction)
Tensor ffn_forward(Exec& ex, const FfnParams& p, const Tensor& x, int64_t M, FfnActs& a, const char* fc1_op, const char* act_op,
                   const char* fc2_op);
// dx (M, C) from dy (M, C); weight gradients accumulate (fc2 bias excluded)
Tensor ffn_backward(Exec& ex, const FfnParams& p, const Tensor& dy, int64_t M, FfnActs& a, const char* fc1_op, const char* act_op,
                    const char* fc2_op);

struct MlpParams {
  NormParams norm;
  FfnParams ffn;
};
struct MlpActs {
  NormActs norm;
  FfnActs ffn;
};

void register_mlp(ParamStore& ps, const LayoutDims& d, int layer, MlpParams& p);
// x (Nsp, C) -> x + mlp(x)
Tensor mlp_forward(Exec& ex, const MlpParams& p, const Tensor& x, MlpActs& a);
Tensor mlp_backward(Exec& ex, const MlpParams& p, const Tensor& dy, MlpActs& a);

}  // namespace mplan::exec
