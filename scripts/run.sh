#!/usr/bin/env bash
# The main job: installs what is missing, builds examples/generate and runs it on GPT-2 124M
# (config.json, model.safetensors, vocab.json, merges.txt from the Hugging Face `gpt2`
# repository, downloaded into models/gpt2 when missing). Where the download cannot happen
# (offline), it says so and runs on the bundled small test model instead, whose weights are
# random. Arguments go to generate (default: a short prompt); see `build/examples/generate --help`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/cuda-env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --parallel "$(nproc)" --target generate >/dev/null

model=models/gpt2
download() {
  local base=https://huggingface.co/openai-community/gpt2/resolve/main partial=models/gpt2.partial
  command -v curl >/dev/null || return 1
  mkdir -p "$partial"
  for f in config.json vocab.json merges.txt model.safetensors; do
    [ -s "$partial/$f" ] || curl -fsSL --retry 2 --connect-timeout 15 -o "$partial/$f" "$base/$f" || return 1
  done
  mv "$partial" "$model"
}
if [ ! -f "$model/model.safetensors" ]; then
  echo "Downloading GPT-2 124M into $model ..." >&2
  if ! download; then
    echo "Could not download GPT-2 (offline?). Falling back to the bundled small test model." >&2
    tools/make_gpt2_fixtures.sh build/gpt2_fixtures >/dev/null
    model=build/gpt2_fixtures/vocab
    echo "WARNING: $model has RANDOM weights (2 layers, GPT-2's tokenizer): the text will be gibberish." >&2
  fi
fi
if [ $# -eq 0 ]; then
  set -- --prompt "Hello, my name is" --max-new-tokens 40 --seed 42
fi
exec build/examples/generate --model "$model" "$@"
