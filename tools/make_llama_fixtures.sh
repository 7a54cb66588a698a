#!/usr/bin/env bash
# Builds the Llama-family test fixtures into OUT (default build/llama_fixtures): random
# checkpoints of each architecture (llama, qwen2, qwen3) in Hugging Face's layout, the GGUF
# files llama.cpp's converter would write from them (f32, q8_0), and float64 reference logits
# from tools/llama_reference.py. Deterministic (fixed seeds); run by ctest as the fixture-setup
# test `llama_fixtures`.
#   apt-get install python3-numpy; tools/make_llama_fixtures.sh [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/llama_fixtures}
py=${TESSERA_PYTHON:-/usr/bin/python3}  # any python3 with numpy
ref="$py $here/llama_reference.py"
tokens=1,5,9,200,3,77,12,0,250,31,64,2,9,9,100,17,18,40,41,42
mkdir -p "$out"
echo "$tokens" > "$out/tokens.txt"
seed=1
for config in llama-tiny qwen2-tiny qwen3-tiny qwen2-yarn-tiny; do
  d=$out/$config
  seed=$((seed + 1))
  if [ ! -f "$d/logits.f64" ]; then
    $ref checkpoint --config "$config" --seed "$seed" --out "$d" >/dev/null
    $ref logits --model "$d" --tokens "$tokens" --out "$d/logits.f64" >/dev/null
  fi
  for fmt in f32 q8_0; do
    [ -f "$out/$config-$fmt.gguf" ] || $ref gguf --model "$d" --outtype "$fmt" --out "$out/$config-$fmt.gguf" >/dev/null
  done
  # the reference's greedy ids after the first four tokens, as generate --prompt-ids prints them
  [ -f "$d/greedy.txt" ] || $ref greedy --model "$d" --tokens 1,5,9,200 --steps 8 |
      $py -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["tokens"], separators=(",", ":")))' > "$d/greedy.txt"
  for fmt in bf16 q8_0 q4_0; do
    [ -f "$d/logits-$fmt.f64" ] || $ref logits --model "$d" --tokens "$tokens" --weights "$fmt" --out "$d/logits-$fmt.f64" >/dev/null
  done
done
# llama-quantize's K-quant mixes as the reference writes them (types per tensor as llama-quantize
# picks them, GGML's reference quantizers) and the logits of the weights each holds: of the
# 64-wide llama and qwen2 (every K type falls back: Q5_0, Q5_1, Q8_0) and a 256-wide llama.
d=$out/llama-256-tiny
[ -f "$d/logits.f64" ] || { $ref checkpoint --config llama-256-tiny --seed 12 --out "$d" >/dev/null &&
                            $ref logits --model "$d" --tokens "$tokens" --out "$d/logits.f64" >/dev/null; }
for config in llama-tiny qwen2-tiny llama-256-tiny; do
  for mix in q4_k_m q5_k_m q6_k; do
    [ -f "$out/$config-$mix.gguf" ] || $ref gguf --model "$out/$config" --outtype $mix --out "$out/$config-$mix.gguf" >/dev/null
    [ -f "$out/$config/logits-$mix.f64" ] || $ref logits --model "$out/$config" --tokens "$tokens" --weights $mix \
        --out "$out/$config/logits-$mix.f64" >/dev/null
  done
done
# The same llama checkpoint in bf16 safetensors (loaded as float).
[ -f "$out/llama-tiny-bf16/config.json" ] || $ref checkpoint --config llama-tiny --seed 2 --dtype BF16 --out "$out/llama-tiny-bf16" >/dev/null
[ -f "$out/llama-tiny-bf16/logits.f64" ] || $ref logits --model "$out/llama-tiny-bf16" --tokens "$tokens" --out "$out/llama-tiny-bf16/logits.f64" >/dev/null
# A llama of a SentencePiece vocabulary's size with that tokenizer (tests/data/sentencepiece), and
# the reference's greedy ids after BOS + sentencepiece's ids of "Hello, world!" (from vectors.jsonl).
d=$out/llama-spm-tiny
[ -f "$d/config.json" ] || $ref checkpoint --config llama-spm-tiny --seed 9 --out "$d" >/dev/null
[ -f "$out/llama-spm-tiny-f32.gguf" ] || $ref gguf --model "$d" --out "$out/llama-spm-tiny-f32.gguf" \
    --sentencepiece "$here/../tests/data/sentencepiece/tokenizer.model" >/dev/null
