// torchtitan exports (issue 16): today's Python configuration (a Trainer.Config function run with
// --module/--config), the v0.2.x TOML (module_fqns_per_model_part, quantize.linear.* converters, no
// split points) and the v0.1 TOML; every layer in exactly one pipeline stage, in order; what a version
// cannot run is refused with what to change.
#include <gtest/gtest.h>

#include <regex>

#include "core/presets.h"
#include "planner/planner.h"
#include "planner_test_util.h"

namespace mplan {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// llama3-8b on 64 H100s: tp 2, pp 4 x vpp 2, cp 2, FSDP, selective recompute
Plan llama_plan() {
  Plan p = test::job(*model_preset("llama3-8b"), test::cluster("dgx-h100"), 64, 256, 8192);
  ParallelConfig& q = p.parallel;
  q.tp = 2, q.sp = true, q.pp = 4, q.vpp = 2, q.schedule = Schedule::interleaved, q.cp = 2, q.zero = 3;
  q.cp_comm_type = CpCommType::allgather;
  q.recompute = Recompute::selective;
  return p;
}

// The "layers.N" of each quoted stage list ([...]) in order of appearance.
std::vector<std::vector<int>> stage_layers(const std::string& text, const std::string& start) {
  std::vector<std::vector<int>> out;
  size_t at = text.find(start);
  EXPECT_NE(at, std::string::npos) << start << "\n" << text;
  if (at == std::string::npos) return out;
  // the outer list: from its '[' to the matching ']'
  size_t open = text.find('[', at), close = open;
  for (int depth = 0; close < text.size(); ++close) {
    depth += text[close] == '[' ? 1 : text[close] == ']' ? -1 : 0;
    if (depth == 0) break;
  }
  std::string body = text.substr(open + 1, close - open - 1);
  std::regex list(R"(\[([^\]]*)\])"), layer(R"re("layers\.(\d+)")re");
  for (std::sregex_iterator it(body.begin(), body.end(), list), end; it != end; ++it) {
    std::string items = (*it)[1];
    std::vector<int> layers;
    for (std::sregex_iterator l(items.begin(), items.end(), layer); l != end; ++l) layers.push_back(std::stoi((*l)[1]));
    out.push_back(layers);
  }
  return out;
}

void expect_every_layer_once(const std::vector<std::vector<int>>& stages, int num_layers, size_t num_stages) {
  EXPECT_EQ(stages.size(), num_stages);
  int next = 0;
  for (const auto& s : stages)
    for (int l : s) EXPECT_EQ(l, next++);
  EXPECT_EQ(next, num_layers);
}

TEST(ExportTorchtitan, VersionNames) {
  EXPECT_EQ(parse_torchtitan_version(""), TorchtitanVersion::current);
  EXPECT_EQ(parse_torchtitan_version("current"), TorchtitanVersion::current);
  EXPECT_EQ(parse_torchtitan_version("0.2"), TorchtitanVersion::v0_2);
  EXPECT_EQ(parse_torchtitan_version("0.2.1"), TorchtitanVersion::v0_2);
  EXPECT_EQ(parse_torchtitan_version("0.1"), TorchtitanVersion::v0_1);
  EXPECT_FALSE(parse_torchtitan_version("0.3").has_value());
  EXPECT_FALSE(parse_torchtitan_version("2").has_value());
}

TEST(ExportTorchtitan, PythonConfigurationOfTheCurrentConfigSystem) {
  Plan p = llama_plan();
  p.training.precision = Precision::fp8;
  auto t = export_torchtitan_config(p);
  ASSERT_TRUE(t.ok()) << t.error().message();
  for (const char* want : {"from torchtitan.models.llama3.config_registry import llama3_8b",
                           "from torchtitan.models.llama3 import model_registry",
                           "def apply_mplan_plan(config: Trainer.Config) -> Trainer.Config:",
                           "def mplan_plan() -> Trainer.Config:",
                           "config = apply_mplan_plan(llama3_8b())",
                           "data_parallel_shard_degree=4,",
                           "data_parallel_replicate_degree=1,",
                           "tensor_parallel_degree=2,",
                           "enable_sequence_parallel=True,",
                           "pipeline_parallel_degree=4,",
                           "pipeline_parallel_schedule=\"Interleaved1F1B\",",
                           "num_pp_microbatches=64,",
                           "context_parallel_degree=2,",
                           "num_tokens_per_microbatch_per_dp_rank = 1 * 8192",
                           "num_tokens_per_train_step = 256 * 8192",
                           "max_context_length = 8192",
                           "config.activation_checkpoint = SelectiveAC.Config()",
                           "model_registry(\"8B\", converters=[Float8LinearConverter.Config(model_compile_enabled=compiled)])",
                           "--module mplan_llama3_8b --config mplan_plan",
                           "\"norm\", \"lm_head\"]"})
    EXPECT_TRUE(has(*t, want)) << want << "\n" << *t;
  EXPECT_FALSE(has(*t, "split_points")) << *t;
  // the 32 layers, each in one of the 8 stages, in order; the embedding with the first
  expect_every_layer_once(stage_layers(*t, "module_fqns_per_model_part=["), 32, 8);
  EXPECT_TRUE(has(*t, "[\"tok_embeddings\", \"layers.0\"")) << *t;
  // Llama 3 8B has no RoPE scaling; torchtitan's 8B is Llama 3.1's: said, not hidden
  EXPECT_TRUE(has(*t, "# note: torchtitan's llama3 8B uses llama3 RoPE scaling")) << *t;
  // no pipeline: no microbatch count; DDP; full recompute; MXFP8
  Plan d = test::job(*model_preset("llama3.1-405b"), test::cluster("dgx-h100"), 8, 64, 8192);
  d.parallel.zero = 0, d.parallel.micro_batch_size = 2, d.parallel.recompute = Recompute::full;
  d.training.precision = Precision::mxfp8;
  auto td = export_torchtitan_config(d);
  ASSERT_TRUE(td.ok()) << td.error().message();
  for (const char* want :
       {"data_parallel_replicate_degree=8,", "data_parallel_shard_degree=1,", "FullAC.Config()", "MXFP8LinearConverter.Config(",
        "num_tokens_per_microbatch_per_dp_rank = 2 * 8192", "NGPU=8 MODULE=mplan_llama3_1_405b CONFIG=mplan_plan ./run_train.sh"})
    EXPECT_TRUE(has(*td, want)) << want << "\n" << *td;
  EXPECT_FALSE(has(*td, "num_pp_microbatches")) << *td;
  EXPECT_TRUE(has(*td, "config.compile.enable_async_tensor_parallel = False")) << *td;
  EXPECT_TRUE(has(*td, "config.compile.enable = False")) << *td;  // eager, as the plan was predicted
  d.training.framework = Framework::torchtitan, d.training.torch_compile = true;
  EXPECT_TRUE(has(*export_torchtitan_config(d), "config.compile.enable = True"));
  d.training.torch_compile = false;
  d.parallel.tp = 2, d.parallel.sp = true, d.parallel.tp_comm_overlap = true, d.parallel.zero = 3;
  auto ta = export_torchtitan_config(d);
  ASSERT_TRUE(ta.ok()) << ta.error().message();
  EXPECT_TRUE(has(*ta, "config.compile = CompileConfig(enable=True, enable_async_tensor_parallel=True)")) << *ta;
  EXPECT_TRUE(has(*ta, "from torchtitan.config import CompileConfig, ParallelismConfig")) << *ta;
  EXPECT_FALSE(has(*td, "# note")) << "405B has llama3 RoPE scaling like torchtitan's\n" << *td;
}

TEST(ExportTorchtitan, ModelsTorchtitanDoesNotDefine) {
  Plan p = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 16, 2048);
  p.parallel.zero = 3;
  auto t = export_torchtitan_config(p);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_TRUE(has(*t, "raise NotImplementedError")) << *t;
  EXPECT_TRUE(has(*t, "def apply_mplan_plan(")) << *t;
  EXPECT_TRUE(has(*t, "# note: torchtitan ships no definition of")) << *t;
  auto toml = export_torchtitan_toml(p, TorchtitanVersion::v0_2);
  ASSERT_TRUE(toml.ok());
  EXPECT_TRUE(has(*toml, "set [model] name/flavor")) << *toml;
}

