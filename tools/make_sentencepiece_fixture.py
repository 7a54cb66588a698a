#!/usr/bin/env python3
"""A SentencePiece BPE tokenizer trained by Google's sentencepiece on Debian's fortunes, as
llama.cpp's converter writes a Llama 2 / Mistral tokenizer into GGUF (tokenizer.ggml.model
"llama": the pieces, their scores, their types), and the ids sentencepiece itself gives for
test strings: the reference for tessera's SentencePieceTokenizer.

    apt-get install python3-sentencepiece fortunes
    /usr/bin/python3 tools/make_sentencepiece_fixture.py --out tests/data/sentencepiece

Writes OUT/tokenizer.model (sentencepiece's own file), OUT/tokenizer.gguf (metadata only, no
tensors) and OUT/vectors.jsonl ({"text", "ids"} per line). Trained as Llama's tokenizer is:
BPE, byte fallback, digits split, the dummy prefix, no whitespace folding, the identity
normalizer; 1,000 pieces; deterministic for a given sentencepiece version (0.1.97 here).
"""
import argparse
import json
import pathlib
import random
import sys

import sentencepiece as spm

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gguf_writer as gw  # noqa: E402

FORTUNES = pathlib.Path("/usr/share/games/fortunes")

TESTS = [
    "Hello, world!", "hello world", " leading space", "two  spaces", "trailing space ", "\n", "a\nb\n\nc",
    "\ttab", "It's 2024: 3.14159 and 1,000,000.", "naïve café", "Straße", "日本語のテキスト", "中文字符",
    "emoji 🤗 and 👍🏽", "<s> is not a control token here </s>", "", " ", "   ", "x", "UPPER lower MiXeD",
    "don't can't won't", "e-mail: someone@example.com", "ŝ Ŝ ǆ", "\u00a0nbsp", "a" * 200, "the " * 50,
    "Q: Why did the chicken cross the road?\nA: To get to the other side.",
]


def gguf_metadata(model_file):
    """tokenizer.ggml.* of a SentencePiece model as llama.cpp's converter writes them."""
    sp = spm.SentencePieceProcessor(model_file=str(model_file))
    # llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 5 if sp.is_unused(i) else 1
             for i in range(sp.get_piece_size())]
    return [("tokenizer.ggml.model", gw.STRING, "llama"),
            ("tokenizer.ggml.tokens", gw.ARRAY, (gw.STRING, [sp.id_to_piece(i) for i in range(sp.get_piece_size())])),
            ("tokenizer.ggml.scores", gw.ARRAY, (gw.F32, [sp.get_score(i) for i in range(sp.get_piece_size())])),
            ("tokenizer.ggml.token_type", gw.ARRAY, (gw.I32, types)),
            ("tokenizer.ggml.bos_token_id", gw.U32, sp.bos_id()), ("tokenizer.ggml.eos_token_id", gw.U32, sp.eos_id()),
            ("tokenizer.ggml.unknown_token_id", gw.U32, sp.unk_id()), ("tokenizer.ggml.add_bos_token", gw.BOOL, True),
            ("tokenizer.ggml.add_space_prefix", gw.BOOL, True)]


def training_text():
    lines = []
    for f in sorted(FORTUNES.iterdir()):
        if f.is_file() and not f.is_symlink() and not f.suffix:
            lines += [line for line in f.read_text(encoding="utf-8", errors="ignore").splitlines() if line and line != "%"]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=1000)
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = training_text()
    corpus = out / "corpus.tmp"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(out / "tokenizer"), model_type="bpe", vocab_size=args.vocab,
        byte_fallback=True, split_digits=True, add_dummy_prefix=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", character_coverage=0.9995, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        num_threads=2, input_sentence_size=200000, shuffle_input_sentence=False, minloglevel=2)
    corpus.unlink()
    (out / "tokenizer.vocab").unlink()
    sp = spm.SentencePieceProcessor(model_file=str(out / "tokenizer.model"))
    meta = [("general.architecture", gw.STRING, "llama"), ("general.name", gw.STRING, "sentencepiece fixture")]
    gw.write_gguf(out / "tokenizer.gguf", meta + gguf_metadata(out / "tokenizer.model"), [])
    rng = random.Random(7)
    held = [line for line in lines[-2000:] if line.strip()]
    texts = TESTS + rng.sample(held, 60)
    with open(out / "vectors.jsonl", "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t, "ids": sp.encode(t)}, ensure_ascii=False) + "\n")
    print(f"wrote {out}: {sp.get_piece_size()} pieces, {len(texts)} vectors")


if __name__ == "__main__":
    main()
