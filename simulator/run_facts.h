// Facts about published runs: the settings the recipe behind a published throughput row used that its
// table did not print (recompute and its modules, distributed optimizer / Megatron-FSDP, gradient
// dtype, fused cross-entropy, fp8 parameter storage, activation offloading, MoE dispatcher, routing
// and capacity, TP-comm overlap, pipeline layout, attention kernel). They live in data/run_facts/
// (runs.csv: which rows a run matches; facts.csv: fact, value, citation; sources.csv: the pinned
// repositories), embedded in the binary, so no C++ names a source or a row.
#pragma once
#include <array>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"
#include "simulator/published.h"

namespace mplan {

struct RunFact {
  std::string fact, value, note, citation;
};

// The facts of every run the row matches, least specific match first (a more specific run's fact
// overrides a source-wide one). A run matches when each of its `col=value` (exact) and `col~=value`
// (case-insensitive substring) conditions holds on the row.
std::vector<RunFact> run_facts_for(const CsvRow& row);

// Applies the facts the row's own columns leave open (a stated column wins over a recipe fact) to the
// plan, and appends what it set to `notes`. Facts that would break a layout rule are skipped. `read`,
// when given, collects the fact names the plan's settings made it look up.
void apply_run_facts(const std::vector<RunFact>& facts, const CsvRow& row, Plan& plan, std::string& notes,
                     std::set<std::string>* read = nullptr);

// The fact names published_run_from_row reads itself (published.cpp), not apply_run_facts: model
// dimensions that fill the row's blank columns, the framework, the FLOP convention of a TFLOP/s column.
// Every other fact name in facts.csv is applied by apply_run_facts or declared in
// data/run_facts/not_modelled.csv (test_run_facts checks both).
inline constexpr std::array<std::string_view, 9> kPublishedRowFacts = {
    "layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len", "framework", "tflops_flop_convention"};

}  // namespace mplan
