#!/usr/bin/env bash
# tessera against llama.cpp, side by side in one run, on the same GGUF files.
#
#   bench/compare_llama_cpp.sh LLAMA_CPP_DIR MODEL [WORK_DIR]
#
# LLAMA_CPP_DIR: a llama.cpp source tree whose tools are built in LLAMA_CPP_DIR/build/bin
#   (cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build --target llama-bench llama-quantize)
# MODEL: a GPT-2 directory (config.json, model.safetensors, vocab.json, merges.txt), or an f32
# .gguf of any architecture both run (a Llama-family one: tools/llama_reference.py gguf-random).
# WORK_DIR: where the GGUF files go (default: a fresh folder under /tmp).
#
# The f32 GGUF comes from tessera's examples/quantize (the same bytes as llama.cpp's
# convert_hf_to_gguf.py would write for the matrices; that converter needs Python's transformers);
# bf16, q8_0 and q4_0 come from llama.cpp's own llama-quantize, and both programs run exactly
# those files. Each of ROUNDS rounds runs, per format, tessera's bench_gpt2 and llama-bench back
# to back, in alternating order: the two runs of a pair are seconds apart, so each round's
# ratio compares the two tools in the same minute of a machine whose speed drifts (shared
# VMs here moved 30% between minutes). The table shows the medians of the tokens/s over the
# rounds, and the median and range of the rounds' ratios.
# Both time warm runs: llama-bench runs each test once untimed before its repetitions, and
# bench_gpt2 each prompt (--warm-up yes, its default); a CPU whose last-level cache holds a
# model's weights times cold and warm prompts very differently.
# On a CPU with AMX, build llama.cpp with -DGGML_NATIVE=OFF and the AVX-512 flags
# (-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON ...) and -DGGML_AMX_INT8=OFF:
# 80fb11a's AMX path crashed on Q8_0 files here (segmentation fault in llama-bench).
# Environment: TESSERA_BUILD (default build), THREADS (2), ROUNDS (3), PP (16,64,512), TG (128),
# FORMATS (f32 bf16 q8_0 q4_0), CTX (bench_gpt2's --ctx-size for a Llama-family file, whose KV
# cache is allocated for its whole context: e.g. 4608; llama-bench sizes its own), DEPTH
# (llama-bench's -d and bench_gpt2's --depth: pp and tg after that many positions in the cache),
# KV (bench_gpt2's --kv-cache: f32, its default, bf16 or q8_0; llama-bench keeps its default f16
# cache, the size of bf16).
# BATCH=1,2,4,8,16 measures aggregate decode instead: that many sequences decoded together, each
# after a 16-token prompt, TG steps (tessera's bench_gpt2 --batch against llama-batched-bench's
# S_TG); it writes batched.csv and batched.svg (bench/plot_batched.py) into WORK_DIR.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
llama_dir=$1
model=$2
work=${3:-$(mktemp -d /tmp/compare-llama-cpp.XXXXXX)}
build=${TESSERA_BUILD:-build}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
pp=${PP:-16,64,512}
tg=${TG:-128}
read -r -a formats <<<"${FORMATS:-f32 bf16 q8_0 q4_0}"
batch=${BATCH:-}
depth=${DEPTH:-0}
tessera_ctx=()
[[ -z ${CTX:-} ]] || tessera_ctx=(--ctx-size "$CTX")
[[ -z ${KV:-} ]] || tessera_ctx+=(--kv-cache "$KV")

llama_bench=$llama_dir/build/bin/llama-bench
llama_quantize=$llama_dir/build/bin/llama-quantize
llama_batched=$llama_dir/build/bin/llama-batched-bench
[[ -z $batch ]] || llama_bench=$llama_batched
for tool in "$llama_bench" "$llama_quantize" "$build/bench/bench_gpt2" "$build/examples/quantize"; do
    [[ -x $tool ]] || { echo "compare_llama_cpp: $tool is missing; build it first" >&2; exit 2; }
done
mkdir -p "$work"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) cores; llama.cpp $(git -C "$llama_dir" rev-parse --short HEAD 2>/dev/null || echo '(no git)')"

# The files: f32 by tessera's quantize from a GPT-2 directory (or MODEL itself, a .gguf), the
# rest by llama-quantize from that f32.
f32=$work/model-f32.gguf
if [[ $model == *.gguf ]]; then
    [[ -e $f32 ]] || ln -s "$(realpath "$model")" "$f32"
else
    [[ -s $f32 ]] || "$build/examples/quantize" --model "$model" --out "$f32" --weights f32 >/dev/null
fi
files=()
for f in "${formats[@]}"; do
    file=$work/model-$f.gguf
    if [[ $f != f32 && ! -s $file ]]; then
        "$llama_quantize" "$f32" "$file" "${f^^}" >"$work/quantize-$f.log" 2>&1 ||
            { echo "compare_llama_cpp: llama-quantize to $f failed, see $work/quantize-$f.log" >&2; exit 1; }
    fi
    files+=("$file")
done

