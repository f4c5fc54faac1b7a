// Vocabulary-parallel embedding and cross-entropy (Megatron-Core's VocabParallelEmbedding and
// vocab_parallel_cross_entropy). Each tp rank holds rows [vstart, vstart + V_l) of the (padded)
// vocabulary. The lookup yields zeros for foreign tokens and the partial results are summed on the
// way out of the TP region; the softmax needs the global row max (all-reduce max) and the global
// sum of exponentials and target logit (one all-reduce of 2N values).
#pragma once
#include "executor/model/exec.h"
#include "executor/model/micro.h"

namespace mplan::exec {

// tokens (N) -> (Nsp, C) summed over tp ("embedding" + tp_allreduce / tp_reduce_scatter)
Tensor vocab_parallel_embedding_forward(Exec& ex, int wte, const Micro& mb);
// dx (Nsp, C) -> word embedding gradient
void vocab_parallel_embedding_backward(Exec& ex, int wte, const Micro& mb, const Tensor& dx);

struct XentState {
  Tensor logits;         // (N, V_l), becomes dlogits in the backward
  Tensor gmax, gsumexp;  // (N)
};
// logits (N, V_l) -> per-token loss summed (double); state kept for the backward
double vocab_parallel_xent_forward(Exec& ex, const Micro& mb, XentState& s);
// logits -> dlogits in place, each token's loss weighted by `dloss`
void vocab_parallel_xent_backward(Exec& ex, const Micro& mb, XentState& s, float dloss);

}  // namespace mplan::exec
