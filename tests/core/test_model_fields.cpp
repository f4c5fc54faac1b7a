// The ModelSpec descriptor table: every key of the model JSON is a row (a new member without one fails
// here), names are unique, every field round-trips through its text, a bad value names what would be
// valid, the Megatron-LM export writes a field only as its presence says, and docs/model_fields.md is
// the table.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/megatron_rules.h"
#include "core/model_fields.h"
#include "core/presets.h"
#include "tests/generated_doc.h"

namespace mplan {
namespace {

// A model that sets every part: MoE with group-limited routing and a latent width, MLA, YaRN, a window,
// sinks, MTP, and Mamba layers (a hybrid: its pattern places the MoE layers, so no leading dense ones).
ModelSpec full_model() {
  ModelSpec m = *model_preset("deepseek-v3");
  m.window_size = 128, m.window_attn_skip_freq = 2, m.softmax_type = SoftmaxType::learnable;
  m.max_position_embeddings = 4096, m.hidden_dropout = 0.1, m.attention_dropout = 0.1;
  m.moe->first_k_dense_layers = 0, m.moe->moe_latent_size = 1024;
  m.hybrid_override_pattern = std::string("M*-") + std::string(size_t(m.num_layers) - 3, 'E');
  m.mamba = MambaSpec{128, 64, 256, 8, 4, 256};
  return m;
}

std::string model_fields_markdown() {
  std::string s =
      "| model key | Megatron-LM | printed argument | Hugging Face | type | range | what |\n"
      "|---|---|---|---|---|---|---|\n";
  const char* types[] = {"integer", "boolean", "number", "choice", "modules", "layout"};
  auto cell = [](const char* v) {
    std::string c = *v ? "`" + std::string(v) + "`" : "";
    for (size_t at = c.find('|'); at != std::string::npos; at = c.find('|', at + 2)) c.insert(at, "\\");
    return c;
  };
  for (const ModelField& f : model_fields()) {
    const bool ranged = f.type() == FieldType::integer || f.type() == FieldType::number;
    s += "| `" + std::string(f.json) + "` | " + cell(f.megatron) + " | " + cell(f.log) + " | " + cell(f.hf) + " | " +
         types[int(f.type())] + " | " + (ranged ? shortest_decimal(f.min) + ".." + shortest_decimal(f.max) : "") + " | " + f.doc +
         " |\n";
  }
  return s;
}

TEST(ModelFields, EveryModelJsonKeyIsOneRow) {
  std::set<std::string> rows, flags;
  for (const ModelField& f : model_fields()) {
    EXPECT_TRUE(rows.insert(f.json).second) << f.json;
    EXPECT_EQ(model_field(f.json), &f);
    if (f.map == MegatronMap::direct) {
      EXPECT_TRUE(flags.insert(f.megatron).second) << f.megatron;
      EXPECT_EQ(model_field_of_flag(std::string(f.megatron).substr(0, std::string(f.megatron).find(' '))), &f);
    }
  }
  std::set<std::string> keys;
  const nlohmann::json j = model_to_json(full_model());
  for (const auto& [k, v] : j.items()) {
    if (!v.is_object()) keys.insert(k);
    if (v.is_object())
      for (const auto& [k2, v2] : v.items()) keys.insert(k + "." + k2);
  }
  keys.erase("name");
  keys.erase("hybrid_override_pattern");                                           // a string, read and written outside the table
  keys.insert({"rope_scaling.low_freq_factor", "rope_scaling.high_freq_factor"});  // llama3's, not YaRN's
  EXPECT_EQ(rows, keys);  // the writer writes every row of a model that sets every part
  // every member of ModelSpec and its parts is a row (a new member without one fails here: add its row)
  EXPECT_EQ(rows.size(), 56u);
  for (const ModelSpec& m : {full_model(), *model_preset("llama3-8b"), *model_preset("gpt3-175b")}) {
    auto back = model_from_json(model_to_json(m));  // what the table writes, the reader reads back
    ASSERT_TRUE(back.ok()) << m.name << ": " << back.error().message();
    EXPECT_EQ(model_to_json(*back), model_to_json(m)) << m.name;
  }
  EXPECT_EQ(model_field_of_flag("--rotary-scaling-factor"), model_field("rope_scaling.factor"));
  EXPECT_EQ(model_field_of_flag("--rotary"), nullptr);
  EXPECT_EQ(model_field_of_flag("--swiglu"), nullptr);  // mapped: the export's and the parse's rules
}

TEST(ModelFields, EveryFieldRoundTripsThroughItsTextAndBadTextNamesWhatIsValid) {
  for (const ModelField& f : model_fields()) {
    ModelSpec m = full_model();
    const std::string before = *f.access.get(m);
    const std::map<std::string, std::string> choices = {
        {"activation", "gelu"},      {"norm", "layernorm"},           {"position_embedding", "learned"},
        {"softmax_type", "vanilla"}, {"rope_scaling.type", "llama3"}, {"moe.router_score_function", "softmax"}};
    const std::string other = f.type() == FieldType::boolean  ? (before == "true" ? "false" : "true")
                              : f.type() == FieldType::choice ? choices.at(f.json)
                                                              : shortest_decimal(f.min == std::stod(before) ? f.max : f.min);
    ASSERT_EQ(set_model_field_text(f, m, other), "") << f.json << " = " << other;
    EXPECT_EQ(*f.access.get(m), other) << f.json;
    EXPECT_NE(other, before) << f.json;
    EXPECT_NE(set_model_field_text(f, m, "x"), "") << f.json;
  }
  ModelSpec m;
  EXPECT_NE(set_model_field_text(*model_field("num_layers"), m, "100001").find("0..100000"), std::string::npos);
  EXPECT_NE(set_model_field_text(*model_field("softmax_type"), m, "x").find("vanilla|off-by-one|learnable"), std::string::npos);
  EXPECT_EQ(set_model_field_text(*model_field("moe.top_k"), m, "4"), "");  // a MoE field makes the part
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->top_k, 4);
  EXPECT_FALSE(model_field("mla.q_lora_rank")->access.get(m).has_value());  // no MLA part: no value
}

TEST(ModelFields, TheExportWritesAFieldAsItsPresenceSays) {
  ModelSpec m = full_model();
  EXPECT_EQ(megatron_model_arg(*model_field("num_layers"), m), "--num-layers 61");
  EXPECT_EQ(megatron_model_arg(*model_field("hidden_dropout"), m), "--hidden-dropout 0.1");
  EXPECT_EQ(megatron_model_arg(*model_field("moe.router_enable_expert_bias"), m), "--moe-router-enable-expert-bias");
  m.moe->router_topk_scaling_factor = 1.0, m.mla->q_lora_rank = 0, m.moe->router_enable_expert_bias = false;
  for (const char* f : {"moe.router_topk_scaling_factor", "mla.q_lora_rank", "moe.router_enable_expert_bias"})
    EXPECT_EQ(megatron_model_arg(*model_field(f), m), "") << f;  // the default (if_set) or a false switch
}

// The mapped model flags written once as a pair (core/megatron_rules.h): what the export writes the
// parse reads back as the same MoE layers and the same window; what is not the grammar is refused.
TEST(ModelFields, MappedMegatronValuesRoundTrip) {
  ModelSpec m = *model_preset("deepseek-v3");
  for (int k : {0, 1, 3})
    for (int freq : {1, 2, 3}) {
      m.moe->first_k_dense_layers = k, m.moe->moe_layer_freq = freq;
      const std::string text = megatron_moe_layer_freq(m);
      ModelSpec back = m;
      back.moe->first_k_dense_layers = 0, back.moe->moe_layer_freq = 1;
      ASSERT_TRUE(megatron_read_moe_layer_freq(text, m.num_layers, *back.moe)) << text;
      for (int i = 0; i < m.num_layers; ++i) EXPECT_EQ(back.is_moe_layer(i), m.is_moe_layer(i)) << text << " layer " << i;
    }
  EXPECT_EQ(megatron_moe_layer_freq(m).substr(0, 15), "[0,0,0,1,0,0,1,");  // k 3, period 3: the list
  MoeSpec e;
  EXPECT_FALSE(megatron_read_moe_layer_freq("[1,0,1]", 4, e));          // not one entry per layer
  EXPECT_FALSE(megatron_read_moe_layer_freq("99999999999999", 4, e));   // no number beyond an int
  EXPECT_FALSE(megatron_read_moe_layer_freq("[0,1,1,0,1,1,0]", 7, e));  // not periodic after the dense block
  for (int64_t w : {1, 128, 4096}) EXPECT_EQ(megatron_window_of(megatron_window_size(w)), w);
  EXPECT_EQ(megatron_window_size(128), "127,0");
  EXPECT_EQ(megatron_window_of("(127, 0)"), 128);
  EXPECT_EQ(megatron_window_of("127,4"), 0);  // not causal
  EXPECT_EQ(megatron_window_of("99999999999999,0"), 0);
}

// docs/model_fields.md is the table's Markdown (MPLAN_UPDATE_GOLDEN=1 rewrites it).
TEST(ModelFields, DocsListTheTable) {
  expect_generated_doc("docs/model_fields.md",
                       "# Model fields\n\nThe fields of a model (the plan's `model` object and `data/models/*.json`), "
                       "generated from the descriptor table in `core/model_fields.cpp` (tests/core/test_model_fields.cpp "
                       "keeps this file equal to it; `MPLAN_UPDATE_GOLDEN=1` rewrites it). The model JSON's reader and "
                       "writer, the Hugging Face `config.json` keys with a field's value (`core/hf_import.cpp` keeps "
                       "the rules: activation names, RoPE scaling, sliding windows, each model type's), the Megatron-LM export "
                       "of the direct flags and their parse (`mplan import --megatron-args`) and "
                       "the log check's one-to-one rows come from it; `mapped` flags are written and read by rules of "
                       "their own (`planner/export_megatron.cpp`, `planner/import_megatron.cpp`). A hybrid model's "
                       "layer pattern, `hybrid_override_pattern` (Megatron's `--hybrid-override-pattern`: one symbol "
                       "per layer, `M` Mamba-2, `*` attention, `-` MLP, `E` MoE), is a string the reader, the writer, "
                       "the export and the import handle outside the table.\n\n",
                       model_fields_markdown());
}

}  // namespace
}  // namespace mplan
