// The ParallelConfig descriptor table: names unique, every field round-trips through its text and the
// plan JSON, every member of ParallelConfig has a row, and the non-1:1 Megatron value maps invert.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "core/json_fields.h"

#include "core/megatron_rules.h"
#include "core/parallel_fields.h"
#include "core/training_fields.h"
#include "tests/generated_doc.h"

namespace mplan {
namespace {

// The table as Markdown: docs/plan_fields.md's table.
std::string parallel_fields_markdown() {
  std::string s =
      "| plan key | mplan option | Megatron-LM | printed argument / run fact | torchtitan | type | range | search | what |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  const char* types[] = {"integer", "boolean", "number", "choice", "modules", "layout"};
  const char* scopes[] = {"job", "layout", ""};
  auto cell = [](const char* v) {  // a code span; '|' escaped so that it stays in its column
    std::string s = *v ? "`" + std::string(v) + "`" : "";
    for (size_t at = s.find('|'); at != std::string::npos; at = s.find('|', at + 2)) s.insert(at, "\\");
    return s;
  };
  for (const ParallelField& f : parallel_fields()) {
    std::string range = f.type() == FieldType::integer ? std::to_string(int64_t(f.min)) + ".." + std::to_string(int64_t(f.max))
                        : f.access.choices             ? join_names(f.access.choices(), " \\| ")
                                                       : "";
    s += "| `" + std::string(f.json) + "` | " + cell(f.cli) + " | " + cell(f.megatron) + " | " + cell(f.log) + " | " +
         cell(f.torchtitan) + " | " + types[int(f.type())] + " | " + range + " | " + scopes[int(f.scope)] + " | " + f.doc +
         " |\n";
  }
  return s;
}

// A value of the field other than ParallelConfig{}'s.
std::string other_value(const ParallelField& f, const ParallelConfig& p) {
  switch (f.type()) {
    case FieldType::integer:
      return std::to_string(p.*f.access.i == int(f.min) ? int(f.min) + 1 : int(f.min));
    case FieldType::boolean:
      return p.*f.access.b ? "false" : "true";
    case FieldType::number:
      return "1.25";
    case FieldType::layout:
      return "4,3;2,1";
    case FieldType::modules:
      return f.access.choices().back() + "," + f.access.choices().front();
    case FieldType::choice:
      break;
  }
  return f.access.choices().back() == field_text(f, p) ? f.access.choices().front() : f.access.choices().back();
}

TEST(ParallelFields, NamesAreUniqueAndDocumented) {
  std::set<std::string> json, cli, megatron;
  for (const ParallelField& f : parallel_fields()) {
    EXPECT_TRUE(json.insert(f.json).second) << f.json;
    if (*f.cli) {
      EXPECT_TRUE(cli.insert(f.cli).second) << f.cli;
    }
    if (f.map == MegatronMap::direct) {
      EXPECT_TRUE(megatron.insert(f.megatron).second) << f.megatron;
    }
    EXPECT_GT(std::string(f.doc).size(), 8u) << f.json;
    EXPECT_EQ(parallel_field(f.json), &f);
  }
  EXPECT_EQ(parallel_field("no_such_field"), nullptr);
  // every member of ParallelConfig is a row (a new member without one fails here: add its row)
  EXPECT_EQ(json.size(), 38u);
}

TEST(ParallelFields, EveryFieldRoundTripsThroughTextAndPlanJson) {
  for (const ParallelField& f : parallel_fields()) {
    ParallelConfig p;
    p.world_size = 64;
    p.moe_capacity_factor = 1.0;  // moe_pad_to_capacity is written with a capacity factor
    const std::string v = other_value(f, p), before = field_text(f, p);
    ASSERT_EQ(set_field_text(f, p, v), "") << f.json << " = " << v;
    EXPECT_NE(field_text(f, p), before) << f.json;
    auto back = parallel_from_json(parallel_to_json(p));
    ASSERT_TRUE(back) << f.json << ": " << back.error().message();
    EXPECT_EQ(field_text(f, *back), field_text(f, p)) << f.json;
    EXPECT_EQ(parallel_to_json(*back), parallel_to_json(p)) << f.json;
  }
}

TEST(ParallelFields, BadTextNamesWhatIsValid) {
  ParallelConfig p;
  EXPECT_NE(set_field_text(*parallel_field("tp"), p, "0").find("1.."), std::string::npos);
  EXPECT_NE(set_field_text(*parallel_field("zero"), p, "4").find("0..3"), std::string::npos);
  EXPECT_NE(set_field_text(*parallel_field("sp"), p, "yes").find("true or false"), std::string::npos);
  EXPECT_NE(set_field_text(*parallel_field("schedule"), p, "zb2").find("gpipe|1f1b|interleaved|zb"), std::string::npos);
  EXPECT_NE(set_field_text(*parallel_field("recompute_modules"), p, "mlpp").find("'mlpp' is not a Megatron recompute module"),
            std::string::npos);
  EXPECT_NE(set_field_text(*parallel_field("pipeline_layout"), p, "4,x").find("unexpected character 'x'"), std::string::npos);
  EXPECT_NE(set_field_text(*parallel_field("moe_capacity_factor"), p, "0").find("expected a number"), std::string::npos);
}

TEST(ParallelFields, DerivedDefaultsFollowTheFieldsBefore) {
  auto p = parallel_from_json({{"world_size", 16}, {"tp", 2}, {"pp", 2}, {"vpp", 2}});
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_TRUE(p->sp);
  EXPECT_EQ(p->schedule, Schedule::interleaved);
}

TEST(ParallelFields, JobFieldsCopyAloneAndTheMarkdownListsEveryField) {
  ParallelConfig job, dst;
  job.main_params = MainParams::bf16, job.dp_replicate = 2, job.tp = 8;
  copy_fields(dst, job, FieldScope::job);
  EXPECT_EQ(dst.main_params, MainParams::bf16);
  EXPECT_EQ(dst.dp_replicate, 2);
  EXPECT_EQ(dst.tp, 1);
  std::string md = parallel_fields_markdown();
  for (const ParallelField& f : parallel_fields()) EXPECT_NE(md.find("| `" + std::string(f.json) + "` |"), std::string::npos);
}

// docs/plan_fields.md is the table's Markdown (MPLAN_UPDATE_GOLDEN=1 rewrites it).
TEST(ParallelFields, DocsListTheTable) {
  expect_generated_doc(
      "docs/plan_fields.md",
      "# Plan fields\n\nThe fields of a plan's `parallel` object, generated from the descriptor table in "
      "`core/parallel_fields.cpp` (tests/core/test_parallel_fields.cpp keeps this file equal to it; "
      "`MPLAN_UPDATE_GOLDEN=1` rewrites it). Each row is read and written by the plan JSON, the mplan options, the "
      "Megatron-LM export and its parse, and the planner (scope job: every layout of a search keeps the job's "
      "value). To add a field, add a member to `ParallelConfig`, a row to the table, and the code that uses the "
      "value; the rest follows from the row.\n\n",
      parallel_fields_markdown());
}

// The TrainingSpec table: every member a row, each round-trips through its text and the plan JSON,
// and a bad value names what would be valid.
TEST(TrainingFields, EveryFieldRoundTripsAndBadTextNamesWhatIsValid) {
  std::set<std::string> cli;
  TrainingSpec base;
  base.global_batch_size = 64, base.seq_length = 4096;
  for (const TrainingField& f : training_fields()) {
    EXPECT_TRUE(cli.insert(f.cli).second) << f.cli;
    if (*f.megatron) {
      EXPECT_EQ(training_field_of_flag(f.megatron), &f);
    }
    TrainingSpec t = base;
    const std::string before = training_field_text(f, t);
    const std::string v = f.i ? std::to_string(f.max) : f.b ? "true" : f.choices().back();
    ASSERT_EQ(set_training_field_text(f, t, v), "") << f.cli;
    EXPECT_NE(training_field_text(f, t), before) << f.cli;
    if (f.i) {
      EXPECT_NE(set_training_field_text(f, t, std::to_string(f.min - 1)).find("expected an integer in"), std::string::npos);
    } else if (!f.b) {
      EXPECT_NE(set_training_field_text(f, t, "x").find(f.choices().front()), std::string::npos) << f.cli;
    }
    if (!*f.json || f.i == &TrainingSpec::packed_doc_tokens) continue;  // framework: the plan's; packed: at most seq
    auto back = training_from_json(training_to_json(t));
    ASSERT_TRUE(back) << f.cli << ": " << back.error().message();
    EXPECT_EQ(training_field_text(f, *back), training_field_text(f, t)) << f.cli;
  }
  // every member of TrainingSpec is a row (a new member without one fails here: add its row)
  EXPECT_EQ(cli.size(), 7u);
  EXPECT_EQ(training_field_of_flag("--no-such-flag"), nullptr);
  EXPECT_FALSE(training_from_json({{"seq_length", 8}, {"precision", "bf16"}}));  // global_batch_size is required
  EXPECT_EQ(training_to_json(base).count("packed_doc_tokens"), 0u);              // written only when set
}

TEST(MegatronValueMaps, ShardingStrategyAndZeroInvert) {
  for (int z = 0; z <= 3; ++z) EXPECT_EQ(megatron_fsdp_zero(megatron_fsdp_strategy(z)), z);
  EXPECT_EQ(megatron_fsdp_zero("optim"), 1);
  EXPECT_FALSE(megatron_fsdp_zero("Optim"));
}

TEST(MegatronValueMaps, VirtualPipelineSizeAndLayersPerVirtualStageInvert) {
  for (int pp : {2, 4, 8})
    for (int vpp : {1, 2, 5}) {
      const int layers = 4 * pp * vpp;
      EXPECT_EQ(megatron_layers_per_virtual_stage(layers, pp, vpp), 4);
      EXPECT_EQ(megatron_vpp_of(layers, pp, megatron_layers_per_virtual_stage(layers, pp, vpp)), vpp);
    }
  EXPECT_EQ(megatron_vpp_of(80, 4, 4), 5);  // Llama-3-70B: 80 layers, pp 4, 4 layers per virtual stage
  EXPECT_EQ(megatron_vpp_of(80, 0, 4), 0);
  EXPECT_EQ(megatron_layers_per_virtual_stage(80, 4, 0), 0);
}

TEST(MegatronValueMaps, PipelineLayoutWritesAndReadsBack) {
  // DeepSeek-V3's 61 layers over pp 4 x vpp 2 with one MTP layer, a chunk without layers included
  const std::vector<std::vector<int>> layers = {{7, 8}, {8, 8}, {8, 8}, {8, 6}}, empty_chunk = {{0, 2}, {1, 1}};
  EXPECT_EQ(megatron_pipeline_layout(layers, 1), "Et*7|t*8|t*8|t*8|t*8|t*8|t*8|t*6mL");
  EXPECT_EQ(parse_megatron_pipeline_layout(megatron_pipeline_layout(layers, 1), 4, 2), layers);
  EXPECT_EQ(parse_megatron_pipeline_layout(megatron_pipeline_layout(layers, 1), 4, 0), layers);  // vpp from the stages
  EXPECT_EQ(parse_megatron_pipeline_layout(megatron_pipeline_layout(empty_chunk, 0), 2, 0), empty_chunk);
  EXPECT_TRUE(parse_megatron_pipeline_layout("Et|t|tL", 2, 0).empty());  // 3 stages are not a multiple of pp 2
  EXPECT_TRUE(parse_megatron_pipeline_layout("Et|tX", 2, 1).empty());    // not a symbol of the grammar
}

TEST(MegatronValueMaps, PrecisionFlagsReadBack) {
  ParallelConfig p;
  for (Precision prec : {Precision::bf16, Precision::fp16, Precision::fp8, Precision::mxfp8, Precision::nvfp4, Precision::fp32}) {
    bool bf16 = false, fp16 = false, fp8 = false, fp4 = false;
    std::string recipe;
    for (const std::string& flag : megatron_precision_args(prec, p)) {
      bf16 |= flag == "--bf16", fp16 |= flag == "--fp16", fp4 |= flag.rfind("--fp4-format", 0) == 0;
      fp8 |= flag.rfind("--fp8-format", 0) == 0;
      if (flag.rfind("--fp8-recipe ", 0) == 0) recipe = flag.substr(13);
    }
    EXPECT_EQ(megatron_precision(bf16, fp16, fp8, recipe, fp4), prec) << to_string(prec);
  }
  p.recompute = Recompute::selective;
  p.recompute_modules = *parse_recompute_modules({"layernorm"}, nullptr);  // delayed scaling rejects it: tensorwise
  EXPECT_EQ(megatron_precision_args(Precision::fp8, p).back(), "--fp8-recipe tensorwise");
  EXPECT_TRUE(megatron_precision_args(Precision::tf32, p).empty());  // Megatron's default
}

}  // namespace
}  // namespace mplan
