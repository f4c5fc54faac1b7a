// Op vocabulary: ids, names, kinds and roles are one table; per-rank GEMM FLOPs of a layer add up to
// the model FLOPs, split over TP/CP/EP.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/counting.h"
#include "core/ops.h"
#include "core/presets.h"

using namespace mplan;

namespace {
// forward FLOPs of gemm + attention ops of all layers and the head, per rank and micro-batch
double forward_matmul_flops(const ModelSpec& m, const OpContext& c) {
  double f = 0;
  auto add = [&](const std::vector<Op>& ops) {
    for (auto& o : ops)
      if ((o.kind == OpKind::gemm && o.id != OpId::router) || o.kind == OpKind::attention) f += o.fwd_flops;
  };
  for (int i = 0; i < m.num_layers; ++i) add(layer_ops(m, i, c));
  add(head_ops(m, c));
  return f;
}
}  // namespace

TEST(Ops, NamesAreInTheVocabulary) {
  OpContext c;
  c.tp = 2;
  c.sp = true;
  c.cp = 2;
  c.ep = 4;
  c.etp = 2;
  c.seq = 1024;
  for (const char* n : {"deepseek-v3", "llama3-8b", "mixtral-8x7b"}) {
    ModelSpec m = *model_preset(n);
    auto all = layer_ops(m, m.num_layers - 1, c);
    auto e = embedding_ops(m, c), h = head_ops(m, c);
    all.insert(all.end(), e.begin(), e.end());
    all.insert(all.end(), h.begin(), h.end());
    for (auto& o : all) {
      auto& v = op_vocabulary();
      EXPECT_NE(std::find(v.begin(), v.end(), o.name), v.end()) << o.name;
      // every op carries its id, whose table entry gives its name and kind
      ASSERT_NE(o.id, OpId::count) << o.name;
      EXPECT_EQ(op_name(o.id), o.name);
      EXPECT_EQ(op_info(o.id).kind, o.kind) << o.name;
    }
  }
}

TEST(Ops, IdsNamesAndRolesAreOneTable) {
  const auto& v = op_vocabulary();
  ASSERT_EQ(v.size(), kOpCount);
  for (size_t i = 0; i < kOpCount; ++i) {
    const OpId id = OpId(i);
    EXPECT_EQ(op_info(id).id, id);
    EXPECT_EQ(op_name(id), v[i]);
    EXPECT_EQ(op_id(v[i]), id) << v[i];  // names round-trip
  }
  EXPECT_FALSE(op_id("gemm").has_value());  // a plain GEMM benchmark row is not a vocabulary op
  EXPECT_FALSE(op_id("").has_value());
  EXPECT_EQ(op_name(OpId::count), "");
  // each role names exactly the ops the cost rules treat so
  auto with = [&](OpRole r) {
    std::vector<std::string> out;
    for (size_t i = 0; i < kOpCount; ++i)
      if (op_has_role(OpId(i), r)) out.emplace_back(op_name(OpId(i)));
    return out;
  };
  EXPECT_EQ(with(kTpCollective), (std::vector<std::string>{"tp_allgather", "tp_reduce_scatter", "tp_allreduce"}));
  EXPECT_EQ(with(kMoeTokenAllToAll), (std::vector<std::string>{"dispatch_a2a", "combine_a2a"}));
  EXPECT_EQ(with(kBf16UnderFp8), (std::vector<std::string>{"router", "lm_head_gemm"}));
  EXPECT_EQ(with(kGroupedGemm), (std::vector<std::string>{"expert_fc1_gemm", "expert_fc2_gemm"}));
  EXPECT_FALSE(op_has_role(OpId::count, kTpCollective));
}

TEST(Ops, ForwardFlopsTimesThreeEqualModelFlopsPerRank) {
  for (const char* n : {"llama3-70b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt3-175b", "deepseek-v3"}) {
    ModelSpec m = *model_preset(n);
    m.mtp_num_layers = 0;
    for (int tp : {1, 4})
      for (int cp : {1, 2}) {
        OpContext c;
        c.tp = tp;
        c.sp = tp > 1;
        c.cp = cp;
        c.ep = m.moe ? 2 : 1;
        c.micro_batch = 2;
        c.seq = 4096;
        double per_rank = forward_matmul_flops(m, c) * 3;
        double model = model_flops_per_step(m, 2, 4096, AttentionFlops::causal) / (tp * cp);
        // Megatron's formula adds the MLA norm "+1" terms; everything else must match exactly
        EXPECT_NEAR(per_rank / model, 1.0, m.mla ? 1e-3 : 1e-9) << n << " tp" << tp << " cp" << cp;
      }
  }
}

