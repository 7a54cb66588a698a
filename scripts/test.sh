#!/usr/bin/env bash
# The test command: installs what is missing (Debian packages; the server tests' npm client),
# builds everything (CUDA code too when nvcc exists), runs every test (CUDA tests report
# themselves skipped without a GPU), then runs each libFuzzer harness for 15 s from its seeds,
# one per core at a time (ten harnesses in 75 s; a fresh clone took 36.5 minutes when they ran
# 20 s each one after another).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
npm ci --prefix tests/server --no-audit --no-fund  # the openai client the server tests use (locked version)
npm ci --prefix tests/tokenizers --no-audit --no-fund  # Hugging Face's JS tokenizers, the tokenizer.json reference
source scripts/cuda-env.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$jobs"
ctest --test-dir build --output-on-failure --parallel "$jobs"
scripts/fuzz.sh 15
