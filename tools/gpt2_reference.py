#!/usr/bin/env python3
"""An independent GPT-2 in numpy (float64), and random checkpoints in the exact Hugging Face layout.

    apt-get install python3-numpy
    # a random checkpoint: config.json + model.safetensors (written by hand, no safetensors package)
    /usr/bin/python3 tools/gpt2_reference.py checkpoint --config tiny --seed 1 --out DIR [--dtype F16] \\
        [--prefix transformer.] [--lm-head]
    # all-position logits for a token sequence, float64 little-endian [T][V]
    /usr/bin/python3 tools/gpt2_reference.py logits --model DIR --tokens 1,2,3 --out logits.f64
    # greedy continuation: the generated ids as JSON, and the smallest top-1/top-2 logit margin
    /usr/bin/python3 tools/gpt2_reference.py greedy --model DIR --tokens 1,2,3 --steps 64
    # either with the matrices stored as bf16, q8_0 or q4_0 (GGML's reference quantization,
    # tools/quantize_reference.py), then computed in float64 like the rest
    ... logits --weights q8_0 ...

The forward pass follows the GPT-2 paper and Hugging Face's modeling_gpt2 (pre-LayerNorm blocks,
Conv1D weights stored [in, out], GELU in its tanh form, LM head tied to wte unless tie_word_embeddings is false),
written from those descriptions in plain numpy.
"""
import argparse
import json
import pathlib
import struct

import numpy as np

CONFIGS = {  # name: (n_layer, n_head, n_embd, n_ctx, vocab_size[, n_inner]); n_inner defaults to 4 * n_embd
    "tiny": (2, 4, 64, 128, 512),
    "odd-heads": (3, 3, 48, 64, 320),
    "vocab": (2, 2, 32, 256, 50257),
    "gpt2": (12, 12, 768, 1024, 50257),
    "distilgpt2": (6, 12, 768, 1024, 50257),
    # a shape no published model has: an added token (V = 515), an FFN width that is not 4C
    "free": (2, 2, 64, 96, 515, 160),
    # the fuzzers' seed checkpoint (tools/make_fuzz_seeds.py): as small as a GPT-2 can be
    "seed": (1, 1, 4, 8, 8, 8),
    "seed32": (1, 1, 32, 8, 8, 32),
    # rows of 256: the width Q6_K needs (llama-quantize's Q4_0 files keep the embedding in Q6_K)
    "wide": (1, 4, 256, 32, 300),  # the smallest shape Q8_0 and Q4_0 can hold (the GGUF fuzz seeds)
    # rows of 256 over eight layers: llama-quantize's K-quant mixes pick ffn_down per layer
    "wide-8": (8, 4, 256, 32, 300, 256),
}

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None}


