#!/usr/bin/env bash
# Encode speed of tessera's tokenizer and of js-tiktoken (under node) on the same ~1 MB text,
# in one run. Needs a build (scripts/test.sh) and node; installs js-tiktoken into tools/.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=build/tokenizer_corpus.txt
python3 tools/make_tokenizer_corpus.py "$corpus"
[ -d tools/node_modules/js-tiktoken ] || npm install --prefix tools --silent
build/bench/bench_tokenizer --corpus "$corpus" --model tests/data/gpt2 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true
node tools/tiktoken_speed.mjs "$corpus"
