// A pipeline chunk's forward and backward over its layers, embedding and head.
#include "executor/model/chunk.h"

namespace mplan::exec {

ModelChunk::ModelChunk(ParamStore& ps, const LayoutDims& d, const ModelSpec& m, int first_layer, int num_layers,
                       bool has_embedding, bool has_head, int recompute_layers)
    : has_embedding_(has_embedding), has_head_(has_head), first_layer_(first_layer), recompute_layers_(recompute_layers) {
  if (has_embedding) emb_ = register_embedding(ps, d);
  for (int i = 0; i < num_layers; ++i) {
    LayerParams lp;
    lp.index = first_layer + i;
    lp.moe = m.is_moe_layer(lp.index);
    register_attention(ps, d, lp.index, lp.attn);
    if (lp.moe)
      register_moe(ps, d, lp.index, lp.moe_p);
    else
      register_mlp(ps, d, lp.index, lp.mlp);
    layers_.push_back(std::move(lp));
  }
  if (has_head) head_ = register_head(ps, d, has_embedding ? emb_.word : -1);
}

Tensor ModelChunk::layer_forward(Exec& ex, const LayerParams& p, const Micro& mb, const Tensor& x, LayerActs& a) {
  a.x_in = x;
  a.x_mid = attention_forward(ex, p.attn, mb, x, a.attn);
  a.stored = true;
  return p.moe ? moe_forward(ex, p.moe_p, a.x_mid, a.moe) : mlp_forward(ex, p.mlp, a.x_mid, a.mlp);
}

Tensor ModelChunk::layer_backward(Exec& ex, const LayerParams& p, const Micro& mb, const Tensor& dy, LayerActs& a) {
  if (!a.stored) {  // full recomputation: rebuild this layer's activations from its input
    bool was = ex.recomputing;
    ex.recomputing = true;
    layer_forward(ex, p, mb, a.x_in, a);
    ex.recomputing = was;
  }
  Tensor dmid = p.moe ? moe_backward(ex, p.moe_p, dy, a.moe) : mlp_backward(ex, p.mlp, dy, a.mlp);
  a.moe = MoeActs();
  a.mlp = MlpActs();
  Tensor dx = attention_backward(ex, p.attn, mb, dmid, a.attn);
  a.attn = AttnActs();
  a.x_mid = Tensor();
  return dx;
}

Tensor ModelChunk::forward(Exec& ex, const Micro& mb, const Tensor& input, ChunkActs& a, double* loss_sum) {
  Tensor x = has_embedding_ ? embedding_forward(ex, emb_, mb) : input;
  a.input = input;
  a.layers.assign(layers_.size(), LayerActs());
  for (size_t i = 0; i < layers_.size(); ++i) {
    Tensor y = layer_forward(ex, layers_[i], mb, x, a.layers[i]);
    if (int(i) < recompute_layers_) {  // keep only the input
      Tensor keep = a.layers[i].x_in;
      a.layers[i] = LayerActs();
      a.layers[i].x_in = keep;
    }
    x = y;
  }
  if (!has_head_) return x;
  double l = head_forward(ex, head_, mb, x, a.head);
  if (loss_sum && !ex.recomputing) *loss_sum += l;
  return Tensor();
}

Tensor ModelChunk::backward(Exec& ex, const Micro& mb, const Tensor& dout, ChunkActs& a, float dloss) {
  Tensor dx = has_head_ ? head_backward(ex, head_, mb, a.head, dloss) : dout;
  a.head = HeadActs();
  for (size_t i = layers_.size(); i-- > 0;) {
    dx = layer_backward(ex, layers_[i], mb, dx, a.layers[i]);
    a.layers[i] = LayerActs();
  }
  if (has_embedding_) {
    embedding_backward(ex, emb_, mb, dx);
    return Tensor();
  }
  return dx;
}

}  // namespace mplan::exec
