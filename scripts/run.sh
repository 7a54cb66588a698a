#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs the main example. Until the GPT-2
# generator (examples/generate) lands, that is the tensor tour from the README.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/cuda-env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$(nproc)" --target tensor_tour
build/examples/tensor_tour "$@"
