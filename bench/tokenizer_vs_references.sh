#!/usr/bin/env bash
# Encode speed of tessera's tokenizers and of Hugging Face's JavaScript tokenizers (under node)
# on the same ~1 MB mixed English / code / CJK text and the same tokenizer.json files
# (tests/data/tokenizer_json), one thread, in one run. Needs a build and `npm ci --prefix tests/tokenizers`.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=build/tokenizer_corpus.txt
python3 tools/make_tokenizer_corpus.py "$corpus" >/dev/null
for style in gpt2 llama3 qwen2 smollm; do
  dir=tests/data/tokenizer_json/$style
  echo -n "tessera $dir: "
  taskset -c 0 build/bench/bench_tokenizer --corpus "$corpus" --model "$dir" --benchmark_filter=BM_Encode \
      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null | grep median | grep -o "MB/s=[0-9.]*"
  taskset -c 0 node tests/tokenizers/speed.mjs "$dir" "$corpus" 5
done
