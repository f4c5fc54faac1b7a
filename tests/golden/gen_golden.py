#!/usr/bin/env python3
"""Golden values for the executor's CPU kernels and whole models, from PyTorch (independent implementation).

Writes tests/golden/executor_golden.json: for every op (matmul, layernorm, rmsnorm, rope, attention incl.
a merged two-block "ring" case, gelu, swiglu, squared_relu, embedding, cross-entropy, MoE routing, AdamW)
fixed random inputs, an upstream gradient, the outputs and the input/weight gradients; for four tiny models
(GPT-style, Llama-style GQA, Qwen-style q/k-norm + qkv bias, MoE top-2 with a shared expert and the
load-balancing loss) the full weights (names as in executor/model/params.h), the tokens, the logits, the
loss and every parameter gradient, each with a tolerance. CI only reads the committed JSON.

Run: /usr/bin/python3 tests/golden/gen_golden.py   (Debian python3-torch; scripts/setup-deps --golden)
"""
import json
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(20240601)
torch.set_default_dtype(torch.float32)
EPS = 1e-5
ROPE_BASE = 10000.0


def arr(t):
    return [float("%.9g" % v) for v in t.detach().reshape(-1).tolist()]


def rnd(*shape, scale=1.0):
    return torch.randn(*shape) * scale


# ----------------------------------------------------------------------------------------------------------
# reference math (mirrors the executor's definitions, written independently with torch ops)

def layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def rope(x, pos):  # x (N, H, D), rotate-half
    D = x.shape[-1]
    inv = 1.0 / (ROPE_BASE ** (torch.arange(0, D // 2, dtype=torch.float64) * 2.0 / D))
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    cos, sin = torch.cos(ang).float()[:, None, :], torch.sin(ang).float()[:, None, :]
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def attention(q, k, v, qpos, kpos):  # q (B,Tq,Hq,D), k/v (B,Tk,Hkv,D); visible when kpos <= qpos
    Hq, Hkv, D = q.shape[2], k.shape[2], q.shape[3]
    k = k.repeat_interleave(Hq // Hkv, dim=2)
    v = v.repeat_interleave(Hq // Hkv, dim=2)
    s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(D)
    mask = kpos[None, :] <= qpos[:, None]
    s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.einsum("bhij,bjhd->bihd", p, v)


def act(kind, u):
    if kind == "gelu":
        return F.gelu(u, approximate="tanh")
    if kind == "squared_relu":
        return F.relu(u) ** 2
    g, up = u.chunk(2, dim=-1)
    return F.silu(g) * up


# ----------------------------------------------------------------------------------------------------------
# op-level goldens

def op_case(name, inputs, fn, grad_of, extra=None, tol=2e-6):
    """inputs: dict name -> tensor (float tensors get requires_grad if in grad_of)."""
    ts = {}
    for k, v in inputs.items():
        t = v.clone()
        if k in grad_of:
            t.requires_grad_(True)
        ts[k] = t
    outs = fn(ts)
    if not isinstance(outs, dict):
        outs = {"out": outs}
    upstream = {k: rnd(*o.shape) for k, o in outs.items() if o.dtype.is_floating_point and o.requires_grad}
    total = sum((outs[k] * upstream[k]).sum() for k in upstream)
    grads = torch.autograd.grad(total, [ts[k] for k in grad_of], allow_unused=True) if grad_of else []
    case = {"name": name, "tol": tol, "inputs": {}, "outputs": {}, "upstream": {}, "grads": {}, "shapes": {}}
    for k, v in inputs.items():
        case["inputs"][k] = arr(v.float()) if v.dtype.is_floating_point else [int(x) for x in v.reshape(-1).tolist()]
        case["shapes"][k] = list(v.shape)
    for k, o in outs.items():
        case["outputs"][k] = arr(o.float()) if o.dtype.is_floating_point else [int(x) for x in o.reshape(-1).tolist()]
        case["shapes"]["out:" + k] = list(o.shape)
    for k, u in upstream.items():
        case["upstream"][k] = arr(u)
    for k, g in zip(grad_of, grads):
        case["grads"][k] = arr(g if g is not None else torch.zeros_like(inputs[k]))
    if extra:
        case.update(extra)
    return case


def op_cases():
    cases = []
    M, K, N = 5, 7, 6
    cases.append(op_case("matmul", {"inp": rnd(M, K), "w": rnd(N, K), "b": rnd(N)},
                         lambda t: t["inp"] @ t["w"].T + t["b"], ["inp", "w", "b"]))
    R, C = 6, 16
    cases.append(op_case("layernorm", {"x": rnd(R, C) * 2 + 0.5, "w": 1 + rnd(C, scale=0.1), "b": rnd(C, scale=0.1)},
                         lambda t: layernorm(t["x"], t["w"], t["b"]), ["x", "w", "b"]))
    cases.append(op_case("rmsnorm", {"x": rnd(R, C) * 2 + 0.5, "w": 1 + rnd(C, scale=0.1)},
                         lambda t: rmsnorm(t["x"], t["w"]), ["x", "w"]))
    pos = torch.tensor([0, 1, 2, 3, 17, 18, 30, 31], dtype=torch.int64)
    cases.append(op_case("rope", {"x": rnd(8, 3, 8), "pos": pos}, lambda t: rope(t["x"], t["pos"]), ["x"],
                         extra={"H": 3, "D": 8}))
    B, T, Hq, Hkv, D = 2, 6, 4, 2, 8
    p = torch.arange(T)
    cases.append(op_case("attention", {"q": rnd(B, T, Hq, D), "k": rnd(B, T, Hkv, D), "v": rnd(B, T, Hkv, D),
                                       "qpos": p, "kpos": p},
                         lambda t: attention(t["q"], t["k"], t["v"], t["qpos"], t["kpos"]), ["q", "k", "v"],
                         extra={"B": B, "Tq": T, "Tk": T, "Hq": Hq, "Hkv": Hkv, "D": D}))
    # context-parallel style: queries at positions of chunks 1 and 2 of 4 (cp=2, rank 1) against all keys,
    # which the test feeds as two blocks (chunks 0+3, then 1+2) merged by the online softmax
    qpos = torch.tensor([2, 3, 4, 5])
    kpos = torch.tensor([0, 1, 6, 7, 2, 3, 4, 5])
    cases.append(op_case("attention_ring", {"q": rnd(1, 4, 2, 8), "k": rnd(1, 8, 1, 8), "v": rnd(1, 8, 1, 8),
                                            "qpos": qpos, "kpos": kpos},
                         lambda t: attention(t["q"], t["k"], t["v"], t["qpos"], t["kpos"]), ["q", "k", "v"],
                         extra={"B": 1, "Tq": 4, "Tk": 8, "Hq": 2, "Hkv": 1, "D": 8, "blocks": 2}))
    for kind in ["gelu", "squared_relu"]:
        cases.append(op_case(kind, {"x": rnd(4, 10) * 2}, lambda t, k=kind: act(k, t["x"]), ["x"]))
    cases.append(op_case("swiglu", {"x": rnd(4, 2 * 5) * 2}, lambda t: act("swiglu", t["x"]), ["x"]))
    V, C2, Nt = 11, 5, 7
    tok = torch.tensor([0, 3, 10, 3, 7, 1, 10])
    cases.append(op_case("embedding", {"wte": rnd(V, C2), "tokens": tok}, lambda t: F.embedding(t["tokens"], t["wte"]),
                         ["wte"]))
    logits = rnd(Nt, V) * 3
    tgt = torch.tensor([1, 0, 10, 5, 5, 2, 9])

    def xent(t):
        return F.cross_entropy(t["logits"], t["targets"], reduction="none")
    cases.append(op_case("cross_entropy", {"logits": logits, "targets": tgt}, xent, ["logits"]))
    E, k = 6, 2
    rl = rnd(5, E) * 2

    def route(t):
        probs = torch.softmax(t["logits"], dim=-1)
        top, idx = torch.topk(t["logits"], k, dim=-1)
        return {"probs": probs, "weights": torch.softmax(top, dim=-1), "idx": idx}
    cases.append(op_case("moe_route", {"logits": rl}, route, ["logits"], extra={"E": E, "k": k}))
    # AdamW: torch.optim.AdamW from a given state at step 3
    prm, grad, m0, v0 = rnd(9), rnd(9), rnd(9, scale=0.1), rnd(9).abs() * 0.01
    p = prm.clone().requires_grad_(True)
    opt = torch.optim.AdamW([p], lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    p.grad = grad.clone()
    opt.state[p] = {"step": torch.tensor(2.0), "exp_avg": m0.clone(), "exp_avg_sq": v0.clone()}
    opt.step()
    st = opt.state[p]
    cases.append({"name": "adamw", "tol": 1e-6, "lr": 3e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "wd": 0.1,
                  "step": 3, "inputs": {"param": arr(prm), "grad": arr(grad), "m": arr(m0), "v": arr(v0)},
                  "outputs": {"param": arr(p), "m": arr(st["exp_avg"]), "v": arr(st["exp_avg_sq"])}})
    return cases


# ----------------------------------------------------------------------------------------------------------
# whole-model goldens

MODELS = {
    "gpt": dict(num_layers=2, hidden_size=16, ffn_hidden_size=64, num_attention_heads=2, vocab_size=32, activation="gelu",
                norm="layernorm", tied_embeddings=True, position_embedding="learned", max_position_embeddings=16,
                add_bias_linear=True),
    "llama": dict(num_layers=2, hidden_size=16, num_attention_heads=4, num_query_groups=2, ffn_hidden_size=24,
                  vocab_size=32, activation="swiglu", norm="rmsnorm", tied_embeddings=False,
                  position_embedding="rope"),
    "qwen": dict(num_layers=2, hidden_size=16, num_attention_heads=2, kv_channels=12, ffn_hidden_size=20,
                 vocab_size=32, activation="squared_relu", norm="layernorm", tied_embeddings=True,
                 position_embedding="rope", qk_layernorm=True, add_qkv_bias=True),
    "moe": dict(num_layers=2, hidden_size=16, num_attention_heads=2, ffn_hidden_size=24, vocab_size=32,
                activation="swiglu", norm="rmsnorm", tied_embeddings=False, position_embedding="rope",
                moe=dict(num_experts=4, top_k=2, moe_ffn_hidden_size=12, shared_expert_ffn_hidden_size=8,
                         first_k_dense_layers=1)),
}
AUX_COEFF = 1e-2


def model_weights(m):
    C, V = m["hidden_size"], m["vocab_size"]
    Hq = m["num_attention_heads"]
    Hkv = m.get("num_query_groups", Hq)
    D = m.get("kv_channels", C // Hq)
    Fd = m.get("ffn_hidden_size", 4 * C)
    gated = m["activation"] == "swiglu"
    bias = m.get("add_bias_linear", False)
    qkv_bias = m.get("add_qkv_bias", bias)
    ln = m["norm"] == "layernorm"
    W = {}

    def norm(name, width):
        W[name + ".weight"] = 1 + rnd(width, scale=0.1)
        if ln:
            W[name + ".bias"] = rnd(width, scale=0.1)

    def ffn(name, f):
        W[name + ".fc1"] = rnd(2 * f if gated else f, C, scale=0.2)
        if bias:
            W[name + ".fc1_bias"] = rnd(2 * f if gated else f, scale=0.1)
        W[name + ".fc2"] = rnd(C, f, scale=0.2)
        if bias:
            W[name + ".fc2_bias"] = rnd(C, scale=0.1)

    W["embedding.word"] = rnd(V, C, scale=0.5)
    if m["position_embedding"] == "learned":
        W["embedding.position"] = rnd(m["max_position_embeddings"], C, scale=0.3)
    moe = m.get("moe")
    for l in range(m["num_layers"]):
        p = "layers.%d." % l
        norm(p + "attn_norm", C)
        W[p + "attn.wq"] = rnd(Hq * D, C, scale=0.3)
        W[p + "attn.wk"] = rnd(Hkv * D, C, scale=0.3)
        W[p + "attn.wv"] = rnd(Hkv * D, C, scale=0.3)
        if qkv_bias:
            W[p + "attn.bq"] = rnd(Hq * D, scale=0.1)
            W[p + "attn.bk"] = rnd(Hkv * D, scale=0.1)
            W[p + "attn.bv"] = rnd(Hkv * D, scale=0.1)
        if m.get("qk_layernorm"):
            norm(p + "attn.q_norm", D)
            norm(p + "attn.k_norm", D)
        W[p + "attn.wo"] = rnd(C, Hq * D, scale=0.3)
        if bias:
            W[p + "attn.bo"] = rnd(C, scale=0.1)
        norm(p + "mlp_norm", C)
        if moe and l >= moe.get("first_k_dense_layers", 0):
            W[p + "router.weight"] = rnd(moe["num_experts"], C, scale=0.5)
            if bias:
                W[p + "router.bias"] = rnd(moe["num_experts"], scale=0.1)
            for e in range(moe["num_experts"]):
                ffn(p + "experts.%d" % e, moe["moe_ffn_hidden_size"])
            if moe.get("shared_expert_ffn_hidden_size", 0):
                ffn(p + "shared", moe["shared_expert_ffn_hidden_size"])
        else:
            ffn(p + "mlp", Fd)
    norm("final_norm", C)
    if not m["tied_embeddings"]:
        W["lm_head.weight"] = rnd(V, C, scale=0.5)
    return W


def model_forward(m, W, tokens, targets):
    """tokens (B, S) -> (logits (B*S, V), ce loss (mean), total loss incl. MoE load balancing)."""
    B, S = tokens.shape
    C = m["hidden_size"]
    Hq = m["num_attention_heads"]
    Hkv = m.get("num_query_groups", Hq)
    D = m.get("kv_channels", C // Hq)
    ln = m["norm"] == "layernorm"
    moe = m.get("moe")
    pos = torch.arange(S)

    def norm(name, x):
        return layernorm(x, W[name + ".weight"], W[name + ".bias"]) if ln else rmsnorm(x, W[name + ".weight"])

    def lin(x, w, b=None):
        y = x @ W[w].T
        return y + W[b] if b and b in W else y

    def ffn(name, x):
        return lin(act(m["activation"], lin(x, name + ".fc1", name + ".fc1_bias")), name + ".fc2", name + ".fc2_bias")

    x = W["embedding.word"][tokens]
    if "embedding.position" in W:
        x = x + W["embedding.position"][pos][None]
    aux_total = torch.zeros(())
    for l in range(m["num_layers"]):
        p = "layers.%d." % l
        h = norm(p + "attn_norm", x)
        q = lin(h, p + "attn.wq", p + "attn.bq").view(B, S, Hq, D)
        k = lin(h, p + "attn.wk", p + "attn.bk").view(B, S, Hkv, D)
        v = lin(h, p + "attn.wv", p + "attn.bv").view(B, S, Hkv, D)
        if m.get("qk_layernorm"):
            q, k = norm(p + "attn.q_norm", q), norm(p + "attn.k_norm", k)
        if m["position_embedding"] == "rope":
            q = rope(q.reshape(B * S, Hq, D), pos.repeat(B)).view(B, S, Hq, D)
            k = rope(k.reshape(B * S, Hkv, D), pos.repeat(B)).view(B, S, Hkv, D)
        a = attention(q, k, v, pos, pos).reshape(B, S, Hq * D)
        x = x + lin(a, p + "attn.wo", p + "attn.bo")
        h = norm(p + "mlp_norm", x)
        if moe and l >= moe.get("first_k_dense_layers", 0):
            E, K = moe["num_experts"], moe["top_k"]
            ht = h.reshape(B * S, C)
            logits = lin(ht, p + "router.weight", p + "router.bias")
            probs = torch.softmax(logits, dim=-1)
            top, idx = torch.topk(logits, K, dim=-1)
            wts = torch.softmax(top, dim=-1)
            y = torch.zeros_like(ht)
            for e in range(E):
                rows, slot = (idx == e).nonzero(as_tuple=True)
                if len(rows):
                    y = y.index_add(0, rows, wts[rows, slot][:, None] * ffn(p + "experts.%d" % e, ht[rows]))
            if p + "shared.fc1" in W:
                y = y + ffn(p + "shared", ht)
            counts = torch.bincount(idx.reshape(-1), minlength=E).float().detach()
            Nt = ht.shape[0]
            aux_total = aux_total + AUX_COEFF * E / (K * Nt * Nt) * (counts * probs.sum(0)).sum()
            x = x + y.view(B, S, C)
        else:
            x = x + ffn(p + "mlp", h)
    xf = norm("final_norm", x)
    head = W["embedding.word"] if m["tied_embeddings"] else W["lm_head.weight"]
    logits = xf.reshape(B * S, C) @ head.T
    ce = F.cross_entropy(logits, targets.reshape(-1))
    return logits, ce, ce + aux_total


def model_cases():
    out = []
    B, S = 2, 8
    for name, m in MODELS.items():
        W = model_weights(m)
        for t in W.values():
            t.requires_grad_(True)
        seq = torch.randint(0, m["vocab_size"], (B, S + 1))
        tokens, targets = seq[:, :-1], seq[:, 1:]
        logits, ce, total = model_forward(m, W, tokens, targets)
        total.backward()
        case = {"name": name, "model": dict(m, name="golden-" + name), "batch": B, "seq": S,
                "sequences": [[int(v) for v in r] for r in seq.tolist()], "loss": float(ce),
                "total_loss": float(total), "logits": arr(logits), "logits_tol": 2e-5,
                "weights": {k: arr(v) for k, v in W.items()},
                "grads": {k: arr(v.grad) for k, v in W.items()},
                "grad_tol": {k: 5e-5 for k in W}}
        out.append(case)
    return out


def main():
    doc = {"generator": "tests/golden/gen_golden.py", "torch": torch.__version__, "ops": op_cases(),
           "models": model_cases()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "executor_golden.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
