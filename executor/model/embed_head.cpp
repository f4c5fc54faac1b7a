// Embedding and LM head (final norm, vocabulary-parallel logits and cross-entropy).
#include "executor/model/embed_head.h"

#include "executor/parallel/tp_regions.h"

namespace mplan::exec {

int register_word_embedding(ParamStore& ps, const LayoutDims& d, bool copy_for_head) {
  ParamSpec s;
  s.name = "embedding.word";
  s.rows = d.V_l;
  s.cols = d.C;
  s.map = ShardMap::rows(d.V, d.C, d.vstart, d.vstart + d.v_valid);
  s.embedding_group = d.tied && d.pp > 1;
  s.tied_copy = copy_for_head;
  return ps.add(s);
}

EmbeddingParams register_embedding(ParamStore& ps, const LayoutDims& d) {
  EmbeddingParams p;
  p.word = register_word_embedding(ps, d, false);
  if (d.learned_pos) {
    p.position = ps.add(tp_replicated(d, "embedding.position", d.max_pos, d.C, d.sp));
  }
  return p;
}

HeadParams register_head(ParamStore& ps, const LayoutDims& d, int word_embedding) {
  HeadParams p;
  p.norm = register_norm(ps, d, "final_norm", d.C, d.sp);
  if (d.tied) {
    p.weight = word_embedding >= 0 ? word_embedding : register_word_embedding(ps, d, true);
  } else {
    ParamSpec s;
    s.name = "lm_head.weight";
    s.rows = d.V_l;
    s.cols = d.C;
    s.map = ShardMap::rows(d.V, d.C, d.vstart, d.vstart + d.v_valid);
    p.weight = ps.add(s);
  }
  return p;
}

namespace {
// positions of this rank's sequence-parallel token shard
const int32_t* sp_positions(const LayoutDims& d, const Micro& mb) {
  return mb.pos.data() + (d.sp ? int64_t(d.tp_rank) * d.Nsp : 0);
}
}  // namespace

Tensor embedding_forward(Exec& ex, const EmbeddingParams& p, const Micro& mb) {
  Tensor x = vocab_parallel_embedding_forward(ex, p.word, mb);
  if (p.position >= 0) {
    OpTimers::Scope t(ex.timers, "embedding");
    ex.be.position_forward(x.data(), ex.ps.w(p.position), sp_positions(ex.d, mb), ex.d.Nsp, ex.d.C);
  }
  return x;
}

void embedding_backward(Exec& ex, const EmbeddingParams& p, const Micro& mb, const Tensor& dx) {
  if (p.position >= 0) {
    OpTimers::Scope t(ex.timers, "embedding");
    ex.be.position_backward(ex.ps.g(p.position), dx.data(), sp_positions(ex.d, mb), ex.d.Nsp, ex.d.C);
  }
  vocab_parallel_embedding_backward(ex, p.word, mb, dx);
}

double head_forward(Exec& ex, const HeadParams& p, const Micro& mb, const Tensor& x, HeadActs& a) {
  const LayoutDims& d = ex.d;
  Tensor h_sp = norm_forward(ex, "final_norm", p.norm, x, d.Nsp, d.C, a.norm);
  a.hf = tp_enter_forward(ex, h_sp, d.C);
  a.xent.logits = ex.alloc({d.N, d.V_l});
  {
    OpTimers::Scope t(ex.timers, "lm_head_gemm");
    ex.be.matmul_forward(a.xent.logits.data(), a.hf.data(), ex.ps.w(p.weight), nullptr, d.N, d.C, d.V_l);
  }
  if (ex.capture_logits) {
    const size_t at = ex.capture_logits->size();
    ex.capture_logits->resize(at + size_t(d.N * d.V_l));
    ex.be.download(ex.capture_logits->data() + at, a.xent.logits.data(), d.N * d.V_l);
  }
  return vocab_parallel_xent_forward(ex, mb, a.xent);
}

Tensor head_backward(Exec& ex, const HeadParams& p, const Micro& mb, HeadActs& a, float dloss) {
  const LayoutDims& d = ex.d;
  vocab_parallel_xent_backward(ex, mb, a.xent, dloss);
  Tensor dhf = ex.alloc({d.N, d.C});
  Tensor& dl = a.xent.logits;
  linear_backward(ex, "lm_head_gemm", dhf.data(), false, dl, dl.data(), a.hf, a.hf.data(), p.weight, -1, d.N, d.C, d.V_l);
  Tensor dh_sp = tp_enter_backward(ex, std::move(dhf), d.C);
  Tensor dx = ex.alloc({d.Nsp, d.C});
  norm_backward(ex, "final_norm", p.norm, dh_sp.data(), a.norm, dx.data(), false, d.Nsp, d.C);
  return dx;
}

}  // namespace mplan::exec
