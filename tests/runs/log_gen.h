// Synthetic training logs for the runs tests, written line by line after the printing code of each
// framework (Megatron-LM training.py training_log / _print_args / report_memory, Megatron-DeepSpeed's
// training_log, Megatron-Bridge's training_log / print_yaml / report_memory, NeMo's ProgressPrinter,
// Lightning's progress bar and DeltaTimingCallback). No line is copied from anyone's log: values come
// from the plan given (step times from a target MFU), so tests know what an import must find.
#pragma once
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "runs/import.h"

namespace log_gen {

inline std::string f(const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

inline std::string b(bool v) { return v ? "True" : "False"; }

// Step time (ms) that gives `mfu` for the plan (mplan's causal FLOPs, dense peak).
inline double step_ms(const mplan::Plan& p, double mfu) {
  double flops = mplan::runs::plan_flops_per_step(p, p.training.global_batch_size);
  double peak = mplan::runs::plan_peak_tflops(p).value();
  return flops / (mfu * peak * 1e12 * p.parallel.world_size) * 1000.0;
}

// Megatron-LM's arguments (the names _print_args prints) for a plan, with a few speed options.
inline std::map<std::string, std::string> megatron_args(const mplan::Plan& p) {
  const auto& m = p.model;
  const auto& q = p.parallel;
  auto s = [](int64_t v) { return std::to_string(v); };
  std::map<std::string, std::string> a = {
      {"world_size", s(q.world_size)},
      {"tensor_model_parallel_size", s(q.tp)},
      {"pipeline_model_parallel_size", s(q.pp)},
      {"virtual_pipeline_model_parallel_size", q.vpp > 1 ? s(q.vpp) : "None"},
      {"context_parallel_size", s(q.cp)},
      {"expert_model_parallel_size", s(q.ep)},
      {"expert_tensor_parallel_size", s(q.etp)},
      {"data_parallel_size", s(q.dp())},
      {"micro_batch_size", s(q.micro_batch_size)},
      {"global_batch_size", s(p.training.global_batch_size)},
      {"seq_length", s(p.training.seq_length)},
      {"max_position_embeddings", s(p.training.seq_length)},
      {"num_layers", s(m.num_layers)},
      {"hidden_size", s(m.hidden_size)},
      {"ffn_hidden_size", s(m.ffn_hidden_size)},
      {"num_attention_heads", s(m.num_attention_heads)},
      {"group_query_attention", b(m.num_query_groups != m.num_attention_heads)},
      {"num_query_groups", m.num_query_groups != m.num_attention_heads ? s(m.num_query_groups) : "1"},
      {"kv_channels", s(m.kv_channels)},
      {"make_vocab_size_divisible_by", "128"},
      {"padded_vocab_size", "None"},
      {"vocab_size", "None"},
      {"num_experts", m.moe ? s(m.moe->num_experts) : "None"},
      {"moe_router_topk", m.moe ? s(m.moe->top_k) : "2"},
      {"moe_ffn_hidden_size", m.moe ? s(m.moe->moe_ffn_hidden_size) : "None"},
      {"moe_shared_expert_intermediate_size", "None"},
      {"moe_layer_freq", "1"},
      {"sequence_parallel", b(q.sp)},
      {"swiglu", b(m.activation == mplan::Activation::swiglu)},
      {"untie_embeddings_and_output_weights", b(!m.tied_embeddings)},
      {"multi_latent_attention", "False"},
      {"mtp_num_layers", "None"},
      {"bf16", b(p.training.precision == mplan::Precision::bf16)},
      {"fp16", b(p.training.precision == mplan::Precision::fp16)},
      {"fp8", "None"},
      {"fp8_recipe", "delayed"},
      {"fp4", "None"},
      {"recompute_granularity", "None"},
      {"use_distributed_optimizer", b(q.zero >= 1)},
      {"use_torch_fsdp2", "False"},
      {"transformer_impl", "transformer_engine"},
      {"overlap_grad_reduce", "True"},
      {"lr", "0.0003"},
      {"train_iters", "500"},
      {"log_interval", "10"},
      {"log_throughput", "True"},
      {"tokenizer_type", "HuggingFaceTokenizer"},
      {"seed", "1234"},
  };
  return a;
}

// _print_args: header, '  {} {} {}'.format(arg, '.' * (48 - len(arg)), value) sorted case-insensitively, footer.
inline std::string args_block(const std::map<std::string, std::string>& args, const std::string& prefix = "") {
  std::string out = prefix + "------------------------ arguments ------------------------\n";
  for (const auto& [k, v] : args) {
    int dots = std::max(1, 48 - static_cast<int>(k.size()));
    out += prefix + "  " + k + " " + std::string(size_t(dots), '.') + " " + v + "\n";
  }
  return out + prefix + "-------------------- end of arguments ---------------------\n";
}

struct Iter {
  int64_t it = 0, total = 500;
  double ms = 1000;
  int64_t gbs = 128, consumed = 0;
  double loss = 5.0;
  std::optional<double> tflops;
  int skipped = 0, nan = 0;
  std::string ts;         // "" = no timestamp
  std::string loss_text;  // overrides the loss figure ("nan")
};

// Megatron-LM / Megatron-Bridge training_log line (2021+ layout; `ts` adds the 2024+ timestamp).
inline std::string megatron_line(const Iter& i) {
  std::string s = i.ts.empty() ? "" : " [" + i.ts + "]";
  s += f(" iteration %8lld/%8lld | consumed samples: %12lld | elapsed time per iteration (ms): %.1f |", (long long)i.it,
         (long long)i.total, (long long)i.consumed, i.ms);
  if (i.tflops) s += f(" throughput per GPU (TFLOP/s/GPU): %.1f |", *i.tflops);
  s += f(" learning rate: %.6E | global batch size: %5lld |", 3e-4, (long long)i.gbs);
  s += i.loss_text.empty() ? f(" lm loss: %.6E |", i.loss) : " lm loss: " + i.loss_text + " |";
  s += f(" loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan iterations: %3d |", 1.0, 1.234,
         i.skipped, i.nan);
  return s;
}

// Megatron-DeepSpeed training_log line.
inline std::string deepspeed_line(const Iter& i, int64_t seq, int world, double tflops) {
  double samples_s = double(i.gbs) / (i.ms / 1000.0);
  std::string s = f(" iteration %8lld/%8lld | consumed samples: %12lld | consumed tokens: %12lld |", (long long)i.it,
                    (long long)i.total, (long long)i.consumed, (long long)i.consumed * seq);
  s += f(" elapsed time per iteration (ms): %.1f | learning rate: %.3E | global batch size: %5lld |", i.ms, 3e-4,
         (long long)i.gbs);
  s += f(" lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | actual seqlen: %5lld |", i.loss, 1.0, 1.1, (long long)seq);
  s += f(" number of skipped iterations: %3d | number of nan iterations: %3d |", i.skipped, i.nan);
  s += f(" samples per second: %.3f | tokens per gpu per second (tgs): %.3f | TFLOPs: %.2f |", samples_s,
         samples_s * double(seq) / world, tflops);
  return s;
}

// report_memory since 2025 ("{:.2f}"), printed as "[Rank N] ..." by data-parallel rank 0 of each stage.
inline std::string memory_line(int rank, int64_t after, double max_reserved_mib) {
  return f(
      "[Rank %d] (after %lld iterations) memory (MB) | allocated: %.2f | max allocated: %.2f | reserved: %.2f | "
      "max reserved: %.2f",
      rank, (long long)after, max_reserved_mib * 0.55, max_reserved_mib * 0.9, max_reserved_mib, max_reserved_mib);
}

// Megatron-Bridge report_memory: torch.cuda.memory_stats in 1e9-byte gigabytes, 5 significant digits.
inline std::string bridge_memory_line(int rank, int64_t after, double max_reserved_gb) {
  return f(
      "[Rank %d] (after %lld iterations) memory (GB) | mem-allocated-gigabytes: %.5g | mem-active-gigabytes: %.5g "
      "| mem-inactive-gigabytes: %.5g | mem-reserved-gigabytes: %.5g | mem-max-allocated-gigabytes: %.5g | "
      "mem-max-active-gigabytes: %.5g | mem-max-inactive-gigabytes: %.5g | mem-max-reserved-gigabytes: %.5g | "
      "mem-alloc-retires: 0 | mem-allocated-count: 4711",
      rank, (long long)after, max_reserved_gb * 0.5, max_reserved_gb * 0.5, 0.3, max_reserved_gb * 0.97, max_reserved_gb * 0.9,
      max_reserved_gb * 0.9, 1.2, max_reserved_gb);
}

inline std::string padded_vocab_line(int64_t vocab, int tp) {
  int64_t mult = 128 * tp, padded = (vocab + mult - 1) / mult * mult;
  return f(" > padded vocab (size: %lld) with %lld dummy tokens (new size: %lld)", (long long)vocab, (long long)(padded - vocab),
           (long long)padded);
}

// "YYYY-MM-DD HH:MM:SS" `s` seconds after 2024-06-12 10:00:00 (host local time).
inline std::string clock(double s, bool micro = false) {
  int64_t t = static_cast<int64_t>(s);
  int64_t h = 10 + t / 3600, mi = t / 60 % 60, se = t % 60;
  std::string out = f("2024-06-%02lld %02lld:%02lld:%02lld", 12LL + h / 24, (long long)(h % 24), (long long)mi, (long long)se);
  if (micro) out += f(".%06d", static_cast<int>((s - double(t)) * 1e6));
  return out;
}

// One Megatron-LM launch: arguments, padded vocab, datetimes, iteration lines every `interval` from
// `first` to `last`, memory after the first logged iteration. `rank0`/`last` are the line prefixes of
// rank 0 and of the last rank (torchrun --tee "[default0]:", srun "0: ", or "").
struct LaunchSpec {
  std::map<std::string, std::string> args;  // empty: no arguments block
  int64_t first = 10, last = 100, interval = 10;
  double mfu = 0.40;
  bool timestamps = true, micro = false, throughput = true;
  double reported_factor = 1.0;  // printed throughput / mplan's causal TFLOP/s
  double t0 = 0;                 // seconds after the base clock
  std::string rank0_prefix, last_prefix;
  int last_rank = 7;
  std::vector<int> memory_ranks = {0};
  double memory_mib = 60000;
};

inline std::string megatron_launch(const mplan::Plan& p, const LaunchSpec& s) {
  std::string out;
  if (!s.args.empty()) out += args_block(s.args, s.rank0_prefix);
  out += s.rank0_prefix + padded_vocab_line(p.model.vocab_size, p.parallel.tp) + "\n";
  out += s.rank0_prefix + "[after megatron is initialized] datetime: " + clock(s.t0) + " \n";
  out += s.rank0_prefix + "[before the start of training step] datetime: " + clock(s.t0 + 30) + " \n";
  double ms = step_ms(p, s.mfu), t = s.t0 + 30;
  double tf = mplan::runs::plan_flops_per_step(p, p.training.global_batch_size) / (ms / 1000.0) / p.parallel.world_size / 1e12 *
              s.reported_factor;
  bool memory_done = false;
  for (int64_t it = s.first; it <= s.last; it += s.interval) {
    t += ms / 1000.0 * double(s.interval);
    Iter i;
    i.it = it;
    i.ms = ms * (1.0 + 0.002 * double(it % 3));
    i.gbs = p.training.global_batch_size;
    i.consumed = it * i.gbs;
    i.loss = 10.0 - 0.01 * double(it);
    if (s.throughput) i.tflops = tf;
    if (s.timestamps) i.ts = clock(t, s.micro);
    out += s.last_prefix + megatron_line(i) + "\n";
    if (!memory_done) {
      for (int r : s.memory_ranks) out += s.rank0_prefix + memory_line(r, it, s.memory_mib + 100.0 * r) + "\n";
      memory_done = true;
    }
    out += s.last_prefix + "(min, max) time across ranks (ms):\n" + s.last_prefix +
           "    forward-backward ...............................: (1523.12, 1530.44)\n";
  }
  return out;
}

// Megatron-Bridge ConfigContainer.print_yaml(): yaml.safe_dump(sort_keys=True, default_flow_style=False).
inline std::string bridge_yaml(const mplan::Plan& p, const std::map<std::string, std::string>& model_overrides = {},
                               int64_t dataset_seq = 0) {
  const auto& m = p.model;
  const auto& q = p.parallel;
  auto s = [](int64_t v) { return std::to_string(v); };
  std::map<std::string, std::string> model = {
      {"_target_", "megatron.bridge.models.llama.llama_provider.Llama3ModelProvider8B"},
      {"num_layers", s(m.num_layers)},
      {"hidden_size", s(m.hidden_size)},
      {"ffn_hidden_size", s(m.ffn_hidden_size)},
      {"num_attention_heads", s(m.num_attention_heads)},
      {"num_query_groups", s(m.num_query_groups)},
      {"kv_channels", s(m.kv_channels)},
      {"vocab_size", s(m.vocab_size)},
      {"make_vocab_size_divisible_by", "128"},
      {"seq_length", s(p.training.seq_length)},
      {"tensor_model_parallel_size", s(q.tp)},
      {"pipeline_model_parallel_size", s(q.pp)},
      {"virtual_pipeline_model_parallel_size", "null"},
      {"context_parallel_size", s(q.cp)},
      {"expert_model_parallel_size", s(q.ep)},
      {"expert_tensor_parallel_size", "null"},
      {"sequence_parallel", q.sp ? "true" : "false"},
      {"num_moe_experts", "null"},
      {"gated_linear_unit", "true"},
      {"share_embeddings_and_output_weights", "false"},
      {"recompute_granularity", "null"},
      {"bf16", "true"},
      {"fp16", "false"},
      {"fp8", "null"},
      {"params_dtype", "torch.bfloat16"},
      {"moe_layer_freq", "1"},
  };
  for (const auto& [k, v] : model_overrides) model[k] = v;
  std::string y =
      "_target_: megatron.bridge.training.config.ConfigContainer\ncheckpoint:\n  save: /checkpoints/run\n"
      "  save_interval: 500\ndataset:\n  _target_: megatron.bridge.training.config.GPTDatasetConfig\n"
      "  blend:\n  - - /data/fineweb_text_document\n  - - 1.0\n  random_seed: 1234\n  seq_length: " +
      s(dataset_seq ? dataset_seq : p.training.seq_length) +
      "\n  split: 99,1,0\nddp:\n  overlap_grad_reduce: true\n  use_distributed_optimizer: " +
      std::string(q.zero >= 1 ? "true" : "false") +
      "\nlogger:\n  log_interval: 10\n"
      "  tensorboard_dir: /results/tb\nmixed_precision: bf16_mixed\nmodel:\n";
  for (const auto& [k, v] : model) {
    if (k == "moe_layer_freq" && v.size() > 1 && v[0] == '[') {
      y += "  moe_layer_freq:\n";
      for (size_t i = 1; i + 1 < v.size(); i += 3) y += "  - " + v.substr(i, 1) + "\n";
    } else {
      y += "  " + k + ": " + v + "\n";
    }
  }
  y += "  init_method:\n    _target_: megatron.core.utils.init_method_normal\n    sigma: 0.02\n"
       "optimizer:\n  lr: 0.0003\n  optimizer: adam\n"
       "tokenizer:\n  tokenizer_model: meta-llama/Meta-Llama-3-8B\n  tokenizer_type: HuggingFaceTokenizer\n"
       "train:\n  global_batch_size: " +
       s(p.training.global_batch_size) + "\n  micro_batch_size: " + s(q.micro_batch_size) + "\n  train_iters: 500\n";
  return y;
}

// NeMo 2.0 ProgressPrinter: "Training epoch 0, iteration {n-1}/{total-1} | metric: {val:.4} | ...".
inline std::string nemo_printer_line(int64_t step, int64_t total, double step_s, double loss, int64_t gbs) {
  return f(
      "Training epoch 0, iteration %lld/%lld | lr: %.4g | global_step: %lld | global_batch_size: %lld | "
      "reduced_train_loss: %.4g | train_step_timing in s: %.4g | consumed_samples: %lld",
      (long long)(step - 1), (long long)(total - 1), 3e-4, (long long)(step - 1), (long long)gbs, loss, step_s,
      (long long)(step * gbs));
}

// Lightning progress bar refresh (tqdm postfix).
inline std::string nemo_bar(int64_t step, int64_t total, double step_s, double loss) {
  return f(
      "Epoch 0: : %3d%%|####      | %lld/%lld [01:%02lld<02:00, reduced_train_loss=%.3f, global_step=%lld.0, "
      "consumed_samples=%lld.0, train_step_timing in s=%.3f]",
      static_cast<int>(100 * step / total), (long long)step, (long long)total, (long long)(step % 60), loss, (long long)step,
      (long long)step * 128, step_s);
}

// NeMo DeltaTimingCallback (logging.info through NeMo's formatter).
inline std::string nemo_delta_line(int64_t step0, double step_s, const std::string& when) {
  return f("[NeMo I %s exp_manager:453] Step %lld: train_step_timing in s=%.6f", when.c_str(), (long long)step0, step_s);
}

}  // namespace log_gen
