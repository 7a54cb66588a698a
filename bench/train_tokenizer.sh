#!/usr/bin/env bash
# The BPE trainer, measured (bench/RESULTS.md):
#  1. speed: a 10 MB natural-text corpus (Debian's fortunes in English and Chinese, then the
#     copyright files of /usr/share/doc, in name order) into a 32,000-token vocabulary, 2 threads;
#  2. the walk-through's point: a vocabulary trained on Chinese text (Debian's fortunes-zh:
#     chinese, tang300, song100; GPL-3.0+, used here only as training data, never committed)
#     against GPT-2's English vocabulary, in characters per token on the 5% of its entries held
#     out of training (every 20th), with the same pre-tokenizer (GPT-2's).
# Needs a build (build/examples) and Debian's fortunes, fortunes-zh.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/examples
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fortunes=/usr/share/games/fortunes
strip_ansi() { sed -e 's/\x1b\[[0-9;]*m//g'; }

# 1. Speed.
{
  for f in $(ls "$fortunes" | grep -v '\.dat$' | grep -v '\.u8$' | sort); do
    [ -f "$fortunes/$f" ] && [ ! -L "$fortunes/$f" ] && strip_ansi < "$fortunes/$f"
  done
  find /usr/share/doc -name copyright -type f | sort | xargs cat
} 2>/dev/null | head -c 10485760 | iconv -f UTF-8 -t UTF-8 -c > "$work/corpus.txt" || true  # head ends the pipe early
echo "corpus: $(wc -c < "$work/corpus.txt") bytes"
/usr/bin/time -f "train_tokenizer: %e s wall, %M KB peak" "$bin/train_tokenizer" --input "$work/corpus.txt" \
  --out "$work/speed" --vocab-size 32000 --pre llama3 --special "<|endoftext|>" --threads 2

# 2. Chinese.
cat "$fortunes/chinese" "$fortunes/tang300" "$fortunes/song100" | strip_ansi > "$work/zh-all.txt"
/usr/bin/python3 - "$work" <<'PY'
import pathlib, sys
work = pathlib.Path(sys.argv[1])
entries = [e.strip("\n") for e in work.joinpath("zh-all.txt").read_text(encoding="utf-8").split("\n%\n") if e.strip()]
train = [e for i, e in enumerate(entries) if i % 20 != 19]
held = [e for i, e in enumerate(entries) if i % 20 == 19]
work.joinpath("zh-train.txt").write_text("\n%\n".join(train) + "\n", encoding="utf-8")
work.joinpath("zh-heldout.txt").write_text("\n%\n".join(held) + "\n", encoding="utf-8")
print(f"fortunes-zh: {len(entries)} entries, {len(train)} for training, {len(held)} held out")
PY
"$bin/train_tokenizer" --input "$work/zh-train.txt" --out "$work/zh" --vocab-size 32000 --pre gpt2 --special "<|endoftext|>"
for model in tests/data/gpt2 "$work/zh"; do
  "$bin/tokenize" --model "$model" < "$work/zh-heldout.txt" > "$work/ids.json"
  /usr/bin/python3 - "$work/zh-heldout.txt" "$work/ids.json" "$model" <<'PY'
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
ids = json.load(open(sys.argv[2]))
cjk = sum(1 for c in text if "\u4e00" <= c <= "\u9fff")
print(f"{sys.argv[3]}: {len(text)} characters ({cjk} CJK) -> {len(ids)} tokens: {len(text) / len(ids):.2f} characters per token")
PY
done
