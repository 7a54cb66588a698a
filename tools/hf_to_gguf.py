#!/usr/bin/python3
"""A Hugging Face GPT-2 directory (config.json, model.safetensors, vocab.json, merges.txt) as a
GGUF file in llama.cpp's layout, the way its convert_hf_to_gguf.py (GPT2Model) writes one,
written independently of tessera's C++ (numpy, tools/gguf_writer.py, tools/quantize_reference.py):

  /usr/bin/python3 tools/hf_to_gguf.py DIR OUT.gguf --outtype f32|f16|bf16|q8_0|q4_0|q4_k|q5_k|q4_k_m|q5_k_m|q6_k

Conv1D weights [in, out] are transposed to [out, in] (ggml ne = [in, out]); names as llama.cpp's
tensor map (token_embd, position_embd, blk.N.attn_norm/attn_qkv/attn_output/ffn_norm/ffn_up/
ffn_down, output_norm; output only for an untied lm_head); matrices in the out type (the
embedding / head of a q4_0 file in Q8_0, or in Q6_K with --embedding-type q6_k, as
llama-quantize and tessera write it where the width is a multiple of 256),
position_embd, norms and biases in F32; the tokenizer as tokenizer.ggml.* (model "gpt2",
pre "gpt-2"). The test fixtures are made with it (tools/make_gpt2_fixtures.sh).
"""
import argparse
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gguf_writer as gw  # noqa: E402
import gpt2_reference  # noqa: E402
import quantize_reference as q  # noqa: E402

# llama_ftype: q4_k and q5_k (every matrix in it) as the _S files; q4_k_m, q5_k_m, q6_k:
# llama-quantize's mixes (quantize_reference.k_mix_type)
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "bf16": 32, "q4_k": 14, "q5_k": 16, "q4_k_m": 15, "q5_k_m": 17,
             "q6_k": 18}
MIXES = ("q4_k_m", "q5_k_m", "q6_k")
IN_BLOCK = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
            "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
WHOLE = {"wte": "token_embd", "wpe": "position_embd", "ln_f": "output_norm", "lm_head": "output"}


def gguf_name(hf):
    stem, kind = hf.rsplit(".", 1)
    if stem in WHOLE:
        return f"{WHOLE[stem]}.{kind}"
    _, layer, rest = stem.split(".", 2)
    return f"blk.{layer}.{IN_BLOCK[rest]}.{kind}"


def encode(rows, outtype):
    """rows: float32 [rows, cols] -> (ggml type name, bytes)"""
    x = np.ascontiguousarray(rows, dtype=np.float32)
    if outtype == "f32":
        return "F32", x.tobytes()
    if outtype == "f16":
        return "F16", x.astype("<f2").tobytes()
    if outtype == "bf16":
        return "BF16", q.bf16(x.ravel())
    return outtype.upper(), {"q8_0": q.q8_0, "q4_0": q.q4_0, "q4_k": q.q4_k, "q5_k": q.q5_k}[outtype](x.ravel())


def tokenizer_metadata(d):
    vocab = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    merges = [line for i, line in enumerate((d / "merges.txt").read_text(encoding="utf-8").split("\n"))
              if line and not (i == 0 and line.startswith("#version"))]
    metadata = [
        ("tokenizer.ggml.model", gw.STRING, "gpt2"),
        ("tokenizer.ggml.pre", gw.STRING, "gpt-2"),
        ("tokenizer.ggml.tokens", gw.ARRAY, (gw.STRING, tokens)),
        ("tokenizer.ggml.token_type", gw.ARRAY, (gw.I32, [3 if t == "<|endoftext|>" else 1 for t in tokens])),
        ("tokenizer.ggml.merges", gw.ARRAY, (gw.STRING, merges)),
    ]
    if "<|endoftext|>" in vocab:
        metadata += [("tokenizer.ggml.bos_token_id", gw.U32, vocab["<|endoftext|>"]),
                     ("tokenizer.ggml.eos_token_id", gw.U32, vocab["<|endoftext|>"])]
    return metadata


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--outtype", default="f32", choices=sorted(FILE_TYPE))
    ap.add_argument("--embedding-type", choices=["q6_k"],
                    help="token_embd in this type, as llama-quantize writes its Q4_0 files")
    args = ap.parse_args()
    d = pathlib.Path(args.model)
    cfg, w = gpt2_reference.load(d)
    n_embd = cfg["n_embd"]
    metadata = [
        ("general.architecture", gw.STRING, "gpt2"),
        ("general.name", gw.STRING, d.name),
        ("gpt2.block_count", gw.U32, cfg["n_layer"]),
        ("gpt2.context_length", gw.U32, cfg.get("n_ctx", cfg.get("n_positions"))),
        ("gpt2.embedding_length", gw.U32, n_embd),
        ("gpt2.feed_forward_length", gw.U32, cfg.get("n_inner") or 4 * n_embd),
        ("gpt2.attention.head_count", gw.U32, cfg["n_head"]),
        ("gpt2.attention.layer_norm_epsilon", gw.F32, cfg.get("layer_norm_epsilon", 1e-5)),
        ("general.file_type", gw.U32, FILE_TYPE[args.outtype]),
    ]
    if (d / "vocab.json").exists():  # the random test checkpoints without a tokenizer have none
        metadata += tokenizer_metadata(d)
    if args.outtype not in ("f32", "f16", "bf16"):
        metadata.append(("general.quantization_version", gw.U32, 2))
    tied = cfg.get("tie_word_embeddings", True)
    tensors = []
    for name in sorted(w):
        if name.endswith((".attn.bias", ".attn.masked_bias")) or (name == "lm_head.weight" and tied):
            continue
        a = w[name].astype(np.float32)
        if name.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight")):
            a = a.T  # Conv1D [in, out] -> [out, in]
        matrix = a.ndim == 2 and name != "wpe.weight"
        # The tied embedding / head of a Q4_0 file stays wider: Q8_0 here, Q6_K with
        # --embedding-type q6_k (as llama-quantize and tessera write it where the width allows).
        outtype = "q8_0" if args.outtype == "q4_0" and name in ("wte.weight", "lm_head.weight") else args.outtype
        if matrix and args.outtype in MIXES:
            outtype = q.k_mix_type(args.outtype, name, a.shape[1], cfg["n_layer"], tied)
            kind, raw, _ = q.quantize_as(outtype, a)
        else:
            kind, raw = encode(a, outtype) if matrix else ("F32", np.ascontiguousarray(a).tobytes())
        if name == "wte.weight" and args.embedding_type == "q6_k":
            kind, raw = "Q6_K", q.q6_k(a.ravel())
        tensors.append((gguf_name(name), kind, list(reversed(a.shape)), raw))
    gw.write_gguf(args.out, metadata, tensors)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
