#!/usr/bin/python3
"""Writes the libFuzzer seed corpora in tests/fuzz/corpus (committed; rerun to regenerate):

  /usr/bin/python3 tools/make_fuzz_seeds.py   (needs python3-numpy)

fuzz_tokenizer: texts; fuzz_tokenizer_files: a 300-token vocabulary (GPT-2's byte alphabet and
its first merges) + NUL + merges, the same as tokenizer.json files, a SentencePiece model; fuzz_safetensors: the "seed" checkpoint in F32, F16, BF16;
fuzz_config: config.json files; fuzz_checkpoint: config.json + NUL + model.safetensors;
fuzz_json: config.json, a safetensors header and JSON with every kind of value and escape;
fuzz_gguf: tests/data/gguf/sample.gguf (tools/gguf_writer.py), and the "seed32" checkpoint
as GGUF files in F32, Q8_0 and Q4_0 (tools/hf_to_gguf.py).
"""
import json
import pathlib
import sys
import tempfile
import types

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "tools"))
import gpt2_reference  # noqa: E402

out = root / "tests" / "fuzz" / "corpus"


def put(harness, name, data):
    d = out / harness
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


texts = ["Hello world", "It's a test: we're, they've, I'll, he'd", "北京 東京 🙂 é\u0301",
         "  spaces\t\ttabs\n\nnewlines  ", "<|endoftext|>x<|endoftext|>", "12345 3.14 -7", "^^^^==== ~~~"]
for i, t in enumerate(texts):
    put("fuzz_tokenizer", f"text{i}", t)

vocab = json.loads((root / "tests/data/gpt2/vocab.json").read_text(encoding="utf-8"))
small = {tok: i for tok, i in vocab.items() if i < 300}
merges = (root / "tests/data/gpt2/merges.txt").read_text(encoding="utf-8").splitlines()[1:]
kept = [m for m in merges if all(p in small for p in m.split(" ")) and m.replace(" ", "") in small]
put("fuzz_tokenizer_files", "gpt2_first_300", json.dumps(small) + "\0#version: 0.2\n" + "\n".join(kept) + "\n")
# The same vocabulary as tokenizer.json files (+ NUL + tokenizer_config.json) in the Llama 3 and
# Qwen2 layouts, and the SentencePiece fixture's tokenizer.model.
fixtures = root / "tests/data/tokenizer_json"
for style in ("llama3", "qwen2"):
    t = json.loads((fixtures / style / "tokenizer.json").read_text(encoding="utf-8"))
    n = len(small)
    t["model"]["vocab"] = small
    t["model"]["merges"] = kept
    for i, a in enumerate(t["added_tokens"]):
        a["id"] = n + i
    t["post_processor"] = None
    config = {"eos_token": t["added_tokens"][-1]["content"]}
    put("fuzz_tokenizer_files", f"tokenizer_json_{style}", json.dumps(t, ensure_ascii=False) + "\0" + json.dumps(config))
put("fuzz_tokenizer_files", "sentencepiece.model", (root / "tests/data/sentencepiece/tokenizer.model").read_bytes())

with tempfile.TemporaryDirectory() as tmp:
    for dtype in ("F32", "F16", "BF16"):
        d = pathlib.Path(tmp) / dtype
        gpt2_reference.make_checkpoint(types.SimpleNamespace(config="seed", seed=1, out=str(d), dtype=dtype,
                                                             prefix="", lm_head=False))
        weights = (d / "model.safetensors").read_bytes()
        config = (d / "config.json").read_text()
        put("fuzz_safetensors", f"seed_{dtype}.safetensors", weights)
        put("fuzz_checkpoint", f"seed_{dtype}", config.encode() + b"\0" + weights)
        put("fuzz_config", "seed.json", config)
        put("fuzz_json", "config.json", config)
        put("fuzz_json", "safetensors_header.json", weights[8:8 + int.from_bytes(weights[:8], "little")])
for name, (n_layer, n_head, n_embd, n_ctx, vocab_size, *rest) in gpt2_reference.CONFIGS.items():
    cfg = {"model_type": "gpt2", "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "n_positions": n_ctx,
           "vocab_size": vocab_size, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    if rest:
        cfg["n_inner"] = rest[0]
    put("fuzz_config", f"{name}.json", json.dumps(cfg))
put("fuzz_json", "values.json", '{"a": [0, -0, 1.5e-3, 18446744073709551616, true, false, null], '
    '"s": "\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00é", "o": {"x": {}, "y": []}}')
gguf = out / "fuzz_gguf"
gguf.mkdir(parents=True, exist_ok=True)
(gguf / "sample.gguf").write_bytes((root / "tests/data/gguf/sample.gguf").read_bytes())  # tools/gguf_writer.py
import hf_to_gguf  # noqa: E402
with tempfile.TemporaryDirectory() as tmp:
    d = pathlib.Path(tmp) / "seed32"
    gpt2_reference.make_checkpoint(types.SimpleNamespace(config="seed32", seed=1, out=str(d), dtype="F32", prefix="",
                                                         lm_head=False))
    for outtype in ("f32", "q8_0", "q4_0"):
        f = pathlib.Path(tmp) / f"seed-{outtype}.gguf"
        sys.argv = ["hf_to_gguf.py", str(d), str(f), "--outtype", outtype]
        hf_to_gguf.main()
        put("fuzz_gguf", f"seed-{outtype}.gguf", f.read_bytes())
# Chat templates: the ones tests/test_chat.cpp compares with Jinja2, and a small one.
for t in sorted((root / "tests/data/chat/templates").glob("*.jinja")):
    put("fuzz_chat_template", t.name, t.read_bytes())
put("fuzz_chat_template", "small.jinja", b"{{ x }}{% for i in range(3) %}{{ loop.index }}{% endfor %}")
print(f"wrote {sum(1 for _ in out.rglob('*') if _.is_file())} seeds under {out}")
