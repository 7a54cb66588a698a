#!/usr/bin/env bash
# tessera against llama.cpp on the same GGUF files: greedy continuations of a prompt given as
# token ids, and each one's all-position logits of that prompt against a float64 reference.
#
#   bench/compare_llama_cpp_greedy.sh LLAMA_CPP_DIR IDS STEPS FILE.gguf[=REFERENCE.f64] ...
#
# LLAMA_CPP_DIR: a llama.cpp tree built as bench/compare_llama_cpp.sh says (build/bin/libllama.so);
# bench/llama_cpp_ids.cpp is compiled against it here. IDS: the prompt, comma-separated ids.
# STEPS: greedy steps (both keep going past an end-of-text id). REFERENCE: float64 logits
# [T][V] of the prompt (tools/llama_reference.py logits, over the weights the file holds).
# Prints one table row per file: whether the greedy ids are equal (else where they first
# differ), and each program's largest |logit - reference| over all positions.
set -euo pipefail
if [[ $# -lt 4 ]]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
llama_dir=$1 ids=$2 steps=$3
shift 3
build=${TESSERA_BUILD:-build}
py=${TESSERA_PYTHON:-/usr/bin/python3}  # any python3 with numpy
work=$(mktemp -d /tmp/compare-greedy.XXXXXX)
bin=$(realpath "$llama_dir/build/bin")
g++ -O2 -std=c++17 "$(dirname "$0")/llama_cpp_ids.cpp" -I "$llama_dir/include" -I "$llama_dir/ggml/include" -L "$bin" \
    -lllama -lggml -lggml-base -Wl,-rpath,"$bin" -o "$work/llama_cpp_ids"
echo "${ids//,/ }" >"$work/ids.txt"
echo "llama.cpp $(git -C "$llama_dir" rev-parse --short HEAD 2>/dev/null || echo '(no git)'); prompt $ids; $steps greedy steps"
echo
echo "| file | greedy ids | llama.cpp max abs vs reference | tessera max abs vs reference |"
echo "| --- | --- | --- | --- |"
for spec in "$@"; do
    file=${spec%%=*}
    reference=
    [[ $spec != *=* ]] || reference=${spec#*=}
    "$build/examples/generate" --model "$file" --prompt-ids "$ids" -n "$steps" --temperature 0 --ignore-eos 2>/dev/null |
        head -1 >"$work/tessera.json"
    "$work/llama_cpp_ids" "$file" "$ids" "$steps" "$work/llama.f32" 2>/dev/null >"$work/llama.json"
    "$build/examples/perplexity" --model "$file" --tokens-file "$work/ids.txt" --dump-logits "$work/tessera.f32" >/dev/null 2>&1
    "$py" - "$file" "$work" "$reference" <<'EOF'
import json, os, sys
import numpy as np
file, work, reference = sys.argv[1:]
tessera = json.load(open(os.path.join(work, "tessera.json")))
llama = json.load(open(os.path.join(work, "llama.json")))["tokens"]
if tessera == llama:
    ids = f"equal ({len(llama)} of {len(llama)})"
else:
    first = next((i for i, (a, b) in enumerate(zip(tessera, llama)) if a != b), min(len(tessera), len(llama)))
    ids = f"differ from step {first} (tessera {tessera[first:first + 3]}, llama.cpp {llama[first:first + 3]})"
cells = ["n/a", "n/a"]
if reference:
    want = np.fromfile(reference, "<f8")
    for i, name in enumerate(("llama.f32", "tessera.f32")):
        got = np.fromfile(os.path.join(work, name), "<f4").astype(np.float64)
        cells[i] = f"{np.abs(got - want.reshape(-1)[:got.size]).max():.2e}" if got.size == want.size else "shape differs"
print(f"| {os.path.basename(file)} | {ids} | {cells[0]} | {cells[1]} |")
EOF
done
rm -rf "$work"
