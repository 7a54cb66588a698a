#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (CUDA code too when nvcc
# exists), runs every test (CUDA tests report themselves skipped without a GPU), then runs each
# libFuzzer harness for 30 s from its committed seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/cuda-env.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$jobs"
ctest --test-dir build --output-on-failure --parallel "$jobs"
scripts/fuzz.sh 30