TEST(ExportTorchtitan, V02TomlHasModulesPerPartAndQuantizeConverters) {
  Plan p = llama_plan();
  p.training.precision = Precision::fp8;
  auto t = export_torchtitan_toml(p, TorchtitanVersion::v0_2);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_FALSE(has(*t, "pipeline_parallel_split_points")) << *t;  // v0.2 removed it
  for (const char* want : {"converters = [\"quantize.linear.float8\"]", "name = \"llama3\"", "flavor = \"8B\"",
                           "module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\"", "\"norm\", \"output\"]]",
                           "pipeline_parallel_microbatch_size = 1", "local_batch_size = 64",
                           "context_parallel_rotate_method = \"allgather\"", "selective_ac_option = \"op\""})
    EXPECT_TRUE(has(*t, want)) << want << "\n" << *t;
  expect_every_layer_once(stage_layers(*t, "module_fqns_per_model_part = ["), 32, 8);
  p.training.precision = Precision::mxfp8;
  EXPECT_TRUE(has(*export_torchtitan_toml(p, TorchtitanVersion::v0_2), "converters = [\"quantize.linear.mx\"]"));
  EXPECT_TRUE(has(*export_torchtitan_toml(p, TorchtitanVersion::v0_1), "converters = [\"mx\"]"));
  // an uneven (balanced) pipeline: the stages still hold every layer once
  Plan b = llama_plan();
  b.parallel.pipeline_layout = balanced_pipeline_layout(b.model, b.parallel.pp, b.parallel.vpp);
  auto tb = export_torchtitan_toml(b, TorchtitanVersion::v0_2);
  ASSERT_TRUE(tb.ok()) << tb.error().message();
  expect_every_layer_once(stage_layers(*tb, "module_fqns_per_model_part = ["), 32, 8);
  // a compiled plan is exported compiled (the prediction assumed fused pointwise kernels)
  EXPECT_FALSE(has(*tb, "[compile]")) << *tb;
  b.training.torch_compile = true;
  EXPECT_TRUE(has(*export_torchtitan_toml(b, TorchtitanVersion::v0_2), "[compile]\nenable = true\n"));
  EXPECT_TRUE(has(*export_torchtitan_toml(b, TorchtitanVersion::v0_1), "compile = true\n"));
}

