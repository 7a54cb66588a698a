#!/usr/bin/env bash
# Builds the GPT-2 test fixtures into OUT (default build/gpt2_fixtures): random checkpoints in
# Hugging Face's layout and their float64 reference results from tools/gpt2_reference.py.
# Deterministic (fixed seeds); run by ctest as the fixture-setup test `gpt2_fixtures`.
#   apt-get install python3-numpy; tools/make_gpt2_fixtures.sh [OUT] [--with-124m]
#   (TESSERA_PYTHON=python3 picks another interpreter with numpy, e.g. on a GPU machine)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/gpt2_fixtures}
py=${TESSERA_PYTHON:-/usr/bin/python3}  # any python3 with numpy
ref="$py $here/gpt2_reference.py"
tokens=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
mkdir -p "$out"
make() {  # name config seed [extra checkpoint flags]
  local name=$1 config=$2 seed=$3
  shift 3
  [ -f "$out/$name/logits.f64" ] && return
  $ref checkpoint --config "$config" --seed "$seed" --out "$out/$name" "$@" >/dev/null
  $ref logits --model "$out/$name" --tokens "$tokens" --out "$out/$name/logits.f64"
}
make tiny tiny 1
make tiny-f16 tiny 1 --dtype F16
make tiny-bf16 tiny 1 --dtype BF16
make tiny-prefixed tiny 2 --prefix transformer. --lm-head
make odd-heads odd-heads 4
make vocab vocab 5
make free free 6  # a shape with no static type: runs as GPT2<GPT2Dynamic, B>
make wide wide 7  # rows of 256, for a Q6_K embedding
# tiny with its matrices stored as bf16, q8_0, q4_0: the reference logits of those weights
for fmt in bf16 q8_0 q4_0; do
  [ -f "$out/tiny/logits-$fmt.f64" ] || $ref logits --model "$out/tiny" --tokens "$tokens" --weights "$fmt" \
      --out "$out/tiny/logits-$fmt.f64"
done
# and vocab (50,257 x 32: its embedding is quantized in several chunks as it loads)
[ -f "$out/vocab/logits-q8_0.f64" ] || $ref logits --model "$out/vocab" --tokens "$tokens" --weights q8_0 \
    --out "$out/vocab/logits-q8_0.f64"
cp "$here/../tests/data/gpt2/vocab.json" "$here/../tests/data/gpt2/merges.txt" "$out/vocab/"  # a complete model directory
mkdir -p "$out/tiny-with-gpt2-tokenizer"  # a tokenizer that does not belong to the model
cp "$out/tiny/config.json" "$out/tiny/model.safetensors" "$out/vocab/vocab.json" "$out/vocab/merges.txt" \
   "$out/tiny-with-gpt2-tokenizer/"
# The same checkpoints as GGUF files in llama.cpp's layout, written by an independent converter
# (tools/hf_to_gguf.py): tiny in each format, tiny-f16 as F16, tiny-prefixed (an untied head:
# output.weight), vocab with GPT-2's tokenizer in its metadata.
mkdir -p "$out/gguf"
gguf() {  # model outtype file
  [ -f "$out/gguf/$3" ] || $py "$here/hf_to_gguf.py" "$out/$1" "$out/gguf/$3" --outtype "$2" >/dev/null
}
for fmt in f32 bf16 q8_0 q4_0; do gguf tiny $fmt tiny-$fmt.gguf; done
gguf tiny-f16 f16 tiny-f16.gguf
gguf tiny-prefixed f32 tiny-prefixed.gguf
gguf vocab f32 vocab-f32.gguf
# wide as llama-quantize writes a Q4_0 file: the embedding in Q6_K; its reference logits
[ -f "$out/gguf/wide-q4_0-q6_k.gguf" ] || $py "$here/hf_to_gguf.py" "$out/wide" "$out/gguf/wide-q4_0-q6_k.gguf" \
    --outtype q4_0 --embedding-type q6_k >/dev/null
[ -f "$out/wide/logits-q4_0-q6_k.f64" ] || $ref logits --model "$out/wide" --tokens "$tokens" --weights q4_0 \
    --embedding q6_k --out "$out/wide/logits-q4_0-q6_k.f64"
gguf vocab q8_0 vocab-q8_0.gguf
# wide in the K-quants (read widened to float): Q4_K with a Q6_K embedding (as a Q4_K_M file
# keeps its output), and Q5_K; their reference logits over the weights the files hold
[ -f "$out/gguf/wide-q4_k-q6_k.gguf" ] || $py "$here/hf_to_gguf.py" "$out/wide" "$out/gguf/wide-q4_k-q6_k.gguf" \
    --outtype q4_k --embedding-type q6_k >/dev/null
[ -f "$out/wide/logits-q4_k-q6_k.f64" ] || $ref logits --model "$out/wide" --tokens "$tokens" --weights q4_k \
    --embedding q6_k --out "$out/wide/logits-q4_k-q6_k.f64"
gguf wide q5_k wide-q5_k.gguf
# llama-quantize's K-quant mixes of an eight-layer model, and their reference logits
make wide-8 wide-8 8
for mix in q4_k_m q5_k_m q6_k; do
  gguf wide-8 $mix wide-8-$mix.gguf
  [ -f "$out/wide-8/logits-$mix.f64" ] || $ref logits --model "$out/wide-8" --tokens "$tokens" --weights $mix \
      --out "$out/wide-8/logits-$mix.f64"
done
# tiny (64 wide) in q4_k_m: llama-quantize's fallbacks (Q5_0, Q5_1, Q8_0) instead of the K types
[ -f "$out/tiny/logits-q4_k_m.f64" ] || $ref logits --model "$out/tiny" --tokens "$tokens" --weights q4_k_m \
    --out "$out/tiny/logits-q4_k_m.f64"
[ -f "$out/wide/logits-q5_k.f64" ] || $ref logits --model "$out/wide" --tokens "$tokens" --weights q5_k \
    --out "$out/wide/logits-q5_k.f64"
# Greedy continuations: 64 steps, or as many as the context leaves after the 3-token prompt.
greedy() {  # name steps
  local f="$out/$1/greedy.json"
  [ -f "$f" ] || { $ref greedy --model "$out/$1" --tokens 1,2,3 --steps "$2" > "$f.tmp" && mv "$f.tmp" "$f"; }
}
greedy tiny 64
greedy odd-heads 61
greedy free 64
# The generator's end-to-end test: "Hello, my name is" in GPT-2 ids, 20 greedy steps.
f="$out/vocab/greedy.json"
[ -f "$f" ] || { $ref greedy --model "$out/vocab" --tokens 15496,11,616,1438,318 --steps 20 > "$f.tmp" && mv "$f.tmp" "$f"; }
if [ "${2:-}" = "--with-124m" ]; then
  make gpt2-124m gpt2 3
fi
echo "$tokens" > "$out/tokens.txt"
echo "fixtures in $out"
