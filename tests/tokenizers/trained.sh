#!/usr/bin/env bash
# A tokenizer train_tokenizer writes loads in Hugging Face's JavaScript tokenizers and encodes
# as tessera does: trained on the bundled held-out fortunes (tests/data/fortunes-gpt2) with each
# pre-tokenizer, then compared on 2,000 generated texts by compare.mjs.
#   trained.sh TRAIN_TOKENIZER TOKENIZE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for pre in gpt2 llama3 qwen2 smollm; do
  "$1" --input "$here/../data/fortunes-gpt2/heldout.txt" --out "$out/$pre" --vocab-size 1200 --pre "$pre" \
       --special "<|endoftext|>" --special "<|im_start|>" --special "<|im_end|>"
  node "$here/compare.mjs" "$2" "$out/$pre" 2000 7
done