def to_bf16_bytes(a):
    """float32 -> bfloat16 bits with round-to-nearest-even, as bytes."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.tobytes()


def write_safetensors(path, tensors, dtype):
    """tensors: list of (name, float32 array). Written in order, 8-byte aligned."""
    header, blobs, offset = {}, [], 0
    for name, arr in tensors:
        if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):
            data, dt = np.ascontiguousarray(arr, dtype=np.float32).tobytes(), "F32"  # buffers stay F32
        elif dtype == "BF16":
            data, dt = to_bf16_bytes(arr), "BF16"
        else:
            data, dt = np.ascontiguousarray(arr, dtype=DTYPES[dtype]).tobytes(), dtype
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def make_checkpoint(args):
    n_layer, n_head, n_embd, n_ctx, vocab, *rest = CONFIGS[args.config]
    inner = rest[0] if rest else 4 * n_embd
    rng = np.random.default_rng(args.seed)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    c = n_embd
    # Scales as GPT-2's initialisation, with LayerNorm parameters perturbed so that they matter.
    normal = lambda *shape, std=0.02: (rng.standard_normal(shape) * std).astype(np.float32)
    p = args.prefix
    tensors = [(p + "wte.weight", normal(vocab, c, std=0.1)), (p + "wpe.weight", normal(n_ctx, c, std=0.5))]
    for i in range(n_layer):
        h = f"{p}h.{i}."
        tensors += [
            (h + "ln_1.weight", 1 + normal(c, std=0.1)), (h + "ln_1.bias", normal(c)),
            (h + "attn.c_attn.weight", normal(c, 3 * c, std=0.08)), (h + "attn.c_attn.bias", normal(3 * c)),
            (h + "attn.c_proj.weight", normal(c, c, std=0.08 / np.sqrt(2 * n_layer))), (h + "attn.c_proj.bias", normal(c)),
            (h + "ln_2.weight", 1 + normal(c, std=0.1)), (h + "ln_2.bias", normal(c)),
            (h + "mlp.c_fc.weight", normal(c, inner, std=0.08)), (h + "mlp.c_fc.bias", normal(inner)),
            (h + "mlp.c_proj.weight", normal(inner, c, std=0.08 / np.sqrt(2 * n_layer))), (h + "mlp.c_proj.bias", normal(c)),
        ]
        if n_ctx <= 256:  # the causal-mask buffer of the original checkpoints, which loaders must ignore
            tensors.append((h + "attn.bias", np.tril(np.ones((n_ctx, n_ctx), np.float32)).reshape(1, 1, n_ctx, n_ctx)))
    tensors += [(p + "ln_f.weight", 1 + normal(c, std=0.1)), (p + "ln_f.bias", normal(c))]
    if args.lm_head:
        tensors.append(("lm_head.weight", normal(vocab, c, std=0.1)))
    write_safetensors(out / "model.safetensors", tensors, args.dtype)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": n_layer, "n_head": n_head,
              "n_embd": n_embd, "n_positions": n_ctx, "n_ctx": n_ctx, "vocab_size": vocab,
              "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    if rest:
        config["n_inner"] = inner
    if args.lm_head:
        config["tie_word_embeddings"] = False
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"wrote {out}: {args.config} {n_layer}x{n_head}x{n_embd} ctx {n_ctx} vocab {vocab} {args.dtype}")


def load(model_dir):
    """config and float64 weights, read from our own safetensors writer's format (any valid file)."""
    d = pathlib.Path(model_dir)
    cfg = json.loads((d / "config.json").read_text())
    raw = (d / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    w = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, t = e["data_offsets"]
        buf = data[b:t]
        if e["dtype"] == "BF16":
            arr = (np.frombuffer(buf, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(buf, {"F32": np.float32, "F16": np.float16}[e["dtype"]])
        key = name[len("transformer."):] if name.startswith("transformer.") else name
        w[key] = arr.astype(np.float64).reshape(e["shape"])
    return cfg, w


def store_weights(w, fmt):
    """The matrices tessera stores in `fmt` (the four projections of each block, wte, lm_head)
    replaced by the weights that format holds. Blocks run along each output's inputs: rows of
    wte / lm_head, columns of the Conv1D matrices ([in, out]). The tied embedding / head of a
    q4_0 model is kept in q8_0 (as tessera and llama.cpp do)."""
    if fmt == "f32":
        return w
    import quantize_reference as q  # noqa: E402 (same directory)
    out = dict(w)

    def held_as(kind, rows):  # rows: [out, in] float64, each row one output's weights
        x = rows.astype(np.float32)
        if kind == "bf16":
            held = (np.frombuffer(q.bf16(x.ravel()), np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            held = q.quantize_as(kind, x)[2]
        return held.astype(np.float64).reshape(rows.shape)

    def cfg_layers(weights):
        return 1 + max(int(n.split(".")[1]) for n in weights if n.startswith("h."))

    def tied(weights):
        return "lm_head.weight" not in weights

    mixes = ("q4_k_m", "q5_k_m", "q6_k")
    for name in w:
        if name.endswith(("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")):
            rows = w[name].T
            kind = q.k_mix_type(fmt, name, rows.shape[1], cfg_layers(w), tied(w)) if fmt in mixes else fmt
            out[name] = held_as(kind, rows).T
        elif name in ("wte.weight", "lm_head.weight"):
            kind = q.k_mix_type(fmt, name, w[name].shape[1], cfg_layers(w), tied(w)) if fmt in mixes else \
                "q8_0" if fmt == "q4_0" else fmt
            out[name] = held_as(kind, w[name])
    return out


def layer_norm(x, g, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def forward(cfg, w, tokens):
    """All-position logits [T][V] in float64."""
    n_head, eps = cfg["n_head"], cfg["layer_norm_epsilon"]
    t = len(tokens)
    x = w["wte.weight"][tokens] + w["wpe.weight"][:t]
    c = x.shape[1]
    hd = c // n_head
    mask = np.triu(np.full((t, t), -np.inf), 1)
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = np.split(qkv, 3, axis=1)
        heads = []
        for j in range(n_head):
            s = slice(j * hd, (j + 1) * hd)
            att = q[:, s] @ k[:, s].T / np.sqrt(hd) + mask
            att = np.exp(att - att.max(1, keepdims=True))
            att /= att.sum(1, keepdims=True)
            heads.append(att @ v[:, s])
        x = x + np.concatenate(heads, 1) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        x = x + gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]) @ w[p + "mlp.c_proj.weight"] + \
            w[p + "mlp.c_proj.bias"]
    x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], eps)
    # Hugging Face ties the head to wte unless the config says otherwise (then lm_head.weight is used)
    head = w["wte.weight"] if cfg.get("tie_word_embeddings", True) else w["lm_head.weight"]
    return x @ head.T


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("checkpoint")
    c.add_argument("--config", choices=CONFIGS, required=True)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--out", required=True)
    c.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32")
    c.add_argument("--prefix", default="", help="'transformer.' for the prefixed key spelling")
    c.add_argument("--lm-head", action="store_true", help="an untied lm_head.weight")
    for name in ("logits", "greedy"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True)
        s.add_argument("--tokens", required=True, help="comma-separated ids")
        s.add_argument("--weights", choices=["f32", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q4_k_m", "q5_k_m", "q6_k"],
                       default="f32",
                       help="compute with the weights this storage format holds")
        s.add_argument("--embedding", choices=["q6_k"], help="then the embedding as this format holds it")
        if name == "logits":
            s.add_argument("--out", required=True)
        else:
            s.add_argument("--steps", type=int, default=64)
    args = parser.parse_args()
    if args.cmd == "checkpoint":
        return make_checkpoint(args)
    cfg, w = load(args.model)
    wte = w["wte.weight"]
    w = store_weights(w, args.weights)
    if args.embedding == "q6_k":  # the file's embedding, made from the checkpoint's
        import quantize_reference as q  # noqa: E402 (same directory)
        w["wte.weight"] = q.dequantize_q6_k(q.q6_k(wte.astype(np.float32).ravel())).astype(np.float64).reshape(wte.shape)
    tokens = [int(t) for t in args.tokens.split(",")]
    if args.cmd == "logits":
        forward(cfg, w, tokens).astype("<f8").tofile(args.out)
        return
    margin = np.inf
    for _ in range(args.steps):
        logits = forward(cfg, w, tokens)[-1]
        top2 = np.sort(logits)[-2:]
        margin = min(margin, top2[1] - top2[0])
        tokens.append(int(np.argmax(logits)))
    print(json.dumps({"tokens": tokens, "min_margin": float(margin)}))


if __name__ == "__main__":
    main()
