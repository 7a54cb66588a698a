#!/usr/bin/env bash
# Copies the header-only dependencies (Eigen, nlohmann_json, Catch2 2, CLI11) with their CMake
# package files from this Debian machine into DIR, laid out as a prefix, for a machine that has
# only the CUDA toolkit, CMake and a compiler: scripts/gpu-check.sh --deps DIR.
#   scripts/stage-deps.sh .deps   (about 12 MB)
set -euo pipefail
dir=${1:?usage: scripts/stage-deps.sh DIR}
copy() {  # paths under /usr
  for p in "$@"; do
    [ -e "/usr/$p" ] || { echo "stage-deps: /usr/$p is missing (run scripts/install-deps.sh)" >&2; exit 1; }
    mkdir -p "$dir/usr/$(dirname "$p")"
    cp -r "/usr/$p" "$dir/usr/$(dirname "$p")/"
  done
}
copy include/eigen3 share/eigen3/cmake \
     include/nlohmann share/cmake/nlohmann_json \
     include/catch2 lib/cmake/Catch2 lib/libCatch2WithMain.a \
     include/CLI share/cmake/CLI11
echo "staged in $dir/usr: pass --deps $dir to scripts/gpu-check.sh"
