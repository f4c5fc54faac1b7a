// Log formats on synthetic logs written by log_gen.h: Megatron-LM with a full arguments block and
// rank-prefixed interleaving, skipped/NaN intervals, Megatron-DeepSpeed, Megatron-Bridge (YAML dump,
// GB memory reports), NeMo 2.0 / Lightning step lines, and values a log does not print.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "log_gen.h"
#include "runs/config_yaml.h"
#include "runs/import.h"
#include "runs/log_jobs.h"
#include "runs/log_text.h"
#include "runs/nemo_log.h"
#include "runs_test_util.h"

using namespace mplan::runs;
using mplan::Plan;

namespace {

Plan llama3() { return runs_test::load_plan("llama3_8b_h100_dp8.plan.json"); }

ImportResult import_ok(const LogJob& job, const Plan& plan, const ImportOptions& opt = {}) {
  auto r = import_log_job(job, plan, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? r.value() : ImportResult{};
}

}  // namespace

TEST(LogText, RankPrefixes) {
  std::string p;
  EXPECT_EQ(strip_rank_prefix("[default7]: iteration 10/ 100 |", &p), " iteration 10/ 100 |");
  EXPECT_EQ(p, "[default7]:");
  EXPECT_EQ(strip_rank_prefix("12:  iteration 10/ 100 |", &p), " iteration 10/ 100 |");
  EXPECT_EQ(strip_rank_prefix("3: [default1]:  num_layers ... 32", &p), "  num_layers ... 32");
  EXPECT_EQ(p, "3: [default1]:");
  EXPECT_EQ(strip_rank_prefix("[trainer0]:model:", &p), "model:");
  EXPECT_EQ(strip_rank_prefix("10:11:02 something", &p), "10:11:02 something");  // a time, not a label
  EXPECT_EQ(p, "");
}

TEST(LogFormats, MegatronLmFullArgumentsBlockWithInterleavedRanks) {
  Plan plan = llama3();
  log_gen::LaunchSpec s;
  s.args = log_gen::megatron_args(plan);
  s.rank0_prefix = "[default0]:";
  s.last_prefix = "[default7]:";
  s.memory_ranks = {0};
  s.first = 10, s.last = 200, s.interval = 10;
  std::string text = log_gen::megatron_launch(plan, s);
  // Other ranks print while rank 0 prints the arguments (torchrun --tee): their lines must not end or
  // corrupt the block.
  size_t mid = text.find("[default0]:  hidden_size");
  ASSERT_NE(mid, std::string::npos);
  text.insert(mid, "[default3]: > building GPT model ...\n[default5]:  num_layers ..... 2\n");
  LogSet set = runs_test::read_log_text(text);
  ASSERT_EQ(set.jobs.size(), 1u);
  const LogJob& job = set.jobs[0];
  EXPECT_EQ(job.launches[0].args.size(), s.args.size());
  EXPECT_EQ(job.launches[0].args.at("num_layers"), "32");
  EXPECT_EQ(job.iteration_lines(), 20);
  EXPECT_EQ(job.config.source, ConfigSource::megatron_args);
  ASSERT_TRUE(job.launches[0].padded_vocab);
  EXPECT_EQ(job.launches[0].padded_vocab->padded, 128256);  // already a multiple of 128
  // The same with srun --label in front of torchrun's prefixes (two nodes).
  std::string srun;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) srun += (l.rfind("[default7]", 0) == 0 ? "1: " : "0: ") + l + "\n";
  LogSet two = runs_test::read_log_text(srun);
  ASSERT_EQ(two.jobs.size(), 1u);
  EXPECT_EQ(two.jobs[0].launches[0].args.size(), s.args.size());
  EXPECT_EQ(two.jobs[0].iteration_lines(), 20);
  ImportResult r = import_ok(job, plan);
  EXPECT_EQ(r.framework, "Megatron-LM");
  EXPECT_NEAR(summarize(r.run.steps, {}).mfu, 0.40, 0.002);
  EXPECT_TRUE(r.run.steps.back().peak_memory_gib);
  EXPECT_FALSE(runs_test::has_warning(r.run, "could not be checked"));
}