TEST(Ops, SavedActivationsMatchKorthikantiWithoutDropout) {
  // GPT-style layer (MHA, GELU, f=4h), SP on: saved bytes = s*b*h*(32/t) + softmax stats;
  // Korthikanti's 34 includes two 1-byte dropout masks (s*b*h each).
  ModelSpec m = *model_preset("gpt3-175b");
  OpContext c;
  c.tp = 8;
  c.sp = true;
  c.micro_batch = 1;
  c.seq = 2048;
  double saved = 0;
  for (auto& o : layer_ops(m, 0, c)) saved += o.saved_bytes;
  double sbh = 2048.0 * m.hidden_size;
  double stats = 4.0 * 1 * (96.0 / 8) * 2048;
  EXPECT_NEAR(saved, sbh * 32 / 8 + stats, 1.0);
}

TEST(Ops, SavedActivationsReproduceKorthikantiFormula) {
  // Korthikanti et al. 2022, eq. (1)-(2): per layer s*b*h*(34 + 5*a*s/h) bytes without parallelism
  // (unfused attention, dropout on); with TP+SP everything divides by t; selective recompute keeps 34/t.
  ModelSpec m = *model_preset("gpt3-175b");
  m.hidden_dropout = m.attention_dropout = 0.1;
  for (int t : {1, 8}) {
    OpContext c;
    c.tp = t;
    c.sp = t > 1;
    c.micro_batch = 1;
    c.seq = 2048;
    c.flash_attention = false;
    double saved = 0, scores = 0;
    for (auto& o : layer_ops(m, 0, c)) {
      saved += o.saved_bytes;
      if (o.name == "attn_softmax") scores += o.saved_bytes;
    }
    double s = 2048, b = 1, h = double(m.hidden_size), a = m.num_attention_heads;
    EXPECT_NEAR(saved, s * b * h * (34 + 5 * a * s / h) / t, 1.0) << "t=" << t;
    EXPECT_NEAR(saved - scores, s * b * h * 34 / t, 1.0) << "t=" << t;
  }
}

