#!/usr/bin/env python3
"""Writes the Megatron-LM test logs of this folder (deterministic; rerun to regenerate).

Each log reproduces the printing code of one Megatron-LM version (see README.md for the source of
every format): the iteration line of `training_log`, `report_memory`, the sorted "arguments" block
of `_print_args`, `print_datetime`, and a few other lines a parser must skip. Step times are chosen
so that MFU is plausible for the hardware; the throughput column uses the FLOP convention of the
version (full attention before 2025, causal-halved since). Model FLOPs per token come from
`mplan inspect --format json` for each plan (printed in the comments below).
"""
import datetime as dt
import random

TOKENS = {"a": 32 * 1024, "b": 256 * 4096, "c": 128 * 8192, "d": 256 * 4096}
# flops_per_token (causal, full) from `mplan inspect --model <plan model> --seq <seq> --format json`
FLOPS = {"a": (2271713280.0, 2422708224.0), "b": (42863689728.0, 46084915200.0),
         "c": (51470401536.0, 57912852480.0), "d": (79706456064.0, 82927681536.0)}


def args_block(args, prefix=""):
    out = [prefix + "------------------------ arguments ------------------------"]
    rows = ["  {} {} {}".format(k, "." * (48 - len(k)), v) for k, v in args.items()]
    out += [prefix + r for r in sorted(rows, key=lambda x: x.lower())]
    out.append(prefix + "-------------------- end of arguments ---------------------")
    return out


def e3(v):  # Python '{:.3E}'
    return "{:.3E}".format(v)


def lr_at(it, warmup, peak):
    return peak * min(1.0, it / warmup)


def loss_at(rng, it, start, end, tau):
    import math
    return end + (start - end) * math.exp(-it / tau) + rng.uniform(-0.02, 0.02)


def iteration_tail(lr, gbs, loss, extra, grad_norm):
    """The columns that end an iteration line since 2023, from the learning rate (formatted) on; `extra`
    (formatted columns, or "") stands between the loss and the loss scale."""
    return (" learning rate: {} |".format(lr)
            + " global batch size: {:5d} |".format(gbs)
            + " lm loss: {:.6E} |".format(loss)
            + extra
            + " loss scale: {:.1f} |".format(1.0)
            + " grad norm: {:.3f} |".format(grad_norm)
            + " number of skipped iterations: {:3d} |".format(0)
            + " number of nan iterations: {:3d} |".format(0))


# ---------------------------------------------------------------- 2020 (Megatron-LM v1/v2 era)
def log_2020():
    rng = random.Random(2020)
    args = {"batch_size": 8, "checkpoint_activations": True, "data_impl": "mmap", "distributed_backend": "nccl",
            "fp16": True, "hidden_size": 1024, "log_interval": 100, "lr": 0.00015, "lr_decay_style": "cosine",
            "max_position_embeddings": 1024, "num_attention_heads": 16, "num_layers": 24,
            "pipeline_model_parallel_size": 1, "rank": 0, "save_interval": 1000, "seq_length": 1024,
            "tensor_model_parallel_size": 2, "tokenizer_type": "GPT2BPETokenizer", "train_iters": 500000,
            "vocab_file": "gpt2-vocab.json", "warmup": 0.01, "world_size": 8}
    L = ["using torch.float16 for parameters ..."]
    L += args_block(args)
    L += ["> building GPT2BPETokenizer tokenizer ...",
          " > padded vocab (size: 50257) with 175 dummy tokens (new size: 50432)",
          "> initializing torch distributed ...",
          "time to initialize megatron (seconds): 31.552",
          "[after megatron is initialized] datetime: 2020-11-20 09:12:44 ",
          " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 178120704",
          "[before the start of training step] datetime: 2020-11-20 09:13:30 ",
          "training ..."]
    scale = 4294967296.0
    for it in range(100, 2001, 100):
        ms = 248.0 * (1.25 if it == 100 else 1.0) * (1 + rng.gauss(0, 0.004))
        skipped = 17 if it == 100 else 0
        if it == 100:
            scale = 131072.0
        L.append(" iteration {:8d}/{:8d} |".format(it, 500000)
                 + " elapsed time per iteration (ms): {:.1f} |".format(ms)
                 + " learning rate: {:.3E} |".format(lr_at(it, 5000, 0.00015))
                 + " lm loss: {:.6E} |".format(loss_at(rng, it, 10.9, 4.1, 600))
                 + " loss scale: {:.1f} |".format(scale)
                 + " number of skipped iterations: {:3d} |".format(skipped)
                 + " number of nan iterations: {:3d} |".format(0))
        if it == 100:
            L.append("after 100 iterations memory (MB) | allocated: 3286.48583984375 | max allocated: "
                     "5461.34814453125 | cached: 6542.0 | max cached: 6542.0")
        L.append("time (ms) | forward-compute: {:.2f} | backward-compute: {:.2f} | backward-params-all-reduce: {:.2f} "
                 "| optimizer: {:.2f} | batch-generator: {:.2f}".format(ms * 0.3, ms * 0.58, ms * 0.07, ms * 0.04, 0.41))
        if it % 1000 == 0:
            s = " validation loss at iteration {} | lm loss value: {:.6E} | lm loss PPL: {:.6E} | ".format(
                it, 4.3, 73.7)
            L += ["-" * (len(s) + 1), s, "-" * (len(s) + 1)]
            L.append("saving checkpoint at iteration    {} to checkpoints/gpt2_345m".format(it))
            L.append("  successfully saved checkpoint at iteration    {} to checkpoints/gpt2_345m".format(it))
    return L


