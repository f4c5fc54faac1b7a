// ModelChunk: the layers one pipeline rank runs for one virtual-pipeline chunk (plus the embedding
// on the first chunk of the model and the head on the last), with forward/backward per micro-batch
// and full activation recomputation for the first `recompute_layers` layers.
#pragma once
#include <vector>

#include "executor/model/attention.h"
#include "executor/model/embed_head.h"
#include "executor/model/mlp.h"
#include "executor/model/moe.h"

namespace mplan::exec {

struct LayerParams {
  int index = 0;  // global layer index
  bool moe = false;
  AttnParams attn;
  MlpParams mlp;
  MoeParams moe_p;
};

struct LayerActs {
  Tensor x_in;          // (Nsp, C) layer input (always kept)
  bool stored = false;  // false: recompute the forward before the backward
  AttnActs attn;
  Tensor x_mid;  // (Nsp, C) after the attention residual
  MlpActs mlp;
  MoeActs moe;
};

struct ChunkActs {
  Tensor input;  // (Nsp, C) received activation (not on the first chunk)
  std::vector<LayerActs> layers;
  HeadActs head;
};

class ModelChunk {
 public:
  ModelChunk(ParamStore& ps, const LayoutDims& d, const ModelSpec& m, int first_layer, int num_layers, bool has_embedding,
             bool has_head, int recompute_layers);

  bool has_embedding() const { return has_embedding_; }
  bool has_head() const { return has_head_; }
  int first_layer() const { return first_layer_; }
  int num_layers() const { return int(layers_.size()); }

  // Returns the output (Nsp, C); on the head chunk returns an empty tensor and adds the summed token
  // losses to *loss_sum.
  Tensor forward(Exec& ex, const Micro& mb, const Tensor& input, ChunkActs& a, double* loss_sum);
  // Returns d input (Nsp, C), or an empty tensor on the embedding chunk. `dout` is ignored on the
  // head chunk, where each token's loss has gradient `dloss`.
  Tensor backward(Exec& ex, const Micro& mb, const Tensor& dout, ChunkActs& a, float dloss);

 private:
  Tensor layer_forward(Exec& ex, const LayerParams& p, const Micro& mb, const Tensor& x, LayerActs& a);
  Tensor layer_backward(Exec& ex, const LayerParams& p, const Micro& mb, const Tensor& dy, LayerActs& a);

  bool has_embedding_, has_head_;
  int first_layer_;
  int recompute_layers_;
  EmbeddingParams emb_;
  HeadParams head_;
  std::vector<LayerParams> layers_;
};

}  // namespace mplan::exec
