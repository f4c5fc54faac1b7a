// The ends of the model: embedding (vocabulary-parallel word embedding, learned positions) on the
// first pipeline chunk; final_norm -> lm_head_gemm -> cross_entropy on the last. A tied LM head
// uses the word embedding; with pp > 1 the last stage keeps its own copy whose gradients are summed
// with the first stage's over the embedding group (as Megatron does).
#pragma once
#include "executor/model/micro.h"
#include "executor/model/norm.h"
#include "executor/parallel/vocab_parallel.h"

namespace mplan::exec {

struct EmbeddingParams {
  int word = -1, position = -1;
};
struct HeadParams {
  NormParams norm;
  int weight = -1;  // the word embedding when tied
};

// `copy_for_head`: registers the last stage's copy of a tied word embedding.
int register_word_embedding(ParamStore& ps, const LayoutDims& d, bool copy_for_head);
EmbeddingParams register_embedding(ParamStore& ps, const LayoutDims& d);
HeadParams register_head(ParamStore& ps, const LayoutDims& d, int word_embedding);

// tokens -> (Nsp, C)
Tensor embedding_forward(Exec& ex, const EmbeddingParams& p, const Micro& mb);
void embedding_backward(Exec& ex, const EmbeddingParams& p, const Micro& mb, const Tensor& dx);

struct HeadActs {
  NormActs norm;
  Tensor hf;  // (N, C)
  XentState xent;
};
// x (Nsp, C) -> summed token losses of this rank's tokens
double head_forward(Exec& ex, const HeadParams& p, const Micro& mb, const Tensor& x, HeadActs& a);
// -> dx (Nsp, C) for d loss / d token loss = dloss
Tensor head_backward(Exec& ex, const HeadParams& p, const Micro& mb, HeadActs& a, float dloss);

}  // namespace mplan::exec