# ---------------------------------------------------------------- 2023 (megatron/training.py, v2.x .. core_r0.4)
def log_2023():
    rng = random.Random(2023)
    args = {"bf16": True, "context_parallel_size": 1, "data_parallel_size": 8, "expert_model_parallel_size": 1,
            "ffn_hidden_size": 11008, "global_batch_size": 256, "hidden_size": 4096, "log_interval": 10,
            "lr": 0.0003, "micro_batch_size": 1, "num_attention_heads": 32, "num_layers": 32,
            "overlap_grad_reduce": False, "pipeline_model_parallel_size": 2, "save_interval": 100,
            "sequence_parallel": True, "seq_length": 4096, "swiglu": True, "tensor_model_parallel_size": 2,
            "train_iters": 5000, "transformer_impl": "transformer_engine", "use_distributed_optimizer": True,
            "use_flash_attn": True, "virtual_pipeline_model_parallel_size": None, "world_size": 32}
    L = []

    def attempt(first, last, start, resumed_from):
        L.extend(args_block(args))
        L.append("time to initialize megatron (seconds): 42.817")
        L.append("[after megatron is initialized] datetime: {} ".format(start.strftime("%Y-%m-%d %H:%M:%S")))
        if resumed_from:
            L.append("  successfully loaded checkpoint from checkpoints/llama2_7b at iteration {}".format(resumed_from))
        L.append("done with setup ...")
        L.append("training ...")
        L.append("[before the start of training step] datetime: {} ".format(
            (start + dt.timedelta(seconds=95)).strftime("%Y-%m-%d %H:%M:%S")))
        for n, it in enumerate(range(first, last + 1, 10)):
            ms = 8660.0 * (1.2 if n == 0 else 1.0) * (1 + rng.gauss(0, 0.003))
            L.append(" iteration {:8d}/{:8d} |".format(it, 5000)
                     + " consumed samples: {:12d} |".format(it * 256)
                     + " elapsed time per iteration (ms): {:.1f} |".format(ms)
                     + iteration_tail(e3(lr_at(it, 2000, 0.0003)), 256, loss_at(rng, it, 10.4, 2.6, 80), "",
                                      rng.uniform(0.8, 3.0)))
            if n == 0:
                for rank, alloc, peak, res in ((0, 19123.4580078125, 41234.1171875, 45210.0),
                                               (1, 19123.4580078125, 41198.8671875, 45190.0),
                                               (16, 20871.2158203125, 47990.4228515625, 52310.0),
                                               (17, 20871.2158203125, 47960.1728515625, 52284.0)):
                    L.append("[Rank {}] (after {} iterations) memory (MB) | allocated: {} | max allocated: {} | "
                             "reserved: {} | max reserved: {}".format(rank, it, alloc, peak, res, res))
            if it % 100 == 0:
                L.append("saving checkpoint at iteration     {} to checkpoints/llama2_7b".format(it))
                L.append("  successfully saved checkpoint at iteration     {} to checkpoints/llama2_7b".format(it))

    attempt(10, 120, dt.datetime(2023, 10, 2, 14, 3, 11), None)
    L.append("[E ProcessGroupNCCL.cpp:475] [Rank 5] Watchdog caught collective operation timeout")
    attempt(110, 300, dt.datetime(2023, 10, 2, 15, 41, 57), 100)
    return L


