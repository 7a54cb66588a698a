#!/usr/bin/env bash
# GGUF tokenizers against llama.cpp's: the same generated texts through tessera's tokenize and
# llama.cpp's llama_tokenize (bench/llama_cpp_tokenize.cpp, compiled here against a llama.cpp
# tree), on GGUF files of each tokenizer kind: Llama 3, Qwen2 and SmolLM-style byte-level BPE
# (quantize's files from build/llama_fixtures' *-bpe-tiny directories, tokenizer.ggml.pre named)
# and SentencePiece (the llama-spm-tiny fixture). Results in bench/RESULTS.md.
#   bench/compare_llama_cpp_tokenizer.sh LLAMA_CPP_DIR [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
llama_dir=$1
count=${2:-5000}
bin=$llama_dir/build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 bench/llama_cpp_tokenize.cpp -I "$llama_dir/include" -I "$llama_dir/ggml/include" -L "$bin" \
    -lllama -lggml -lggml-base -Wl,-rpath,"$bin" -o "$work/llama_cpp_tokenize"
for style in llama3 qwen2 smollm; do
  build/examples/quantize --model "build/llama_fixtures/$style-bpe-tiny" --weights f32 --out "$work/$style.gguf" >/dev/null
done
cp build/llama_fixtures/llama-spm-tiny-f32.gguf "$work/spm.gguf"
# Texts as tests/tokenizers/compare.mjs makes them (its generator, run without a reference).
/usr/bin/python3 - "$work/texts.jsonl" "$count" <<'PY'
import json, random, sys, unicodedata
rng = random.Random(1)
parts = [
    ["北京今天天气怎么样？", "自然语言处理", "東京の天気は晴れです。", "서울은 한국의 수도입니다.", "ひらがなカタカナ"],
    ["👍🏽", "👩‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "👨🏿‍💻", "😀", "❤️", "#️⃣"],
    ["e\u0301", "a\u0300\u0316", "नमस्ते", "ก\u0e34", "Å", "ﬁ", "Ǆ", "\u0338=", "\u200b", "\u200d"],
    [" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n ", "\u00a0", "\u3000", "\u2028", "\u0085", "\u000b", "\u000c", "   \n\t  "],
    ["0", "12", "123", "1234567", "٣٤٥", "１２３", "²", "½", "Ⅻ", "3.14159", "1,000,000"],
    ["int main() { return 0; }", "def f(x):\n    return x**2", "if (a && b || !c)", "<div class=\"x\">", "a->b"],
    ["'s", "'S", "'re", "'RE", "'Ll", "'ve", "'m", "'D", "'t", "don't", "I'M", "we'Re"],
    ["Hello", "world", "The", "quick", "brown", "tokenizer", "Ünïcödé", "naïve", "_word"],
    ["!", "?", "...", "--", "\"", "(", ")", "[", "]", "{", "}", "$", "€", "@", "#", "%", "^", "~", "`", "|"],
    ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|begin_of_text|>", "<s>", "</s>", "<tool_call>"],
]
def rand_cp():
    while True:
        cp = rng.choice([rng.randint(0x20, 0xFFFF), rng.randint(0x10000, 0x1FFFF), rng.randint(0x20000, 0x3FFFF)])
        if 0xD800 <= cp <= 0xDFFF or unicodedata.category(chr(cp)) in ("Cn", "Cs"):
            continue
        return chr(cp)
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for _ in range(int(sys.argv[2])):
        s = "".join(rand_cp() if rng.random() < 0.1 else rng.choice(rng.choice(parts)) for _ in range(rng.randint(1, 24)))
        f.write(json.dumps(s, ensure_ascii=False) + "\n")
PY
for model in llama3 qwen2 smollm spm; do
  "$work/llama_cpp_tokenize" "$work/$model.gguf" < "$work/texts.jsonl" > "$work/theirs.jsonl"
  build/examples/tokenize --model "$work/$model.gguf" --jsonl --allow-special < "$work/texts.jsonl" > "$work/ours.jsonl"
  /usr/bin/python3 - "$work/texts.jsonl" "$work/ours.jsonl" "$work/theirs.jsonl" "$model" <<'PY'
import json, sys
texts = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
ours = [json.loads(l) for l in open(sys.argv[2])]
theirs = [json.loads(l) for l in open(sys.argv[3])]
differ = [i for i in range(len(texts)) if ours[i] != theirs[i]]
print(f"{sys.argv[4]}: {len(texts)} texts, {len(texts) - len(differ)} identical ids, {len(differ)} differ")
for i in differ[:5]:
    print("  ", json.dumps(texts[i], ensure_ascii=True), "\n    tessera:  ", ours[i], "\n    llama.cpp:", theirs[i])
PY
done
