#!/usr/bin/env python3
"""An independent Llama-family decoder in numpy (float64), random checkpoints in Hugging Face's
layout, and the GGUF files llama.cpp's converter would write from them.

    apt-get install python3-numpy
    # a random checkpoint: config.json + model.safetensors (Hugging Face names, nn.Linear [out, in])
    /usr/bin/python3 tools/llama_reference.py checkpoint --config llama-tiny --seed 1 --out DIR [--shards N]
    # greedy continuation: the generated ids and the smallest top-1/top-2 logit margin, as JSON
    /usr/bin/python3 tools/llama_reference.py greedy --model DIR --tokens 1,2,3 --steps 8
    # all-position logits for a token sequence, float64 little-endian [T][V]; --weights q8_0 etc.
    # computes over the weights tessera holds in that format (GGML's reference quantization)
    /usr/bin/python3 tools/llama_reference.py logits --model DIR --tokens 1,2,3 --out logits.f64
    # the GGUF file: llama.cpp's names and metadata, q and k rows permuted for "llama" (the
    # converter's permute), Llama 3's rope scaling as rope_freqs.weight; --set KEY=u32:N (or
    # f32:X, str:S) replaces or adds metadata (the bad-input fixtures)
    /usr/bin/python3 tools/llama_reference.py gguf --model DIR --out F.gguf [--outtype f32|f16|bf16|q8_0|q4_0|q4_k_m|q5_k_m|q6_k]
    # random f32 weights at a published shape (smollm2-135m, qwen2.5-0.5b, llama-3.2-1b), for speed
    /usr/bin/python3 tools/llama_reference.py gguf-random --config smollm2-135m --out smollm2-135m-f32.gguf

The forward pass follows Hugging Face's modeling_llama / modeling_qwen2 / modeling_qwen3 as
their papers and documentation describe them (pre-RMSNorm blocks, rotary positions over halves
of each head, grouped-query attention, gated SiLU MLP; q/k/v biases for qwen2, per-head q/k
RMSNorm for qwen3), written in plain numpy.
"""
import argparse
import json
import math
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gguf_writer as gw  # noqa: E402
import gpt2_reference  # noqa: E402  (its safetensors reader and writer)
import quantize_reference as q  # noqa: E402

