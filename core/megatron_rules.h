// Megatron-LM's and Transformer Engine's own assertions on a layout, beyond the general rules of
// validate_layout: context-parallel exchanges the model's attention supports, fp8 GEMM shapes,
// grouped-GEMM and fp8-recipe requirements of the recompute modules. validate_layout applies them to
// plans for framework megatron; the planner's enumerator calls the same predicates, and the Megatron
// export writes the options they assume. Each function cites the source line it mirrors (Megatron-LM
// d98e8a6 and TransformerEngine d0067d0, August 2026).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/parallel_config.h"

namespace mplan {

// Whether Transformer Engine's context-parallel attention runs this model with exchange c
// (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py
// attn_forward_func_with_cp, lines 5057-5067): sliding-window attention only with a2a or all_gather,
// attention sinks (softmax_type other than vanilla) only with a2a.
bool megatron_cp_comm_ok(const ModelSpec& m, CpCommType c);

// The first GEMM shape of a tp / etp split that breaks Transformer Engine's fp8 check
// (transformer_engine/pytorch/utils.py assert_dim_for_fp8_exec, called by Linear, LayerNormLinear and
// LayerNormMLP under fp8, mxfp8 and nvfp4: a GEMM input's last dimension divisible by 16 and the
// weight's rows by 8); "" when none or not an fp8-family precision. Attention and dense MLP widths
// depend on tp, routed experts' on etp.
std::string megatron_fp8_tp_problem(const ModelSpec& m, Precision prec, int tp);
std::string megatron_fp8_etp_problem(const ModelSpec& m, Precision prec, int etp);
// The tokens of a linear layer's input, mbs*seq/cp (/tp with sequence parallelism), must be divisible
// by 8 under fp8 (the same check's leading dimensions).
bool megatron_fp8_tokens_ok(Precision prec, int64_t mbs, int64_t seq, int cp, int tp, bool sp);

// Whether mplan's Megatron export turns on --moe-grouped-gemm: bf16-based and fp16 runs (Megatron-LM
// #2495, December 2025, removed the bf16-only assertion of GroupedGEMM and of EP with fp16), not fp32.
bool megatron_moe_grouped_gemm(Precision prec);
// Whether the export asks for fp8 current (tensorwise) scaling instead of Megatron's default delayed
// recipe: transformer_config.py __post_init__ rejects recomputing 'layernorm' or 'moe_act' under fp8
// with delayed scaling ("Delayed scaling does not support moe_act and layernorm recompute for fp8").
bool megatron_fp8_tensorwise(Precision prec, const ParallelConfig& p);

// Megatron-FSDP's --data-parallel-sharding-strategy as the ZeRO level it is (megatron/core/distributed/
// fsdp: no_shard 0, optim 1 (optimizer states), optim_grads 2 (+ gradients), optim_grads_params 3
// (+ parameters)); nullopt for any other text. Case-sensitive, as Megatron's argparse choices are.
std::optional<int> megatron_fsdp_zero(const std::string& strategy);
// The inverse: the strategy that shards what ZeRO level `zero` (0-3) shards.
const char* megatron_fsdp_strategy(int zero);

// --num-layers-per-virtual-pipeline-stage N for a virtual pipeline size, and back (arguments.py:
// virtual_pipeline_model_parallel_size = num_layers // pipeline_model_parallel_size // N); 0 when
// a size is not positive. They invert when pp * vpp divides the layers.
int megatron_layers_per_virtual_stage(int num_layers, int pp, int vpp);
int megatron_vpp_of(int num_layers, int pp, int layers_per_virtual_stage);

// Megatron's --pipeline-model-parallel-layout (megatron/core/transformer/pipeline_parallel_layer_layout.py):
// the pp*vpp stages in model order (chunk-major), '|' between them; E embedding, t decoder layer,
// m MTP layer, L loss; "x*N" and "(...)*N" repeat. The writer gives layers per [stage][chunk] (the
// last stage adds `mtp_layers` m's); the reader returns them for pp ranks (vpp 0: as many chunks as
// the stages make), empty when the text is not that grammar or its stages are not pp*vpp.
std::string megatron_pipeline_layout(const std::vector<std::vector<int>>& layers, int mtp_layers);
std::vector<std::vector<int>> parse_megatron_pipeline_layout(const std::string& s, int pp, int vpp);

// The precision flags Megatron-LM trains `prec` with (fp32 and tf32: none; fp8 with the tensorwise
// recipe where megatron_fp8_tensorwise), and the precision a run's flags select: --fp4-format, then
// --fp8-format (mxfp8 with --fp8-recipe mxfp8), --bf16, --fp16, else fp32.
std::vector<std::string> megatron_precision_args(Precision prec, const ParallelConfig& p);
Precision megatron_precision(bool bf16, bool fp16, bool fp8, const std::string& fp8_recipe, bool fp4);

// Megatron-LM's and Transformer Engine's assertions above as messages naming the field, appended to e.
void megatron_layout_rules(const ModelSpec& m, const TrainingSpec& t, const ParallelConfig& p, std::vector<std::string>& e);

// Megatron's --moe-layer-freq for the model's MoE placement (arguments.py: an int N, every N-th layer;
// or a Python list expression, "([0]*k+[1]*n)" or "[0,1,...]" with one entry per layer), and back into
// the leading dense layers and the period after them: false when the text is not a leading dense block
// followed by a periodic MoE pattern. The reader gives the same MoE layers, not always the same numbers
// (k = 3, period 2 reads back as k = 4: layer 3 is dense either way).
std::string megatron_moe_layer_freq(const ModelSpec& m);
bool megatron_read_moe_layer_freq(const std::string& text, int num_layers, MoeSpec& e);
// --window-size "left,0" (the tokens before and after the query) for a causal window of `window`
// tokens, and back; 0 when the text is not "left,0" (or "(left, 0)").
std::string megatron_window_size(int64_t window);
int64_t megatron_window_of(const std::string& text);

}  // namespace mplan