# its directory also holds that vocabulary as transformers' tokenizer.json (tests/data/tokenizer_json/llama2)
cp "$here/../tests/data/tokenizer_json/llama2/tokenizer.json" "$here/../tests/data/tokenizer_json/llama2/tokenizer_config.json" "$d/"
[ -f "$d/greedy.txt" ] || $ref greedy --model "$d" --tokens 1,358,458,917,936,685,962 --steps 8 |
    $py -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["tokens"], separators=(",", ":")))' > "$d/greedy.txt"
# Llama 3, Qwen2 and SmolLM-style checkpoints of tests/data/tokenizer_json's vocabularies, with
# that tokenizer.json, and the reference's greedy ids after the prompt "Hello, world! 12345" as
# the fixture tool's own BPE encodes it (BOS first where the file's template says).
for style in llama3 qwen2 smollm; do
  d=$out/$style-bpe-tiny
  [ -f "$d/config.json" ] || $ref checkpoint --config "$style-bpe-tiny" --seed 11 --out "$d" >/dev/null
  cp "$here/../tests/data/tokenizer_json/$style/tokenizer.json" "$here/../tests/data/tokenizer_json/$style/tokenizer_config.json" "$d/"
  if [ ! -f "$d/greedy.txt" ]; then
    prompt=$($py "$here/make_tokenizer_json_fixtures.py" --encode-prompt "$d" "Hello, world! 12345")
    echo "$prompt" | tr ',' '\n' | wc -l | tr -d ' ' > "$d/prompt_tokens.txt"
    $ref greedy --model "$d" --tokens "$prompt" --steps 8 |
        $py -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["tokens"], separators=(",", ":")))' > "$d/greedy.txt"
  fi
done
# The llama checkpoint again in three shards (model.safetensors.index.json): the same weights.
[ -f "$out/llama-tiny-sharded/config.json" ] || $ref checkpoint --config llama-tiny --seed 2 --shards 3 --out "$out/llama-tiny-sharded" >/dev/null
# The trained Llama (tests/data/fortunes-llama): its reference logits, over its F16 weights.
[ -f "$out/fortunes-llama-logits.f64" ] || $ref logits --model "$here/../tests/data/fortunes-llama" --tokens "$tokens" \
    --out "$out/fortunes-llama-logits.f64" >/dev/null
# The trained Llama-family fixtures with tokenizers of their own (tests/data/fortunes-{qwen2,
# smollm,llama2}): the prompt's ids by implementations that are not tessera's (the fixture tool's
# BPE for tokenizer.json, Google's sentencepiece for Llama 2's tokenizer.model, BOS first), and
# the reference's greedy ids after it, over the F16 weights.
prompt_text="Q: What is the meaning of life?"
for name in qwen2 smollm llama2; do
  src=$here/../tests/data/fortunes-$name
  d=$out/trained-$name
  mkdir -p "$d"
  [ -f "$d/greedy.txt" ] && continue
  if [ -f "$src/tokenizer.model" ]; then
    prompt=$($py -c 'import sentencepiece, sys; sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1]); print(",".join(map(str, [sp.bos_id()] + sp.encode(sys.argv[2]))))' "$src/tokenizer.model" "$prompt_text")
  else
    prompt=$($py "$here/make_tokenizer_json_fixtures.py" --encode-prompt "$src" "$prompt_text")
  fi
  echo "$prompt" | tr ',' '\n' | wc -l | tr -d ' ' > "$d/prompt_tokens.txt"
  $ref greedy --model "$src" --tokens "$prompt" --steps 16 |
      $py -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["tokens"], separators=(",", ":")))' > "$d/greedy.txt"
done
# Files that say what tessera does not run: each must be refused naming the key.
bad() {  # name --set KEY=TYPE:VALUE
  local name=$1
  shift
  [ -f "$out/bad/$name.gguf" ] || $ref gguf --model "$out/llama-tiny" --out "$out/bad/$name.gguf" "$@" >/dev/null
}
mkdir -p "$out/bad"
bad moe --set llama.expert_count=u32:8
bad sliding-window --set llama.attention.sliding_window=u32:16
bad longrope --set llama.rope.scaling.type=str:longrope --set llama.rope.scaling.factor=f32:4
bad yarn-log-multiplier --set llama.rope.scaling.type=str:yarn --set llama.rope.scaling.factor=f32:4 \
    --set llama.rope.scaling.yarn_log_multiplier=f32:0.1
bad partial-rope --set llama.rope.dimension_count=u32:8
bad falcon --set general.architecture=str:falcon
bad heads --set llama.attention.head_count_kv=u32:3