TEST(ExportTorchtitan, EachVersionRefusesWhatItCannotRun) {
  // context parallelism by ring (p2p): torchtitan 0.2's "alltoall" rotation; no option any more today
  Plan p = llama_plan();
  p.parallel.cp_comm_type = CpCommType::p2p;
  EXPECT_TRUE(has(*export_torchtitan_toml(p, TorchtitanVersion::v0_2), "context_parallel_rotate_method = \"alltoall\""));
  auto cur = export_torchtitan_config(p);
  ASSERT_FALSE(cur.ok());
  EXPECT_TRUE(has(cur.error().message(), "cp_comm allgather")) << cur.error().message();
  // expert tensor parallelism: 0.2 takes etp = tp, today's torchtitan has none
  Plan m = test::job(*model_preset("qwen3-30b-a3b"), test::cluster("dgx-h100"), 64, 256, 4096);
  m.parallel.tp = 2, m.parallel.sp = true, m.parallel.ep = 8, m.parallel.etp = 2, m.parallel.zero = 3;
  auto v2 = export_torchtitan_toml(m, TorchtitanVersion::v0_2);
  ASSERT_TRUE(v2.ok()) << v2.error().message();
  EXPECT_TRUE(has(*v2, "expert_tensor_parallel_degree = 2")) << *v2;
  auto now = export_torchtitan_config(m);
  ASSERT_FALSE(now.ok());
  EXPECT_TRUE(has(now.error().message(), "etp 1")) << now.error().message();
  m.parallel.etp = 1;
  auto ok = export_torchtitan_config(m);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_TRUE(has(*ok, "expert_parallel_degree=8,")) << *ok;
  // multi-token prediction: DeepSeek-V3 in today's configuration only
  Plan ds = test::job(*model_preset("deepseek-v3"), test::cluster("dgx-h100"), 256, 1024, 4096);
  ds.parallel.ep = 64, ds.parallel.zero = 3;
  ASSERT_GT(ds.model.mtp_num_layers, 0);
  auto dsc = export_torchtitan_config(ds);
  ASSERT_TRUE(dsc.ok()) << dsc.error().message();
  EXPECT_TRUE(has(*dsc, "num_mtp_layers=" + std::to_string(ds.model.mtp_num_layers))) << *dsc;
  auto dst = export_torchtitan_toml(ds, TorchtitanVersion::v0_2);
  ASSERT_FALSE(dst.ok());
  EXPECT_TRUE(has(dst.error().message(), "mtp_num_layers")) << dst.error().message();
  EXPECT_FALSE(export_torchtitan_toml(llama_plan(), TorchtitanVersion::current).ok());
}

}  // namespace
}  // namespace mplan