# ---------------------------------------------------------------- 2024 (megatron/training/training.py, core_r0.6 .. 0.10)
def log_2024():
    rng = random.Random(2024)
    args = {"bf16": True, "context_parallel_size": 1, "data_parallel_size": 8, "expert_model_parallel_size": 1,
            "global_batch_size": 128, "group_query_attention": True, "hidden_size": 4096, "log_interval": 1,
            "log_throughput": True, "micro_batch_size": 1, "num_attention_heads": 32, "num_layers": 32,
            "num_query_groups": 8, "overlap_grad_reduce": True, "overlap_param_gather": True,
            "pipeline_model_parallel_size": 1, "sequence_parallel": False, "seq_length": 8192,
            "tensor_model_parallel_size": 1, "train_iters": 50, "transformer_impl": "transformer_engine",
            "use_distributed_optimizer": True, "virtual_pipeline_model_parallel_size": None, "world_size": 8}
    L = args_block(args)
    t = dt.datetime(2024, 6, 12, 10, 11, 2)
    L += ["[after megatron is initialized] datetime: {} ".format(t.strftime("%Y-%m-%d %H:%M:%S")),
          "done with setup ...", "training ..."]
    t += dt.timedelta(seconds=64)
    L.append("[before the start of training step] datetime: {} ".format(t.strftime("%Y-%m-%d %H:%M:%S")))
    causal, full = FLOPS["c"]
    for it in range(1, 51):
        ms = 16200.0 * {1: 1.55, 2: 1.05}.get(it, 1.0) * (1 + rng.gauss(0, 0.003))
        t += dt.timedelta(milliseconds=ms)
        tflops = full * TOKENS["c"] / (ms / 1000) / 8 / 1e12
        L.append(" [{}]".format(t.strftime("%Y-%m-%d %H:%M:%S"))
                 + " iteration {:8d}/{:8d} |".format(it, 50)
                 + " consumed samples: {:12d} |".format(it * 128)
                 + " elapsed time per iteration (ms): {:.1f} |".format(ms)
                 + " throughput per GPU (TFLOP/s/GPU): {:.1f} |".format(tflops)
                 + iteration_tail("{:.6E}".format(lr_at(it, 10, 0.0003)), 128, loss_at(rng, it, 11.8, 7.2, 12), "",
                                  rng.uniform(1.0, 9.0)))
        if it == 1:
            L.append("[Rank 0] (after 1 iterations) memory (MB) | allocated: 36418.77783203125 | max allocated: "
                     "61823.09765625 | reserved: 66830.0 | max reserved: 66830.0")
    L.append("[after training is done] datetime: {} ".format(t.strftime("%Y-%m-%d %H:%M:%S")))
    return L


# ---------------------------------------------------------------- 2025 (megatron/training/training.py, main)
def log_2025():
    rng = random.Random(2025)
    last, first = "[default7]:", "[default0]:"
    args = {"bf16": True, "context_parallel_size": 1, "data_parallel_size": 8, "expert_model_parallel_size": 8,
            "expert_tensor_parallel_size": 1, "global_batch_size": 256, "hidden_size": 4096, "log_interval": 5,
            "log_throughput": True, "micro_batch_size": 1, "moe_router_topk": 2, "moe_token_dispatcher_type":
            "alltoall", "num_attention_heads": 32, "num_experts": 8, "num_layers": 32,
            "pipeline_model_parallel_size": 4, "sequence_parallel": True, "seq_length": 4096,
            "tensor_model_parallel_size": 2, "train_iters": 1000, "transformer_impl": "transformer_engine",
            "use_distributed_optimizer": True, "virtual_pipeline_model_parallel_size": None, "world_size": 64}
    L = args_block(args, first)
    t = dt.datetime(2025, 3, 4, 22, 7, 15, 402113)
    L.append(first + "[after megatron is initialized] datetime: {} ".format(t.strftime("%Y-%m-%d %H:%M:%S.%f")))
    L.append(first + "training ...")
    t += dt.timedelta(seconds=88)
    L.append(first + "[before the start of training step] datetime: {} ".format(t.strftime("%Y-%m-%d %H:%M:%S.%f")))
    causal, _ = FLOPS["d"]
    prev = 0
    for it in [1] + list(range(5, 101, 5)):
        ms = (30000.0 if it == 1 else 4400.0 * (1.08 if it == 5 else 1.0)) * (1 + rng.gauss(0, 0.004))
        t += dt.timedelta(milliseconds=ms * (it - prev))
        prev = it
        tflops = causal * TOKENS["d"] / (ms / 1000) / 64 / 1e12
        L.append(last + " [{}]".format(t.strftime("%Y-%m-%d %H:%M:%S.%f"))
                 + " iteration {:8d}/{:8d} |".format(it, 1000)
                 + " consumed samples: {:12d} |".format(it * 256)
                 + " elapsed time per iteration (ms): {:.1f} |".format(ms)
                 + " throughput per GPU (TFLOP/s/GPU): {:.1f} |".format(tflops)
                 + iteration_tail("{:.6E}".format(lr_at(it, 100, 0.0002)), 256, loss_at(rng, it, 10.6, 6.9, 30),
                                  " load_balancing_loss: {:.6E} |".format(1.0 + rng.uniform(0.0, 0.05)),
                                  rng.uniform(0.5, 4.0)))
        if it in (1, 5):
            for rank, base in ((0, 30212.45), (1, 30212.45), (16, 27801.12), (17, 27801.12), (32, 27801.12),
                               (33, 27801.12), (48, 31877.90), (49, 31877.90)):
                grow = 1.0 if it == 1 else 1.12
                pref = first if rank == 0 else "[default{}]:".format(rank % 8)
                L.append(pref + "[Rank {}] (after {} iterations) memory (MB) | allocated: {:.2f} | max allocated: "
                         "{:.2f} | reserved: {:.2f} | max reserved: {:.2f}".format(
                             rank, it, base * grow, base * 1.7 * grow, base * 1.86 * grow, base * 1.86 * grow))
    return L


if __name__ == "__main__":
    for name, fn in (("megatron_2020_gpt2_345m.log", log_2020), ("megatron_2023_llama2_7b_resumed.log", log_2023),
                     ("megatron_2024_llama3_8b.log", log_2024), ("megatron_2025_mixtral_8x7b.log", log_2025)):
        with open(name, "w") as f:
            f.write("\n".join(fn()) + "\n")