TEST(LogFormats, SkippedAndNanIntervalsAreNotMeasured) {
  Plan plan = llama3();
  double ms = log_gen::step_ms(plan, 0.40);
  std::string text;
  for (int it = 10; it <= 150; it += 10) {
    log_gen::Iter i;
    i.it = it;
    i.ms = ms;
    i.gbs = 128;
    if (it == 60) i.skipped = 10;            // every iteration of the interval skipped (fp16 overflow)
    if (it == 70) i.skipped = 3;             // some skipped: still a measurement
    if (it == 80) i.nan = 1, i.skipped = 1;  // a NaN iteration
    if (it == 90) i.loss_text = "nan";       // the average itself is NaN
    if (it == 100) i.ms = ms * 0.5;          // (a fast interval that only skipped work)
    if (it == 100) i.skipped = 10;
    text += log_gen::megatron_line(i) + "\n";
  }
  LogSet set = runs_test::read_log_text(text);
  ImportResult r = import_ok(set.jobs[0], plan);
  ASSERT_EQ(r.run.steps.size(), 15u);
  auto at = [&](int it) { return r.run.steps[size_t(it / 10 - 1)]; };
  EXPECT_TRUE(at(60).skipped);
  EXPECT_FALSE(at(70).skipped);
  EXPECT_TRUE(at(80).skipped);
  EXPECT_TRUE(at(90).skipped);
  EXPECT_FALSE(at(90).loss);  // NaN is stored as absent
  EXPECT_TRUE(at(100).skipped);
  EXPECT_EQ(r.skipped_excluded, 4);
  RunSummary s = summarize(r.run.steps, {});
  EXPECT_EQ(s.steps_measured, 15 - 1 - 4);  // warm-up (iteration 10) and the skipped intervals
  EXPECT_NEAR(s.mfu, 0.40, 0.001);          // the fast skipped interval does not lift the median
  EXPECT_TRUE(runs_test::has_warning(r.run, "skipped"));
  EXPECT_FALSE(r.run.steps[0].peak_memory_gib);  // no memory report in this log: absent, not 0
  EXPECT_TRUE(runs_test::has_warning(r.run, "no memory report"));
}

TEST(LogFormats, MegatronDeepSpeedKeepsItsTflopsAndTgs) {
  Plan plan = llama3();
  auto args = log_gen::megatron_args(plan);
  // Megatron-DeepSpeed's names: num_key_value_heads for query groups, a list of experts, ZeRO stage.
  args.erase("group_query_attention");
  args.erase("num_query_groups");
  args["num_key_value_heads"] = "8";
  args["num_experts"] = "[1]";
  args["deepspeed"] = "True";
  args["zero_stage"] = "1";
  args.erase("use_distributed_optimizer");
  double ms = log_gen::step_ms(plan, 0.38);
  double causal_tf = plan_flops_per_step(plan, 128) / (ms / 1000) / 8 / 1e12;
  std::string text = log_gen::args_block(args) + log_gen::padded_vocab_line(128256, 1) + "\n";
  for (int it = 10; it <= 100; it += 10) {
    log_gen::Iter i;
    i.it = it, i.ms = ms, i.gbs = 128, i.consumed = it * 128;
    text += log_gen::deepspeed_line(i, 8192, 8, causal_tf * 1.12) + "\n";
    if (it == 10) text += log_gen::memory_line(0, 10, 70000) + "\n";
  }
  LogSet set = runs_test::read_log_text(text);
  ASSERT_EQ(set.jobs.size(), 1u);
  EXPECT_EQ(set.jobs[0].framework, "Megatron-DeepSpeed");
  EXPECT_EQ(set.jobs[0].config.source, ConfigSource::deepspeed_args);
  ImportResult r = import_ok(set.jobs[0], plan);
  EXPECT_EQ(r.run.software["framework"], "Megatron-DeepSpeed");
  EXPECT_EQ(r.format.rfind("megatron-deepspeed", 0), 0u);
  const StepMetric& m = r.run.steps[3];
  ASSERT_TRUE(m.reported_tflops_per_gpu);
  EXPECT_NEAR(*m.reported_tflops_per_gpu, causal_tf * 1.12, 0.01);
  ASSERT_TRUE(m.reported_tokens_per_s_per_gpu);
  EXPECT_NEAR(*m.reported_tokens_per_s_per_gpu, 128.0 * 8192 / (ms / 1000) / 8, 1.0);
  // A plan with MHA instead of the log's 8 KV heads is refused, naming Megatron-DeepSpeed's argument.
  Plan mha = plan;
  mha.model.num_query_groups = 32;
  auto bad = import_log_job(set.jobs[0], mha, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("num_key_value_heads = 8 but the plan has model.num_query_groups = 32"), std::string::npos)
      << bad.error().message();
}