TEST(Ops, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(collective_busbw_factor(Collective::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(Collective::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(Collective::send_recv, 2), 1.0);
}

TEST(Ops, EagerPointwiseOpsMoveTheBytesOfTorchtitansEagerKernels) {
  // Llama 3 8B (h 4096, 32 q / 8 kv heads of 128, SwiGLU 14336), bf16, one 4096-token micro-batch
  const ModelSpec m = *model_preset("llama3-8b");
  OpContext fused;
  fused.seq = 4096;
  OpContext eager = fused;
  eager.eager_pointwise = true;
  auto bytes = [&](const OpContext& c, const std::string& name) {
    for (const Op& o : layer_ops(m, 0, c))
      if (o.name == name) return o.fwd_bytes;
    return -1.0;
  };
  const double T = 4096, a = 2;
  // RMSNorm: fused reads and writes bf16; eager x.float(), pow, mean, product, type_as, weight product
  EXPECT_DOUBLE_EQ(bytes(fused, "attn_norm"), 2 * a * T * 4096);
  EXPECT_DOUBLE_EQ(bytes(eager, "attn_norm"), (28 + 4 * a) * T * 4096);
  // RoPE over q and k: 16 + 2a bytes per element eager (fp32 complex product), 2a fused
  EXPECT_DOUBLE_EQ(bytes(eager, "rope") / bytes(fused, "rope"), (16 + 2 * a) / (2 * a));
  // SwiGLU: silu and the gate product apart (5a) instead of one kernel (3a)
  EXPECT_DOUBLE_EQ(bytes(eager, "act") / bytes(fused, "act"), 5.0 / 3.0);
  // residual adds are one kernel either way; GEMMs do not change
  EXPECT_DOUBLE_EQ(bytes(eager, "attn_residual"), bytes(fused, "attn_residual"));
  EXPECT_DOUBLE_EQ(bytes(eager, "fc1_gemm"), bytes(fused, "fc1_gemm"));
  // torchtitan's repeat_kv() and the output's .contiguous() copy come on top, compiled or not
  OpContext titan = fused;
  titan.kv_repeated = true;
  EXPECT_DOUBLE_EQ(bytes(titan, "rope") - bytes(fused, "rope"), a * T * (2 * 32 * 128 + (8 + 32) * 256));
}

TEST(Ops, PyTorchRingAttentionChargesItsMergesAndFp32Accumulation) {
  // llama3-8b, 32k local tokens, cp 4, K/V repeated to all 32 heads (torchtitan): the counts of
  // ring_merge_bytes reduce to 158 B forward and 256 B backward per output element (E = K = V elements)
  ModelSpec m = *model_preset("llama3-8b");
  OpContext c;
  c.cp = 4;
  c.seq = 4 * 32768;
  c.cp_comm = OpContext::CpComm::allgather;
  c.kv_repeated = true;
  auto attn = [&](const OpContext& x) {
    for (const Op& o : layer_ops(m, 0, x))
      if (o.kind == OpKind::attention) return o;
    return Op{};
  };
  EXPECT_EQ(attn(c).side_fwd_bytes, 0.0);  // Transformer Engine's fused corrections: not charged
  c.torch_ring_attention = true;
  const double E = 32768.0 * 32 * 128;
  EXPECT_DOUBLE_EQ(attn(c).side_fwd_bytes, 158 * E);
  EXPECT_DOUBLE_EQ(attn(c).side_bwd_bytes, 256 * E);
  // without context parallelism there is no ring
  OpContext one = c;
  one.cp = 1;
  one.seq = 32768;
  EXPECT_EQ(attn(one).side_fwd_bytes, 0.0);
  EXPECT_EQ(attn(one).side_bwd_bytes, 0.0);
}

// Op::saved is an inline list (SavedList): its sum is saved_bytes, copies keep every tensor, and an op
// that would keep more than kMax tensors throws instead of writing past the list.
TEST(Ops, SavedListHoldsEveryKeptTensor) {
  OpContext c;
  c.tp = 2;
  c.sp = true;
  c.ep = 4;
  c.seq = 2048;
  size_t most = 0, ops = 0;
  for (const char* n : {"deepseek-v3", "llama3-8b", "mixtral-8x7b", "gpt3-175b"}) {
    ModelSpec m = *model_preset(n);
    for (int layer : {0, m.num_layers - 1})
      for (const Op& o : layer_ops(m, layer, c)) {
        double sum = 0;
        for (const SavedTensor& t : o.saved) sum += t.bytes;
        EXPECT_DOUBLE_EQ(sum, o.saved_bytes) << n << " " << o.name;
        Op copy = o;
        ASSERT_EQ(copy.saved.size(), o.saved.size());
        for (size_t i = 0; i < o.saved.size(); ++i) EXPECT_EQ(copy.saved.begin()[i].bytes, o.saved.begin()[i].bytes);
        most = std::max(most, o.saved.size());
        ++ops;
      }
  }
  EXPECT_GT(ops, 40u);
  EXPECT_GE(most, 2u);
  EXPECT_LE(most, SavedList::kMax);
  SavedList full;
  for (size_t i = 0; i < SavedList::kMax; ++i) full.push_back({1.0, 0, 0});
  EXPECT_THROW(full.push_back({1.0, 0, 0}), std::length_error);
  EXPECT_EQ(full.size(), SavedList::kMax);
}

// A rotary pass runs only where the model rotates Q and K: not for learned absolute positions (added at
// the embedding, GPT-2/GPT-3) and not without positions (ALiBi's bias inside the attention kernel, the
// Nemotron hybrids), whose layers are otherwise the same ops.
TEST(Ops, OnlyRotaryModelsRunARotaryPass) {
  auto rope_ops = [](const ModelSpec& m) {
    OpContext c;
    c.micro_batch = 1;
    c.seq = 2048;
    const std::vector<Op> ops = layer_ops(m, 0, c);
    return std::count_if(ops.begin(), ops.end(), [](const Op& o) { return o.id == OpId::rope; });
  };
  ModelSpec rope = *model_preset("llama3-8b");
  EXPECT_EQ(rope_ops(rope), 1);
  ModelSpec none = rope, learned = rope;
  none.position_embedding = PositionEmbedding::none;
  learned.position_embedding = PositionEmbedding::learned;
  learned.max_position_embeddings = 8192;
  EXPECT_EQ(rope_ops(none), 0);
  EXPECT_EQ(rope_ops(learned), 0);
  OpContext c;
  c.micro_batch = 1;
  c.seq = 2048;
  EXPECT_EQ(layer_ops(rope, 0, c).size(), layer_ops(none, 0, c).size() + 1);
  // the hybrids' presets carry no positions (Megatron-Bridge's position_embedding_type none)
  for (const char* n : {"nemotron-3-nano", "nemotron-3-super", "nemotron-h-8b"})
    EXPECT_EQ(model_preset(n)->position_embedding, PositionEmbedding::none) << n;
}