# name: (model_type, layers, hidden, heads, kv heads, head_dim or None, intermediate, ctx, vocab, extras)
CONFIGS = {
    # grouped-query attention (2 query heads per key/value head), untied head, Llama 3's rope scaling
    "llama-tiny": ("llama", 2, 64, 4, 2, None, 96, 96, 256,
                   {"rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
                    "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 32}}),
    # multi-query attention (one key/value head), q/k/v biases, tied head
    "qwen2-tiny": ("qwen2", 2, 64, 4, 1, None, 128, 96, 300,
                   {"rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}),
    # per-head q/k norms, head_dim (32) apart from hidden / heads (16), tied head
    "qwen3-tiny": ("qwen3", 2, 64, 4, 2, 32, 96, 96, 256,
                   {"rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}),
    # YaRN (Qwen's long-context recipe): the qwen2 shape with rope_scaling yarn, factor 4 over an
    # original context of 24 positions
    "qwen2-yarn-tiny": ("qwen2", 2, 64, 4, 2, None, 128, 96, 300,
                        {"rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
                         "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 24}}),
    # rows of 256 (whole K-quant super-blocks) and 8 layers (llama-quantize's use_more_bits picks
    # layers 0, 3, 6 and 7): the K-quant mixes' own types, where the 64-wide ones fall back
    "llama-256-tiny": ("llama", 8, 256, 4, 2, None, 256, 96, 256,
                       {"rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}),
    # a SentencePiece vocabulary's size (tests/data/sentencepiece: gguf --sentencepiece)
    "llama-spm-tiny": ("llama", 2, 64, 4, 2, None, 96, 96, 1000,
                       {"rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True}),
    # the vocabularies of tests/data/tokenizer_json's Llama 3, Qwen2 and SmolLM styles (their
    # tokenizer.json beside the checkpoint: make_llama_fixtures.sh); Qwen2's padded by 15 rows
    # past its 1,761 tokens, as transformers pads Qwen's embeddings
    "llama3-bpe-tiny": ("llama", 2, 64, 4, 2, None, 96, 96, 1767,
                        {"rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}),
    "qwen2-bpe-tiny": ("qwen2", 2, 64, 4, 2, None, 96, 96, 1776,
                       {"rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}),
    "smollm-bpe-tiny": ("llama", 2, 64, 4, 2, None, 96, 96, 1759,
                        {"rope_theta": 100000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True}),
    # the published shapes, for speed (random weights; never downloaded)
    "smollm2-135m": ("llama", 30, 576, 9, 3, None, 1536, 8192, 49152,
                     {"rope_theta": 100000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True}),
    "qwen2.5-0.5b": ("qwen2", 24, 896, 14, 2, None, 4864, 32768, 151936,
                     {"rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}),
    "llama-3.2-1b": ("llama", 16, 2048, 32, 8, 64, 8192, 131072, 128256,
                     {"rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
                      "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}),
}


def make_checkpoint(args):
    model_type, layers, c, heads, kv_heads, head_dim, inner, ctx, vocab, extras = CONFIGS[args.config]
    vocab = args.vocab or vocab  # a smaller vocabulary: the shape's layers with a fixture's tokenizer
    layers = args.layers or layers
    d = head_dim or c // heads
    rng = np.random.default_rng(args.seed)
    normal = lambda *shape, std=0.02: (rng.standard_normal(shape) * std).astype(np.float32)  # noqa: E731
    t = [("model.embed_tokens.weight", normal(vocab, c, std=0.5))]
    for i in range(layers):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", 1 + normal(c, std=0.1)),
              (p + "self_attn.q_proj.weight", normal(heads * d, c, std=0.15)),
              (p + "self_attn.k_proj.weight", normal(kv_heads * d, c, std=0.15)),
              (p + "self_attn.v_proj.weight", normal(kv_heads * d, c, std=0.15)),
              (p + "self_attn.o_proj.weight", normal(c, heads * d, std=0.1))]
        if model_type == "qwen2":
            t += [(p + "self_attn.q_proj.bias", normal(heads * d, std=0.2)),
                  (p + "self_attn.k_proj.bias", normal(kv_heads * d, std=0.2)),
                  (p + "self_attn.v_proj.bias", normal(kv_heads * d, std=0.2))]
        if model_type == "qwen3":
            t += [(p + "self_attn.q_norm.weight", 1 + normal(d, std=0.2)),
                  (p + "self_attn.k_norm.weight", 1 + normal(d, std=0.2))]
        t += [(p + "post_attention_layernorm.weight", 1 + normal(c, std=0.1)),
              (p + "mlp.gate_proj.weight", normal(inner, c, std=0.15)),
              (p + "mlp.up_proj.weight", normal(inner, c, std=0.15)),
              (p + "mlp.down_proj.weight", normal(c, inner, std=0.1))]
    t.append(("model.norm.weight", 1 + normal(c, std=0.1)))
    if not extras.get("tie_word_embeddings", False):
        t.append(("lm_head.weight", normal(vocab, c, std=0.3)))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.shards > 1:  # as transformers' save_pretrained shards: contiguous runs of tensors, and an index
        runs = np.array_split(np.arange(len(t)), args.shards)
        weight_map = {}
        for i, run in enumerate(runs):
            name = f"model-{i + 1:05d}-of-{args.shards:05d}.safetensors"
            gpt2_reference.write_safetensors(out / name, [t[j] for j in run], args.dtype)
            weight_map.update({t[j][0]: name for j in run})
        size = sum(a.size for _, a in t) * (4 if args.dtype == "F32" else 2)
        index = {"metadata": {"total_size": size}, "weight_map": weight_map}
        (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    else:
        gpt2_reference.write_safetensors(out / "model.safetensors", t, args.dtype)
    arch = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[model_type]
    config = {"model_type": model_type, "architectures": [arch], "num_hidden_layers": layers, "hidden_size": c,
              "num_attention_heads": heads, "num_key_value_heads": kv_heads, "intermediate_size": inner,
              "max_position_embeddings": ctx, "vocab_size": vocab, "hidden_act": "silu", **extras}
    if head_dim:
        config["head_dim"] = head_dim
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"wrote {out}: {args.config}")


def inv_freq(cfg, d):
    f = 1.0 / cfg.get("rope_theta", 10000.0) ** (np.arange(0, d, 2, dtype=np.float64) / d)
    s = cfg.get("rope_scaling")
    if not s:
        return f
    kind = s.get("rope_type", s.get("type"))
    if kind == "linear":
        return f / s["factor"]
    if kind == "yarn":
        return yarn(cfg, d)[0]
    assert kind == "llama3", kind
    return f / llama3_factors(f, s)


def yarn(cfg, d):
    """YaRN's frequencies and attention factor as transformers' _compute_yarn_parameters defines
    them (modeling_rope_utils.py), with the factor and original context as rope_scaling gives
    them (llama.cpp's converter writes both as they are)."""
    s, base = cfg["rope_scaling"], cfg.get("rope_theta", 10000.0)
    factor = s["factor"]
    original = s.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    attention = s.get("attention_factor") or (1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0)
    beta_fast, beta_slow = s.get("beta_fast") or 32, s.get("beta_slow") or 1

    def correction_dim(rotations):
        return (d * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    pos_freqs = base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    extrapolation = 1 - ramp
    return (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (1.0 / pos_freqs) * extrapolation, attention


def rope_amplitude(cfg, d):
    """What cos and sin are scaled by: YaRN's attention factor, else 1."""
    s = cfg.get("rope_scaling")
    return yarn(cfg, d)[1] if s and s.get("rope_type", s.get("type")) == "yarn" else 1.0


def llama3_factors(f, s):
    """Llama 3's per-pair divisors of the frequencies (what GGUF's rope_freqs.weight holds)."""
    factor, low, high, old = s["factor"], s["low_freq_factor"], s["high_freq_factor"], s["original_max_position_embeddings"]
    out = []
    for freq in f:
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out)


def rms_norm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def rope(x, positions, f, amplitude=1.0):
    """x (T, heads, D), Hugging Face's rotate_half over halves of each head; cos and sin times
    `amplitude` (YaRN's attention scaling)."""
    angle = positions[:, None] * f[None, :]  # (T, D/2)
    cos, sin = np.cos(angle)[:, None, :] * amplitude, np.sin(angle)[:, None, :] * amplitude
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def forward(cfg, w, tokens):
    c, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", heads)
    d = cfg.get("head_dim") or c // heads
    eps = cfg.get("rms_norm_eps", 1e-6)
    f, amplitude = inv_freq(cfg, d), rope_amplitude(cfg, d)
    ids = np.array(tokens)
    t = len(ids)
    pos = np.arange(t, dtype=np.float64)
    x = w["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((t, t), -np.inf), 1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        proj = lambda n: h @ w[p + f"self_attn.{n}_proj.weight"].T + w.get(p + f"self_attn.{n}_proj.bias", 0)  # noqa: E731
        qh, kh, vh = proj("q").reshape(t, heads, d), proj("k").reshape(t, kv_heads, d), proj("v").reshape(t, kv_heads, d)
        if p + "self_attn.q_norm.weight" in w:
            qh = rms_norm(qh, w[p + "self_attn.q_norm.weight"], eps)
            kh = rms_norm(kh, w[p + "self_attn.k_norm.weight"], eps)
        qh, kh = rope(qh, pos, f, amplitude), rope(kh, pos, f, amplitude)
        group = heads // kv_heads
        att = np.empty((t, heads, d))
        for hh in range(heads):
            s = qh[:, hh, :] @ kh[:, hh // group, :].T / math.sqrt(d) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            att[:, hh, :] = (s / s.sum(-1, keepdims=True)) @ vh[:, hh // group, :]
        x = x + att.reshape(t, heads * d) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w and not cfg.get("tie_word_embeddings", False) \
        else w["model.embed_tokens.weight"]
    return x @ head.T


MATRICES = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight", "gate_proj.weight", "up_proj.weight",
            "down_proj.weight")


def held(rows, kind):
    """rows [out, in] float64 as the weights `kind` holds (each row quantized along its inputs)."""
    x = rows.astype(np.float32)
    if kind == "f32":
        return x.astype(np.float64)
    if kind == "bf16":
        return ((np.frombuffer(q.bf16(x.ravel()), np.uint16).astype(np.uint32) << 16).view(np.float32)
                .astype(np.float64).reshape(rows.shape))
    return q.quantize_as(kind, x)[2].astype(np.float64).reshape(rows.shape)


MIXES = ("q4_k_m", "q5_k_m", "q6_k")


def stored_kind(fmt, name, cols, cfg):
    """What the matrix `name` (rows of `cols`) is stored as in `fmt`: the format itself for the
    blocks' projections; the embedding / head for q4_0 in q6_k, or q8_0 where its rows are not
    whole super-blocks of 256; a K-quant mix's type per tensor as llama-quantize picks it
    (quantize_reference.llama_mix_type)."""
    if fmt in MIXES:
        return q.llama_mix_type(fmt, name, cols, cfg["num_hidden_layers"], cfg.get("tie_word_embeddings", False))
    if name in ("model.embed_tokens.weight", "lm_head.weight") and fmt == "q4_0":
        return "q6_k" if cols % 256 == 0 else "q8_0"
    return fmt


def store_weights(w, fmt, cfg):
    """The matrices tessera stores in `fmt` (the blocks' projections, the embedding / head)
    replaced by the weights that format holds (stored_kind)."""
    out = dict(w)
    for name in w:
        if name.endswith(MATRICES) or name in ("model.embed_tokens.weight", "lm_head.weight"):
            out[name] = held(w[name], stored_kind(fmt, name, w[name].shape[1], cfg))
    return out


def permute(rows, n_head):
    """llama.cpp's convert_hf_to_gguf permute of q's and k's rows (halves -> adjacent pairs)."""
    return rows.reshape(n_head, 2, rows.shape[0] // n_head // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def gguf_name(hf):
    whole = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf in whole:
        return whole[hf]
    in_block = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
                "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
                "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    _, _, layer, rest = hf.split(".", 3)
    stem, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{in_block[stem]}.{kind}"


FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "bf16": 32, "q4_k_m": 15, "q5_k_m": 17, "q6_k": 18}


def tokenizer_metadata(model_dir, arch, vocab):
    """The model's byte-level BPE (vocab.json + merges.txt, as GPT-2's converter writes it) where
    the directory has one; else llama.cpp's tokenizer model "none" with the vocabulary's size,
    which it runs on ids (dummy tokens): the random checkpoints have no tokenizer."""
    if model_dir is not None and (model_dir / "vocab.json").exists():
        import hf_to_gguf
        return hf_to_gguf.tokenizer_metadata(model_dir)
    return [("tokenizer.ggml.model", gw.STRING, "none"), (arch + ".vocab_size", gw.U32, vocab)]


def write_gguf(args):
    cfg, w = gpt2_reference.load(args.model)
    arch = cfg["model_type"]
    c, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", heads)
    d = cfg.get("head_dim") or c // heads
    k = arch + "."
    meta = [("general.architecture", gw.STRING, arch), ("general.name", gw.STRING, pathlib.Path(args.model).name),
            (k + "block_count", gw.U32, cfg["num_hidden_layers"]), (k + "context_length", gw.U32, cfg["max_position_embeddings"]),
            (k + "embedding_length", gw.U32, c), (k + "feed_forward_length", gw.U32, cfg["intermediate_size"]),
            (k + "attention.head_count", gw.U32, heads), (k + "attention.head_count_kv", gw.U32, kv_heads),
            (k + "rope.freq_base", gw.F32, cfg.get("rope_theta", 10000.0)),
            (k + "attention.layer_norm_rms_epsilon", gw.F32, cfg.get("rms_norm_eps", 1e-6)),
            (k + "rope.dimension_count", gw.U32, d), ("general.file_type", gw.U32, FILE_TYPE[args.outtype])]
    if cfg.get("head_dim"):
        meta += [(k + "attention.key_length", gw.U32, d), (k + "attention.value_length", gw.U32, d)]
    scaling = cfg.get("rope_scaling")
    if scaling and scaling.get("rope_type", scaling.get("type")) == "yarn":  # as convert_hf_to_gguf.py writes YaRN
        meta += [(k + "rope.scaling.type", gw.STRING, "yarn"), (k + "rope.scaling.factor", gw.F32, scaling["factor"]),
                 (k + "rope.scaling.original_context_length", gw.U32, scaling["original_max_position_embeddings"])]
    if args.outtype in ("q8_0", "q4_0") + MIXES:
        meta.append(("general.quantization_version", gw.U32, 2))
    if args.sentencepiece:  # a SentencePiece model's pieces, as llama.cpp's converter writes them
        import make_sentencepiece_fixture
        meta += make_sentencepiece_fixture.gguf_metadata(args.sentencepiece)
    else:
        meta += tokenizer_metadata(pathlib.Path(args.model), arch, w["model.embed_tokens.weight"].shape[0])
    for item in args.set or []:  # KEY=u32:N | f32:X | str:S, replacing or adding (the bad-input fixtures)
        key, value = item.split("=", 1)
        kind, v = value.split(":", 1)
        entry = (key, {"u32": gw.U32, "f32": gw.F32, "str": gw.STRING}[kind],
                 int(v) if kind == "u32" else float(v) if kind == "f32" else v)
        meta = [m for m in meta if m[0] != key] + [entry]
    tensors = []
    s = cfg.get("rope_scaling")
    if s and s.get("rope_type", s.get("type")) == "llama3":
        f = 1.0 / cfg.get("rope_theta", 10000.0) ** (np.arange(0, d, 2, dtype=np.float32) / d)
        tensors.append(("rope_freqs.weight", "F32", [d // 2], llama3_factors(f.astype(np.float64), s).astype("<f4").tobytes()))
    tied = cfg.get("tie_word_embeddings", False)
    for name in sorted(w):
        if name == "lm_head.weight" and tied:
            continue
        a = w[name].astype(np.float32)
        if arch == "llama" and name.endswith("q_proj.weight"):
            a = permute(a, heads)
        if arch == "llama" and name.endswith("k_proj.weight"):
            a = permute(a, kv_heads)
        if a.ndim == 1:
            kind, raw = "F32", a.tobytes()
        elif args.outtype == "f32":
            kind, raw = "F32", a.tobytes()
        elif args.outtype == "f16":
            kind, raw = "F16", a.astype("<f2").tobytes()
        elif args.outtype == "bf16":
            kind, raw = "BF16", q.bf16(a.ravel())
        else:
            kind, raw, _ = q.quantize_as(stored_kind(args.outtype, name, a.shape[1], cfg), a)
        tensors.append((gguf_name(name), kind, list(reversed(a.shape)), raw))
    gw.write_gguf(args.out, meta, tensors)
    print(f"wrote {args.out}: {arch} {args.outtype}")


def write_random_gguf(args):
    """A GGUF file of the config's shape with random f32 weights (std 0.02, norms 1), written tensor
    by tensor: the published shapes, for speed, without holding the whole model in memory."""
    import struct
    model_type, layers, c, heads, kv_heads, head_dim, inner, ctx, vocab, extras = CONFIGS[args.config]
    d = head_dim or c // heads
    k = model_type + "."
    meta = [("general.architecture", gw.STRING, model_type), ("general.name", gw.STRING, args.config + " (random)"),
            (k + "block_count", gw.U32, layers), (k + "context_length", gw.U32, ctx), (k + "embedding_length", gw.U32, c),
            (k + "feed_forward_length", gw.U32, inner), (k + "attention.head_count", gw.U32, heads),
            (k + "attention.head_count_kv", gw.U32, kv_heads), (k + "rope.freq_base", gw.F32, extras["rope_theta"]),
            (k + "attention.layer_norm_rms_epsilon", gw.F32, extras["rms_norm_eps"]), (k + "rope.dimension_count", gw.U32, d),
            ("general.file_type", gw.U32, 0)] + tokenizer_metadata(None, model_type, vocab)
    tensors = [("token_embd.weight", [c, vocab])]
    s = extras.get("rope_scaling")
    if s:
        tensors.append(("rope_freqs.weight", [d // 2]))
    for i in range(layers):
        b = f"blk.{i}."
        tensors += [(b + "attn_norm.weight", [c]), (b + "attn_q.weight", [c, heads * d]), (b + "attn_k.weight", [c, kv_heads * d]),
                    (b + "attn_v.weight", [c, kv_heads * d]), (b + "attn_output.weight", [heads * d, c])]
        if model_type == "qwen2":
            tensors += [(b + "attn_q.bias", [heads * d]), (b + "attn_k.bias", [kv_heads * d]), (b + "attn_v.bias", [kv_heads * d])]
        tensors += [(b + "ffn_norm.weight", [c]), (b + "ffn_gate.weight", [c, inner]), (b + "ffn_up.weight", [c, inner]),
                    (b + "ffn_down.weight", [inner, c])]
    tensors.append(("output_norm.weight", [c]))
    if not extras.get("tie_word_embeddings", False):
        tensors.append(("output.weight", [c, vocab]))
    header = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)))
    for key, kind, v in meta:
        header += gw.string(key) + struct.pack("<I", kind) + gw.value(kind, v)
    offset = 0
    for name, ne in tensors:
        header += gw.string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", 0, offset)
        offset += -(-4 * int(np.prod(ne)) // 32) * 32
    header += b"\0" * (-len(header) % 32)
    rng = np.random.default_rng(args.seed)
    with open(args.out, "wb") as f:
        f.write(header)
        for name, ne in tensors:
            n = int(np.prod(ne))
            if name == "rope_freqs.weight":
                base = 1.0 / extras["rope_theta"] ** (np.arange(0, d, 2, dtype=np.float32) / d)
                a = llama3_factors(base.astype(np.float64), s).astype("<f4")
            elif len(ne) == 1 and name.endswith("norm.weight"):
                a = np.ones(n, "<f4")
            else:
                a = (rng.standard_normal(n, dtype=np.float32) * 0.02).astype("<f4")
            f.write(a.tobytes())
            f.write(b"\0" * (-a.nbytes % 32))
    print(f"wrote {args.out}: {args.config}, random f32")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("checkpoint")
    c.add_argument("--config", choices=sorted(CONFIGS), required=True)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    c.add_argument("--shards", type=int, default=1, help="write model-0000i-of-0000N.safetensors and their index")
    c.add_argument("--vocab", type=int, default=0, help="a vocabulary of this size instead of the config's")
    c.add_argument("--layers", type=int, default=0, help="this many layers instead of the config's")
    c.add_argument("--out", required=True)
    lg = sub.add_parser("logits")
    lg.add_argument("--model", required=True)
    lg.add_argument("--tokens", required=True)
    lg.add_argument("--weights", default="f32", choices=["f32", "bf16", "q8_0", "q4_0", *MIXES])
    lg.add_argument("--out", required=True)
    gr = sub.add_parser("greedy")
    gr.add_argument("--model", required=True)
    gr.add_argument("--tokens", required=True)
    gr.add_argument("--steps", type=int, default=8)
    rg = sub.add_parser("gguf-random")
    rg.add_argument("--config", choices=sorted(CONFIGS), required=True)
    rg.add_argument("--seed", type=int, default=1)
    rg.add_argument("--out", required=True)
    g = sub.add_parser("gguf")
    g.add_argument("--model", required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--outtype", default="f32", choices=sorted(FILE_TYPE))
    g.add_argument("--set", action="append", help="metadata KEY=u32:N|f32:X|str:S to replace or add")
    g.add_argument("--sentencepiece", help="a tokenizer.model whose pieces become the file's tokenizer (python3-sentencepiece)")
    args = ap.parse_args()
    if args.cmd == "checkpoint":
        make_checkpoint(args)
    elif args.cmd == "logits":
        cfg, w = gpt2_reference.load(args.model)
        logits = forward(cfg, store_weights(w, args.weights, cfg), [int(t) for t in args.tokens.split(",")])
        logits.astype("<f8").tofile(args.out)
        print(f"wrote {args.out}: {logits.shape}")
    elif args.cmd == "greedy":
        cfg, w = gpt2_reference.load(args.model)
        ids, margin = [int(t) for t in args.tokens.split(",")], float("inf")
        generated = []
        for _ in range(args.steps):
            last = np.sort(forward(cfg, w, ids)[-1])
            margin = min(margin, last[-1] - last[-2])
            generated.append(int(np.argmax(forward(cfg, w, ids)[-1])))
            ids.append(generated[-1])
        print(json.dumps({"tokens": generated, "smallest_margin": margin}))
    elif args.cmd == "gguf-random":
        write_random_gguf(args)
    else:
        write_gguf(args)


if __name__ == "__main__":
    main()
