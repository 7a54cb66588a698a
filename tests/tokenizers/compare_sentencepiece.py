#!/usr/bin/python3
"""Google's sentencepiece (Debian python3-sentencepiece) as the reference for tessera's
SentencePiece BPE: generated texts, encoded by both, must give the same ids, through the
tokenizer.model and through the same vocabulary as GGUF metadata; and tessera's decode must give
the text back where SentencePiece is lossless (identity normalizer, byte fallback).

  /usr/bin/python3 tests/tokenizers/compare_sentencepiece.py TOKENIZE_BINARY DIR [COUNT] [SEED]

DIR holds tokenizer.model and tokenizer.gguf (tests/data/sentencepiece). The texts mix CJK, emoji
with ZWJ sequences and skin tones, combining marks, runs of every kind of white space, digits
of many scripts, code, control tokens' texts (which stay text), and random code points of every
plane (surrogates and noncharacters aside). Exits 1 on any difference.
"""
import json
import pathlib
import random
import subprocess
import sys

import sentencepiece

PARTS = [
    ["北京今天天气怎么样？", "自然语言处理", "東京の天気は晴れです。", "서울은 한국의 수도입니다.", "ひらがなカタカナ", "春眠不觉晓"],
    ["👍🏽", "👩‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "👨🏿‍💻", "😀", "❤️", "🧑🏻‍🤝‍🧑🏿", "#️⃣"],
    ["e\u0301", "a\u0300\u0316", "नमस्ते", "ก\u0e34", "Å", "A\u030a", "\u212b", "ﬁ", "Ǆ", "\u200b", "\u200d", "\u0301"],
    [" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n ", "\u00a0", "\u3000", "\u2028", "\u0085", "\u000b", "\t \t", "   \n\t  "],
    ["0", "12", "123", "1234567", "٣٤٥", "１２３", "²", "½", "3.14159", "1,000,000", "v2.0"],
    ["int main() { return 0; }", "def f(x):\n    return x**2", "if (a && b || !c)", "<div class=\"x\">", "a->b", "x += 1;"],
    ["Hello", "world", "The", "quick", "brown", "fox", "tokenizer", "Ünïcödé", "naïve", "don't", "I'M", "_word"],
    ["!", "?", "...", "--", "\"", "(", ")", "[", "]", "{", "}", "$", "€", "@", "#", "%", "^", "&", "*", "~", "`", "|"],
    ["<s>", "</s>", "<unk>", "<0x41>", "▁", "▁▁"],
]


def random_code_point(rng):
    while True:
        plane = rng.random()
        cp = (rng.randint(0x20, 0xFFFF) if plane < 0.6 else rng.randint(0x10000, 0x1FFFF) if plane < 0.85
              else rng.randint(0x20000, 0x3FFFF) if plane < 0.97 else rng.randint(0xE0000, 0x10FFFF))
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def texts(count, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(0, 24)):
            k = rng.randrange(len(PARTS) + 1)
            pieces.append(random_code_point(rng) if k == len(PARTS) else rng.choice(PARTS[k]))
        out.append("".join(pieces))
    return out


def tessera(binary, model, lines, *flags):
    run = subprocess.run([binary, "--model", str(model), "--jsonl", *flags], input="".join(lines).encode(),
                         capture_output=True, check=True)
    return run.stdout.decode().split("\n")[:-1]  # not splitlines(): U+2028 and U+0085 stay inside a line


def main():
    binary, directory = sys.argv[1], pathlib.Path(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    sp = sentencepiece.SentencePieceProcessor(model_file=str(directory / "tokenizer.model"))
    all_texts = texts(count, seed)
    theirs = [sp.encode(t) for t in all_texts]
    lines = [json.dumps(t, ensure_ascii=False) + "\n" for t in all_texts]
    differ = 0
    for model in (directory, directory / "tokenizer.gguf"):  # tokenizer.model, then the GGUF metadata
        for text, ours, want in zip(all_texts, tessera(binary, model, lines), theirs):
            if json.loads(ours) != want:
                differ += 1
                if differ <= 5:
                    print("DIFFERENT ids through", model, "for", json.dumps(text, ensure_ascii=False), "\n  tessera:", ours,
                          "\n  sentencepiece:", want)
    decoded = tessera(binary, directory, [json.dumps(ids) + "\n" for ids in theirs], "--decode")
    lossy = 0
    for text, back, ids in zip(all_texts, decoded, theirs):
        if json.loads(back) != sp.decode(ids):
            lossy += 1
            if lossy <= 5:
                print("decode differs for", json.dumps(text, ensure_ascii=False), "->", back)
    print(f"{directory}: {count} texts, through tokenizer.model and tokenizer.gguf: {2 * count - differ} of {2 * count} "
          f"identical ids, {differ} differ; decode equals sentencepiece's for {count - lossy}")
    sys.exit(1 if differ or lossy else 0)


if __name__ == "__main__":
    main()
