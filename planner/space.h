// The search space of one job. A *structure* fixes the sizes that shape the pipeline and the
// per-rank work (tp, pp, vpp, layer split, cp, dp, ep, etp, micro-batch); its *variants* add the
// choices that change costs but not the structure (sequence parallel and TP-comm overlap, the CP
// exchange, recomputation, schedule); each variant is tried with every allowed ZeRO level.
//
// What is tried (and why):
//  - tp: divisors of the GPUs that divide heads, query groups and the FFN width; inside one NVLink
//    domain unless allowed. sp: on and off for dense models (MoE needs it on), with and without
//    TP-comm overlap when on.
//  - pp: divisors with pp*vpp <= pipeline units; an even split when the layers divide, else (and in
//    addition, when it differs) Megatron's balanced split that counts the embedding and the loss as
//    layers (balanced_pipeline_layout). vpp: 1 .. layers per stage, at most kMaxSearchedVpp unless
//    --fix/--max vpp say otherwise (so the space grows linearly with the layers); interleaved for vpp > 1.
//    With vpp = 1 also lighter first and last stages (uneven_stage_splits): the last stage holds the
//    LM head and the loss, often a few layers' worth of work, and then sets the pace of the pipeline.
//  - schedule: of those the job's framework runs (core/framework.h framework_runs), 1F1B and
//    zero-bubble (ZB-H1) for vpp = 1, interleaved for vpp > 1. GPipe is left out unless fixed or the
//    framework's only schedule: it has 1F1B's bubble but holds all micro-batches' activations, so 1F1B
//    dominates it. tp, pp, cp, uneven splits and micro-batch counts the framework lacks are rejected.
//  - cp: divisors while each rank keeps >= 1024 tokens (seq/cp >= 1024, or --max cp), with the p2p
//    ring, all-to-all and all-gather exchanges the framework runs (for Megatron, those Transformer
//    Engine runs with the model's attention: core/megatron_rules.h).
//  - ep: divisors of the experts tiling tp*cp*dp; etp: divisors of tp (Megatron's default is etp=tp).
//  - mbs: every divisor of gbs/dp. ZeRO 0-3. recompute: none, selective (with a few of Megatron's
//    module sets, recompute_module_sets), full of all layers, and full of the first k layers of each
//    chunk for k in 1, 2, 3, 4, 6, 8, 12, 16 ... below the smallest chunk; none and selective also with
//    fine-grained activation offloading (offload_module_sets).
//  - moe_a2a_overlap (EP all-to-alls beside another micro-batch's compute): off, and on where Megatron
//    allows it — MoE with ep > 1, pp = 1 or interleaved, no full recompute and no 'moe' recompute
//    module. `--fix moe_a2a_overlap=on|off` (or the job's own parallel.moe_a2a_overlap, which fixes it on) narrows it.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "planner/bounds.h"
#include "planner/constraints.h"

namespace mplan {
struct SearchStats;
}

namespace mplan::planner {

// Largest vpp tried when neither --fix nor --max names vpp (published layouts use up to 24).
constexpr int kMaxSearchedVpp = 64;

struct Structure {
  Layout base;  // tp pp vpp pipe cp dp ep etp mbs set; the rest default
  int pipe_id = 0;
};

struct Space {
  std::vector<Structure> structures;
  std::vector<PipeShape> pipes;
  int64_t rejected = 0;
  std::vector<std::pair<const char*, int64_t>> rejected_by_rule;
};

// All valid structures of the job within the limits; rejected partial layouts are counted per rule.
Space enumerate_structures(const Job& job, const Limits& lim, bool allow_tp_across_nvlink);

// The variants of a structure (zero left at its default), appended to `out` when given; rejected
// variants are counted into `space` when given. Returns how many there are.
int64_t structure_variants(const Job& job, const Limits& lim, const Structure& st, const PipeShape& ps, std::vector<Layout>* out,
                           Space* space);

// structure_variants' count and rejections for many structures of one job and limits (one per thread):
// they depend only on the structure's tp, cp, pp, vpp, ep, micro-batch size and its pipe shape's
// smallest chunk, so structures that agree there are counted once and their rejections replayed.
class VariantCounter {
 public:
  int64_t count(const Job& job, const Limits& lim, const Structure& st, const PipeShape& ps, Space* space);

 private:
  struct Counted {
    int64_t variants = 0;
    std::vector<std::pair<const char*, int64_t>> rejected;  // in the order structure_variants met them
  };
  std::map<std::array<int, 7>, Counted> memo_;
};

// First/last-stage layer counts tried for pp > 1 and vpp = 1 (Megatron's
// --decoder-first/last-pipeline-num-layers): the middle stages hold n layers each, the last stage
// n - k for k = 1..3 (it holds the LM head and the loss) and the first n - j for j = -2..2 (the
// embedding is a lookup: the first stage may take a layer or two more, or fewer), with the layers
// adding up; splits equal to the even or the balanced one are left out.
// Sorted, deterministic.
std::vector<std::pair<int, int>> uneven_stage_splits(const ModelSpec& m, int pp);

// Megatron's selective-recompute module sets the search tries (0 = its default, core_attn): for
// dense models core_attn (+ layernorm, + mlp); for MoE models layernorm with moe_act or the whole
// moe layer (+ mla_up_proj with MLA). Only {0} for frameworks without --recompute-modules.
std::vector<uint32_t> recompute_module_sets(const Job& job);
// Fine-grained activation offloading sets tried with no and selective recompute: none, and the
// attention core and projection inputs (dense) or the expert inputs and activations (MoE); only
// none for frameworks without it.
std::vector<uint32_t> offload_module_sets(const Job& job);

// ZeRO levels allowed by the limits.
std::vector<int> zero_levels(const Limits& lim);

}  // namespace mplan::planner
