#!/usr/bin/env bash
# tessera's examples/server against llama.cpp's llama-server, side by side in one run: the same
# GGUF files, the same load (bench/server_load.mjs: C clients each sending requests of a
# 16-token prompt and TG new tokens, end-of-text banned), on loopback, one server at a time.
#
#   bench/compare_servers.sh LLAMA_CPP_DIR GGUF... [-- WORK_DIR]
#
# LLAMA_CPP_DIR: a llama.cpp tree with build/bin/llama-server (cmake --build build --target llama-server).
# Environment: TESSERA_BUILD (default build), THREADS (2), ROUNDS (3), CONCURRENCY (1,2,4,8,16),
# TG (64), REQUESTS (2 per client), TTFT (8: streams running while the time to first token of
# a new ~128-token prompt is measured; empty to skip), VOCAB (a vocab.json: ban the tokens that are
# not whole UTF-8 characters, for random-weight models, whose invalid text llama-server refuses).
# Writes servers.csv and servers.svg (bench/plot_batched.py) into WORK_DIR.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
llama_dir=$1
shift
files=()
while [[ $# -gt 0 && $1 != -- ]]; do files+=("$(realpath "$1")"); shift; done
[[ $# -gt 0 ]] && shift
work=${1:-$(mktemp -d /tmp/compare-servers.XXXXXX)}
build=${TESSERA_BUILD:-build}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
concurrency=${CONCURRENCY:-1,2,4,8,16}
tg=${TG:-64}
requests=${REQUESTS:-2}
ttft=${TTFT-8}
vocab=()
[[ -z ${VOCAB:-} ]] || vocab=(--vocab "$VOCAB")
most=$(tr ',' '\n' <<<"$concurrency" | sort -n | tail -1)
ctx=256  # positions per sequence, both servers
llama_server=$llama_dir/build/bin/llama-server
for tool in "$llama_server" "$build/examples/server"; do
    [[ -x $tool ]] || { echo "compare_servers: $tool is missing; build it first" >&2; exit 2; }
done
mkdir -p "$work"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) cores; llama.cpp $(git -C "$llama_dir" rev-parse --short HEAD 2>/dev/null || echo '(no git)')"

port=$((20000 + RANDOM % 20000))
server_pid=
stop_server() {
    [[ -z $server_pid ]] && return
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}
trap stop_server EXIT

# start_server NAME FILE: in the background, waits until /health answers ok (60 s at most).
start_server() {
    local log=$work/$1-server.log
    port=$((port + 1))  # a fresh port: the last one may linger in TIME_WAIT
    if [[ $1 == tessera ]]; then
        "$build/examples/server" --model "$2" --port "$port" --threads "$threads" --parallel "$most" --ctx "$ctx" \
            --queue "$most" >"$log" 2>&1 &
    else
        "$llama_server" -m "$2" --port "$port" -t "$threads" -tb "$threads" -np "$most" -c $((most * ctx)) -cb \
            --no-webui >"$log" 2>&1 &
    fi
    server_pid=$!
    for _ in $(seq 600); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return
        sleep 0.1
    done
    echo "compare_servers: $1 did not start, see $log" >&2
    exit 1
}

: >"$work/servers-raw.csv"
load() {  # load NAME FILE ROUND
    local format
    format=$(basename "$2" .gguf)
    format=${format#gpt2-}
    start_server "$1" "$2"
    node "$(dirname "$0")/server_load.mjs" --url "http://127.0.0.1:$port" --concurrency "$concurrency" --tokens "$tg" \
        --requests "$requests" --eos 50256 "${vocab[@]}" --label "$1,$format,$3" >>"$work/servers-raw.csv"
    if [[ -n $ttft && $3 == 1 ]]; then
        node "$(dirname "$0")/server_load.mjs" --url "http://127.0.0.1:$port" --tokens "$tg" --eos 50256 "${vocab[@]}" --ttft "$ttft" \
            --label "$1 $format" | tee -a "$work/ttft.txt"
    fi
    stop_server
}
: >"$work/ttft.txt"
for ((r = 1; r <= rounds; ++r)); do
    echo "round $r of $rounds"
    for file in "${files[@]}"; do
        if ((r % 2)); then load tessera "$file" "$r"; load llama.cpp "$file" "$r"; else load llama.cpp "$file" "$r"; load tessera "$file" "$r"; fi
    done
done

python3 - "$work" <<'EOF'
import collections, os, statistics, sys
work = sys.argv[1]
runs = collections.defaultdict(list)  # (server, format, concurrency) -> tokens/s per round
for line in open(os.path.join(work, "servers-raw.csv")):
    server, fmt, _, c, tps, *_ = line.strip().split(",")
    runs[(server, fmt, int(c))].append(float(tps))
formats = sorted({f for (_, f, _) in runs})
counts = sorted({c for (_, _, c) in runs})
print("\naggregate generated tokens/s through the server, medians over rounds (tessera / llama.cpp = ratio)\n")
print("| format | " + " | ".join(f"{c} clients" for c in counts) + " |")
print("| --- | " + " | ".join("---" for _ in counts) + " |")
with open(os.path.join(work, "servers.csv"), "w") as csv:
    for f in formats:
        cells = []
        for c in counts:
            a, b = runs.get(("tessera", f, c)), runs.get(("llama.cpp", f, c))
            if a: csv.write(f"tessera server,{f},{c},{statistics.median(a):.1f}\n")
            if b: csv.write(f"llama-server,{f},{c},{statistics.median(b):.1f}\n")
            if not a or not b: cells.append("n/a"); continue
            a, b = statistics.median(a), statistics.median(b)
            cells.append(f"{a:.1f} / {b:.1f} = **{a / b:.2f}x**")
        print(f"| {f} | " + " | ".join(cells) + " |")
    for f in formats:
        one = runs.get(("tessera", f, counts[0]))
        if one:
            base = statistics.median(one)
            print(f"tessera {f}: " + ", ".join(f"{statistics.median(runs[('tessera', f, c)]) / base:.2f}x at {c}" for c in counts[1:]))
EOF
python3 "$(dirname "$0")/plot_batched.py" "$work/servers.csv" "$work/servers.svg" \
    "GPT-2 124M, $threads threads: generated tokens/s through the server (16-token prompts, $tg new tokens each)"
echo "plot: $work/servers.svg; raw outputs in $work"