TEST(LogFormats, MegatronBridgeYamlDumpAndGigabyteMemory) {
  Plan plan = llama3();
  // The model provider says 4096, the data 8192: the data's length is what was trained.
  std::string yaml = log_gen::bridge_yaml(plan, {{"seq_length", "4096"}}, 8192);
  std::string text = "INFO:megatron.bridge.recipes:Building the recipe\n";
  std::istringstream ys(yaml);
  for (std::string line; std::getline(ys, line);) text += "[default0]:" + line + "\n";
  text += "[default0]:INFO:megatron.bridge.training.setup:Setting up the model\n";
  text += "[default0]:" + log_gen::padded_vocab_line(128256, 1) + "\n";
  double ms = log_gen::step_ms(plan, 0.41);
  for (int it = 10; it <= 120; it += 10) {
    log_gen::Iter i;
    i.it = it, i.ms = ms, i.gbs = 128, i.consumed = it * 128, i.ts = log_gen::clock(it * ms / 1000);
    i.tflops = plan_flops_per_step(plan, 128) / (ms / 1000) / 8 / 1e12;
    text += "[default7]:" + log_gen::megatron_line(i) + "\n";
    if (it == 20) text += "[default0]:" + log_gen::bridge_memory_line(0, 20, 71.3) + "\n";
  }
  LogSet set = runs_test::read_log_text(text);
  ASSERT_EQ(set.jobs.size(), 1u);
  const LogJob& job = set.jobs[0];
  EXPECT_EQ(job.framework, "Megatron-Bridge");
  EXPECT_EQ(job.config.source, ConfigSource::bridge_yaml);
  EXPECT_EQ(job.launches[0].bridge_yaml.at("model.ffn_hidden_size"), "14336");
  EXPECT_EQ(job.launches[0].bridge_yaml.at("train.global_batch_size"), "128");
  EXPECT_EQ(job.launches[0].bridge_yaml.at("model.virtual_pipeline_model_parallel_size"), "None");
  EXPECT_EQ(job.launches[0].bridge_yaml.count("dataset.blend"), 0u);  // a list of lists is not read
  ImportResult r = import_ok(job, plan);
  EXPECT_TRUE(runs_test::has_warning(r.run, "model.seq_length 4096"));
  ASSERT_TRUE(r.run.steps.back().peak_memory_gib);
  EXPECT_NEAR(*r.run.steps.back().peak_memory_gib, 71.3e9 / 1073741824.0, 1e-3);  // GB are 1e9 bytes
  EXPECT_FALSE(r.run.steps[0].peak_memory_gib);                                   // reported after iteration 20
  EXPECT_EQ(r.run.software["mixed_precision"], "bf16_mixed");
  // A wrong FFN width in the plan is refused, naming the YAML path.
  Plan wrong = plan;
  wrong.model.ffn_hidden_size = 11008;
  auto bad = import_log_job(job, wrong, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("log config model.ffn_hidden_size = 14336 but the plan has "
                                       "model.ffn_hidden_size = 11008"),
            std::string::npos)
      << bad.error().message();
}

