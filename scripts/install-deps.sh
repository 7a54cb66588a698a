#!/usr/bin/env bash
# Installs the Debian packages tessera's build, tests and benchmarks use, skipping those already
# present (so a second run needs no network). Run as root, as on a fresh CI machine.
set -euo pipefail

packages=(
  cmake make g++          # the build
  libeigen3-dev           # the CPU backend's arithmetic
  nlohmann-json3-dev      # the examples' JSON output; tests compare the JSON reader with it
  libcli11-dev            # command-line flags of the examples
  curl                    # scripts/run.sh: downloading GPT-2
  tmux                    # tests/cli/chat_terminal.sh: examples/chat in a pseudo-terminal
  haproxy                 # tests/server: two servers behind a load balancer
  catch2                  # unit tests (Catch2 v2.13)
  libbenchmark-dev        # microbenchmarks (Google Benchmark)
  python3-numpy           # tools/gpt2_reference.py: the float64 GPT-2 reference and test checkpoints
  python3-regex           # tools/gpt2_encoder.py: the reference tokenizer (fixture regeneration)
  python3-jinja2          # tools/make_chat_template_vectors.py: Jinja2 itself renders the chat template vectors
  python3-sentencepiece   # tools/make_sentencepiece_fixture.py, and a fixture's tokenizer (make_llama_fixtures.sh)
  unicode-data            # tools/gen_unicode_tables.py (table regeneration)
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer harnesses with ASan + UBSan
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# The server tests' client (tests/server: the openai npm package) runs on node; machines of this
# project have node 20, a bare Debian gets its own.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
