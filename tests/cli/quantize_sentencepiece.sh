#!/bin/sh
# quantize takes a directory's tokenizer.model for a "llama" model, as llama.cpp's converter does,
# and writes it as tokenizer.ggml.* "llama": the GGUF file's ids must equal Google's
# sentencepiece's for every text of tests/data/sentencepiece/vectors.jsonl.
#   quantize_sentencepiece.sh QUANTIZE TOKENIZE MODEL_DIR DATA_DIR
set -eu
quantize=$1 tokenize=$2 model=$3 data=$4
d=$(mktemp -d /tmp/tessera_spm.XXXXXX)
trap 'rm -rf "$d"' EXIT
cp "$model/config.json" "$model/model.safetensors" "$data/sentencepiece/tokenizer.model" "$d/"
"$quantize" --model "$d" --weights q8_0 --out "$d/m.gguf" >/dev/null
vectors="$data/sentencepiece/vectors.jsonl"
sed 's/^{"text": \(.*\), "ids": \[.*$/\1/' "$vectors" | "$tokenize" --model "$d/m.gguf" --jsonl > "$d/ours"
sed 's/^.*"ids": \(\[.*\]\)}$/\1/' "$vectors" | tr -d ' ' > "$d/theirs"
echo "$(wc -l < "$d/theirs") texts"
cmp "$d/ours" "$d/theirs"
echo same-as-sentencepiece