# run_tessera ROUND FILE and run_llama ROUND FILE append to WORK_DIR/tessera-ROUND.txt and
# llama-ROUND.jsonl (each jsonl row tagged with its file).
if [[ -n $batch ]]; then
    most=$(tr ',' '\n' <<<"$batch" | sort -n | tail -1)
    run_tessera() {
        "$build/bench/bench_gpt2" --model "$2" --threads "$threads" --batch "$batch" --tg "$tg" --rounds 2 "${tessera_ctx[@]}" \
            >>"$work/tessera-batch-$1.txt"
    }
    run_llama() {
        "$llama_batched" -m "$2" -t "$threads" -c $((most * (16 + tg))) -b 2048 -ub 512 -npp 16 -ntg "$tg" \
            -npl "$batch" --output-format jsonl 2>>"$work/llama-batch-$1.log" |
            grep '^{' | sed "s|^{|{\"file\": \"$2\", |" >>"$work/llama-batch-$1.jsonl"
    }
    kind=-batch
else
    run_tessera() {
        "$build/bench/bench_gpt2" --model "$2" --threads "$threads" --pp "$pp" --tg "$tg" --rounds 2 --depth "$depth" \
            "${tessera_ctx[@]}" >>"$work/tessera-$1.txt"
    }
    run_llama() {
        "$llama_bench" -m "$2" -t "$threads" -p "$pp" -n "$tg" -d "$depth" -r 2 -o jsonl 2>>"$work/llama-$1.log" |
            sed "s|^{|{\"file\": \"$2\", |" >>"$work/llama-$1.jsonl"
    }
    kind=
fi
for ((r = 1; r <= rounds; ++r)); do
    echo "round $r of $rounds"
    : >"$work/tessera$kind-$r.txt"
    : >"$work/llama$kind-$r.jsonl"
    for i in "${!files[@]}"; do
        if (((r + i) % 2)); then run_tessera "$r" "${files[$i]}"; run_llama "$r" "${files[$i]}"
        else run_llama "$r" "${files[$i]}"; run_tessera "$r" "${files[$i]}"; fi
    done
done

python3 - "$work" "$rounds" "$batch" "${files[@]}" <<'EOF'
import json, os, re, statistics, sys
work, rounds, batch, files = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
kind = "-batch" if batch else ""
tessera, llama = {}, {}  # (file, test) -> {round: tokens/s}; test: "pp16", "tg128" or a sequence count
for r in range(1, rounds + 1):
    current = None
    for line in open(os.path.join(work, f"tessera{kind}-{r}.txt")):
        m = re.match(r"model .* \((.*)\)(: aggregate decode.*)?$", line.strip())
        if m: current = m.group(1)
        m = re.match(r"\s+(\d+) sequences:\s+([\d.]+) tokens/s" if batch else r"\s+(pp\d+|tg\d+): ([\d.]+) tokens/s", line)
        if m and current: tessera.setdefault((current, int(m.group(1)) if batch else m.group(1)), {})[r] = float(m.group(2))
    for line in open(os.path.join(work, f"llama{kind}-{r}.jsonl")):
        row = json.loads(line)
        if batch: test, speed = row["pl"], row["speed_tg"]
        else: test, speed = (f"pp{row['n_prompt']}" if row["n_gen"] == 0 else f"tg{row['n_gen']}"), row["avg_ts"]
        llama.setdefault((row["file"], test), {})[r] = speed
tests = sorted({t for (_, t) in tessera}, key=lambda t: t if batch else (t[:2] == "tg", int(t[2:])))
name = lambda f: os.path.basename(f).removeprefix("model-").removesuffix(".gguf")
what = "aggregate decode tokens/s" if batch else "tokens/s"
print(f"\n{what}, medians of {rounds} rounds: tessera / llama.cpp = the median of the rounds' ratios (their range)\n")
print("| format | " + " | ".join(f"{t} seq" if batch else t for t in tests) + " |")
print("| --- | " + " | ".join("---" for _ in tests) + " |")
csv = open(os.path.join(work, "batched.csv"), "w") if batch else None
for f in files:
    cells = []
    for t in tests:
        a, b = tessera.get((f, t), {}), llama.get((f, t), {})
        if csv and a: csv.write(f"tessera,{name(f)},{t},{statistics.median(a.values()):.1f}\n")
        if csv and b: csv.write(f"llama.cpp,{name(f)},{t},{statistics.median(b.values()):.1f}\n")
        ratios = [a[r] / b[r] for r in a if r in b]
        if not ratios: cells.append("n/a"); continue
        cells.append(f"{statistics.median(a.values()):.1f} / {statistics.median(b.values()):.1f} = "
                     f"**{statistics.median(ratios):.2f}x** ({min(ratios):.2f}-{max(ratios):.2f})")
    print(f"| {name(f)} | " + " | ".join(cells) + " |")
EOF
if [[ -n $batch ]]; then
    python3 "$(dirname "$0")/plot_batched.py" "$work/batched.csv" "$work/batched.svg" \
        "GPT-2 124M, $threads threads: aggregate decode (16-token prompts, tg$tg)"
    echo "plot: $work/batched.svg"
fi
echo "raw outputs in $work"
