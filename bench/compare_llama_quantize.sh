#!/usr/bin/env bash
# tessera's quantize against llama.cpp's llama-quantize: each MODEL (a directory or a GGUF file)
# as an f32 GGUF file by tessera's quantize (what convert_hf_to_gguf.py writes), then both tools
# make each K-quant mix of that same file, compared tensor by tensor (types and bytes) by
# tools/gguf_tensors.py. The tests never need llama.cpp; bench/RESULTS.md records this.
#   bench/compare_llama_quantize.sh LLAMA_CPP_BUILD_DIR MODEL...   (LLAMA_CPP_BUILD_DIR/bin/llama-quantize)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
llama_quantize=${1:?usage: compare_llama_quantize.sh LLAMA_CPP_BUILD_DIR MODEL...}/bin/llama-quantize
shift
quantize=${QUANTIZE:-$here/build/examples/quantize}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for model in "$@"; do
  name=$(basename "$model")
  "$quantize" --model "$model" --weights f32 --out "$work/$name-f32.gguf" >/dev/null
  for mix in q4_k_m q5_k_m q6_k; do
    "$quantize" --model "$work/$name-f32.gguf" --weights $mix --out "$work/$name-tessera.gguf" >/dev/null
    "$llama_quantize" "$work/$name-f32.gguf" "$work/$name-llama.gguf" "${mix^^}" >"$work/log" 2>&1 ||
        { tail -5 "$work/log"; exit 1; }
    printf '%s %s: ' "$name" "$mix"
    /usr/bin/python3 "$here/tools/gguf_tensors.py" "$work/$name-tessera.gguf" "$work/$name-llama.gguf" | tail -n 4 || status=1
  done
done
exit $status
