#!/bin/sh
# A model on text through its own tokenizer, against references that are not tessera's: the
# prompt's ids must number WANT/prompt_tokens.txt (as the reference tokenizer gives them) and
# the greedy ids must be WANT/greedy.txt (the float64 reference's). With `gguf`, the model goes
# through quantize first (f32 weights, its tokenizer as tokenizer.ggml.* metadata).
#   text_through_tokenizer.sh GENERATE QUANTIZE MODEL PROMPT STEPS WANT [gguf]
set -u
generate=$1 quantize=$2 model=$3 prompt=$4 steps=$5 want=$6 via=${7:-}
if [ "$via" = gguf ]; then
  f=$(mktemp -u /tmp/tessera_text.XXXXXX.gguf)
  trap 'rm -f "$f"' EXIT
  "$quantize" --model "$model" --weights f32 --out "$f" >/dev/null || exit 1
  model=$f
fi
out=$("$generate" --model "$model" -p "$prompt" -n "$steps" --temperature 0 --ignore-eos --json 2>/dev/null)
echo "$out"
echo "$out" | grep -q "\"prompt_tokens\":$(cat "$want/prompt_tokens.txt")," &&
  echo "$out" | grep -qF "\"tokens\":$(cat "$want/greedy.txt")" && echo same-as-reference