TEST(LogFormats, BridgeYamlReaderSubset) {
  ConfigYamlReader y;
  for (const char* l :
       {"_target_: megatron.bridge.training.config.ConfigContainer", "model:", "  num_layers: 32", "  moe_layer_freq:", "  - 0",
        "  - 1", "  - 1", "  name: 'quoted value'", "  kv_channels: null", "  init_method:", "    sigma: 0.02",
        "  long_path: /a/very/long/path/that/pyyaml", "    wrapped/onto/the/next/line", "train:", "  global_batch_size: 256"})
    EXPECT_TRUE(y.add_line(l)) << l;
  EXPECT_FALSE(y.add_line("INFO:megatron.bridge.training:Starting training"));
  auto v = y.values();
  EXPECT_EQ(v.at("model.num_layers"), "32");
  EXPECT_EQ(v.at("model.moe_layer_freq"), "[0, 1, 1]");
  EXPECT_EQ(v.at("model.name"), "quoted value");
  EXPECT_EQ(v.at("model.kv_channels"), "None");
  EXPECT_EQ(v.at("model.init_method.sigma"), "0.02");
  EXPECT_EQ(v.at("train.global_batch_size"), "256");
  EXPECT_TRUE(is_bridge_config_start("_target_: megatron.bridge.training.config.ConfigContainer"));
  EXPECT_FALSE(is_bridge_config_start("  _target_: megatron.bridge.training.config.ConfigContainer"));
}

TEST(LogFormats, NemoProgressPrinterBarAndDeltaTiming) {
  Plan plan = llama3();
  double step_s = log_gen::step_ms(plan, 0.39) / 1000;
  // ProgressPrinter every 10 steps.
  std::string printer = "[NeMo I 2024-06-12 10:00:05 nemo_logging:349] Experiments will be logged at /results\n";
  for (int s = 10; s <= 100; s += 10) printer += log_gen::nemo_printer_line(s, 100, step_s, 3.0, 128) + "\n";
  LogSet a = runs_test::read_log_text(printer);
  ASSERT_EQ(a.jobs.size(), 1u);
  EXPECT_EQ(a.jobs[0].framework, "NeMo");
  EXPECT_EQ(a.jobs[0].first_iteration(), 10);
  EXPECT_EQ(a.jobs[0].iteration_lines(), 10);
  ImportResult r = import_ok(a.jobs[0], plan);
  EXPECT_EQ(r.run.source, "nemo-log");
  EXPECT_NEAR(summarize(r.run.steps, {}).mfu, 0.39, 0.002);
  EXPECT_EQ(r.run.started_at, "2024-06-12T10:00:05Z");
  EXPECT_TRUE(runs_test::has_warning(r.run, "NeMo logs print no configuration"));
  // A Lightning progress bar: many '\r' refreshes on one physical line, one per step; repeated
  // refreshes of the same step count once.
  std::string bar;
  for (int s = 1; s <= 30; ++s)
    bar += log_gen::nemo_bar(s, 30, step_s, 3.0) + "\r" + log_gen::nemo_bar(s, 30, step_s, 3.0) + "\r";
  LogSet b = runs_test::read_log_text(bar + "\n");
  ASSERT_EQ(b.jobs.size(), 1u);
  EXPECT_EQ(b.jobs[0].iteration_lines(), 30);
  EXPECT_EQ(b.jobs[0].format, "nemo-2.0 (progress-bar)");
  // DeltaTimingCallback: every step, 0-based.
  std::string delta;
  for (int s = 0; s < 25; ++s)
    delta += log_gen::nemo_delta_line(s, step_s, "2024-06-12 10:0" + std::to_string(s / 10) + ":00") + "\n";
  LogSet c = runs_test::read_log_text(delta);
  ASSERT_EQ(c.jobs.size(), 1u);
  EXPECT_EQ(c.jobs[0].first_iteration(), 1);
  EXPECT_EQ(c.jobs[0].last_iteration(), 25);
  ImportResult rc = import_ok(c.jobs[0], plan);
  EXPECT_EQ(rc.warmup_excluded, 10);
  auto line = parse_nemo_iteration_line(log_gen::nemo_printer_line(40, 100, 12.5, 2.5, 128));
  ASSERT_TRUE(line);
  EXPECT_EQ(line->iteration, 40);
  EXPECT_DOUBLE_EQ(line->elapsed_ms, 12500);
  EXPECT_NEAR(*line->loss, 2.5, 1e-12);
  EXPECT_EQ(*line->global_batch_size, 128);
}
