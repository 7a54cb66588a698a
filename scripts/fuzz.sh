#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan + UBSan) in build-fuzz and runs each for
# SECONDS (default 60) from its committed seed corpus, one per core at a time; a finding fails
# the run with its reproducer in build-fuzz/findings. CI runs this with a short time.
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_json fuzz_gguf fuzz_tokenizer fuzz_tokenizer_files fuzz_safetensors fuzz_config fuzz_checkpoint
                                         fuzz_completion_request fuzz_chat_template fuzz_http_request)
CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON \
    -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_EXAMPLES=OFF -DTESSERA_BUILD_BENCHMARKS=OFF \
    -DTESSERA_ENABLE_CUDA=OFF -DTESSERA_NATIVE=OFF >/dev/null
if [ $# -eq 0 ]; then targets=(fuzz_harnesses); else targets=("${harnesses[@]}"); fi
cmake --build build-fuzz --parallel "$(nproc)" --target "${targets[@]}"
mkdir -p build-fuzz/findings build-fuzz/logs
# One harness per core at a time (libFuzzer runs on one thread); each one's summary in order.
run_harness() {
    local h=$1 corpus=build-fuzz/corpus/$1 rc=0
    mkdir -p "$corpus"
    cp -n tests/fuzz/corpus/"$h"/* "$corpus"/ 2>/dev/null || true
    timeout $((seconds + 60)) build-fuzz/tests/fuzz/"$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -artifact_prefix=build-fuzz/findings/"$h"- -print_final_stats=1 "$corpus" > build-fuzz/logs/"$h".log 2>&1 || rc=$?
    echo "$rc" > build-fuzz/logs/"$h".rc
}
for h in "${harnesses[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
    run_harness "$h" &
done
wait
failed=0
for h in "${harnesses[@]}"; do
    echo "== $h: ${seconds}s"
    tail -4 build-fuzz/logs/"$h".log
    [ "$(cat build-fuzz/logs/"$h".rc)" = 0 ] || { echo "== $h failed: its reproducer is in build-fuzz/findings"; failed=1; }
done
[ "$failed" -eq 0 ]
