// What the CPU (MPI) and CUDA (NCCL) profilers both measure from: the one-layer GPT-like model of a
// profile grid point, whose ops give the shapes and FLOPs/bytes of its kernel rows, and a collective
// row of a group inside one scale-up domain.
#pragma once
#include <string>

#include "core/model_spec.h"
#include "core/ops.h"
#include "profiles/profile_db.h"

namespace mplan::profiles {

// One layer of width h, heads of head_dim (GELU, LayerNorm: the ModelSpec defaults), vocabulary vocab.
inline ModelSpec grid_model(const std::string& name, int64_t h, int head_dim, int64_t vocab) {
  ModelSpec m;
  m.name = name;
  m.num_layers = 1;
  m.hidden_size = h;
  m.ffn_hidden_size = 4 * h;
  m.num_attention_heads = int(h / head_dim);
  m.num_query_groups = m.num_attention_heads;
  m.kv_channels = head_dim;
  m.vocab_size = vocab;
  return m;
}

// Collective c over g ranks of one node and scale-up domain, `bytes` of fp32 per rank; times unset.
inline CollectiveRow one_domain_collective(Collective c, int g, int64_t bytes) {
  CollectiveRow r;
  r.op = to_string(c);
  r.group_size = g;
  r.members_per_node = g;
  r.domains = 1;
  r.bytes = bytes;
  r.dtype = "fp32";
  return r;
}

}  // namespace mplan::profiles
