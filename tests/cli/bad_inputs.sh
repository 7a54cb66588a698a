#!/usr/bin/env bash
# The bad-input probes of the adversarial runs as regression tests: each case gives a program a
# bad input in a scratch folder of its own and expects a non-zero exit that is not a crash, a
# part of the error message, and every file in the folder as it was (the same bytes, kinds and
# permissions, nothing added or removed: no output replaced, no temporary file left behind).
#
#   BIN=build/examples FIXTURES=build/gpt2_fixtures tests/cli/bad_inputs.sh CASE
#
# ctest runs each case_NAME below as its own test "bad_input: NAME" (tests/CMakeLists.txt reads
# the names from this file). Exit 0: passed; 1: failed (it says why); 77: skipped (a case that
# needs root, to make a device node).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 CASE" >&2; exit 2; }
: "${BIN:?the folder of the example programs}" "${FIXTURES:?the folder of tools/make_gpt2_fixtures.sh}"
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera_bad_input.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# Every entry of the folder: kind, permissions, name, link target, and each file's bytes.
snapshot() {
  find . -mindepth 1 -printf '%y %m %p %l\n' | LC_ALL=C sort
  find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
}

# expect_refused EXPECTED CMD...: CMD (standard input from /dev/null unless redirected by the
# caller) exits with 1 or 2, its standard error contains EXPECTED (a fixed string), and the
# folder is unchanged.
expect_refused() {
  local expected=$1 before after err rc
  shift
  before=$(snapshot)
  err=$(timeout 120 "$@" 2>&1 >/dev/null)
  rc=$?
  after=$(snapshot)
  echo "exit $rc: $err"
  [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ] || fail "exit code $rc (expected 1 or 2: a clear refusal, not a crash or a hang)"
  [[ "$err" == *"$expected"* ]] || fail "the message does not contain: $expected"
  [ "$before" = "$after" ] || fail "files changed: $(diff <(echo "$before") <(echo "$after"))"
  echo "PASS"
}

# The inputs of the cases: a model directory with GPT-2's tokenizer, a GGUF file of it, tokens.
model_dir() { cp -r "$FIXTURES/vocab" DIR && rm -f DIR/*.f64 DIR/greedy.json; }
model_gguf() { cp "$FIXTURES/gguf/vocab-f32.gguf" m.gguf; }
tokens() { echo "1 2 3 4 5" > t.txt; }
precious() { printf 'the user data of %s\n' "$1" > "$1"; }  # a file nothing may touch

# --- outputs that would destroy an input or a user's file ---------------------------------------
case_perplexity_bad_model_keeps_dump() {
  tokens; precious d.bin
  expect_refused "model none.gguf: No such file or directory" "$BIN/perplexity" --model none.gguf --tokens-file t.txt --dump-logits d.bin
}
case_perplexity_dump_over_model() {
  model_gguf; tokens
  expect_refused "refusing to write m.gguf: it is an input (m.gguf)" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits m.gguf
}
case_perplexity_kl_base_over_model() {
  model_gguf; tokens
  expect_refused "refusing to write m.gguf: it is an input" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --kl-divergence-base m.gguf
}
case_perplexity_dump_over_model_through_link() {
  model_gguf; tokens; ln -s m.gguf logits.bin
  expect_refused "refusing to write logits.bin: it is an input (m.gguf)" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits logits.bin
}
case_perplexity_dump_over_model_hard_link() {
  model_gguf; tokens; ln m.gguf logits.bin
  expect_refused "refusing to write logits.bin: it is an input (m.gguf)" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits logits.bin
}
case_perplexity_dump_over_directory_file() {
  model_dir; tokens
  expect_refused "refusing to write DIR/../DIR/model.safetensors: it is an input (DIR/model.safetensors)" \
    "$BIN/perplexity" --model DIR --tokens-file t.txt --dump-logits DIR/../DIR/model.safetensors
}
case_perplexity_dump_over_tokens_file() {
  model_gguf; tokens
  expect_refused "refusing to write t.txt: it is an input (t.txt)" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits t.txt
}
case_perplexity_dump_over_kl_base_input() {
  model_gguf; tokens
  "$BIN/perplexity" --model m.gguf --tokens-file t.txt --kl-divergence-base base.kld >/dev/null || fail "making the base"
  expect_refused "refusing to write base.kld: it is an input (base.kld)" \
    "$BIN/perplexity" --model m.gguf --tokens-file t.txt --kl-divergence base.kld --dump-logits base.kld
}
case_perplexity_two_outputs_one_file() {
  model_gguf; tokens
  expect_refused "--dump-logits and --kl-divergence-base name the same file" \
    "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits out.bin --kl-divergence-base ./out.bin
}
case_perplexity_dump_to_fifo() {
  model_gguf; tokens; mkfifo pipe
  expect_refused "refusing to write pipe: it exists and is a FIFO, not a regular file" \
    "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits pipe
}
case_perplexity_dump_to_directory() {
  model_gguf; tokens; mkdir out
  expect_refused "refusing to write out: it exists and is a directory" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits out
}
case_perplexity_dump_to_device_node() {
  model_gguf; tokens
  mknod null c 1 3 2>/dev/null || skip "mknod needs root"
  expect_refused "refusing to write null: it exists and is a character device, not a regular file" \
    "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits null
}
case_perplexity_dump_through_dangling_link() {
  model_gguf; tokens; ln -s nowhere/x.bin logits.bin
  expect_refused "refusing to write logits.bin: it is a symbolic link to a file that does not exist" \
    "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits logits.bin
}
case_perplexity_bad_token_keeps_dump() {  # the outputs exist when the run fails
  model_gguf; precious d.bin; echo "1 2 99999999" > t.txt
  expect_refused "99999999" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits d.bin
}
case_perplexity_failed_write_keeps_dump() {  # the file size limit stops the write part way
  model_gguf; tokens; precious d.bin
  expect_refused "cannot write d.bin: File too large" \
    bash -c 'trap "" XFSZ; ulimit -f 64; exec "$0" "$@"' "$BIN/perplexity" --model m.gguf --tokens-file t.txt --dump-logits d.bin
}
case_perplexity_nan_in_kl_base() {
  model_gguf; tokens
  "$BIN/perplexity" --model m.gguf --tokens-file t.txt --kl-divergence-base base.kld >/dev/null || fail "making the base"
  python3 -c "import struct,sys; f=open('base.kld','r+b'); f.seek(8+16+5*4+4*50257+4*7); f.write(struct.pack('<f', float('nan')))"
  expect_refused "base.kld: holds NaN at position 1, token 7" "$BIN/perplexity" --model m.gguf --tokens-file t.txt --kl-divergence base.kld
}
case_quantize_over_own_safetensors() {
  model_dir
  expect_refused "refusing to write DIR/model.safetensors: it is an input" "$BIN/quantize" --model DIR --weights q4_0 --out DIR/model.safetensors
}
case_quantize_over_own_vocab() {
  model_dir
  expect_refused "refusing to write DIR/vocab.json: it is an input" "$BIN/quantize" --model DIR --weights q4_0 --out DIR/vocab.json
}
case_quantize_over_input_gguf() {
  model_gguf
  expect_refused "refusing to write ./m.gguf: it is an input (m.gguf)" "$BIN/quantize" --model m.gguf --weights q8_0 --out ./m.gguf
}
case_quantize_over_device_node() {
  model_dir
  mknod null c 1 3 2>/dev/null || skip "mknod needs root"
  expect_refused "refusing to write null: it exists and is a character device, not a regular file" \
    "$BIN/quantize" --model DIR --weights q8_0 --out null
}
case_quantize_empty_out() {
  model_dir
  expect_refused "the output file's name is empty" "$BIN/quantize" --model DIR --weights q8_0 --out ''
}
case_quantize_out_in_missing_directory() {
  model_dir
  expect_refused "cannot write nowhere/x.gguf: cannot create a file in nowhere: No such file or directory" \
    "$BIN/quantize" --model DIR --weights q8_0 --out nowhere/x.gguf
}
case_quantize_failed_write_keeps_target() {
  model_dir; precious out.gguf
  expect_refused "cannot write out.gguf: File too large" \
    bash -c 'trap "" XFSZ; ulimit -f 64; exec "$0" "$@"' "$BIN/quantize" --model DIR --weights q8_0 --out out.gguf
}
case_quantize_invalid_utf8_name() {  # never write what the reader would refuse
  model_dir
  expect_refused "--name is not valid UTF-8 (at byte 4)" "$BIN/quantize" --model DIR --weights q8_0 --out new.gguf --name $'tiny\xff'
}
case_quantize_leaves_other_files() {  # a success: only the target changes (no fixed PATH.tmp name)
  model_dir; precious out.gguf.tmp; precious out.gguf
  local before
  before=$(sha256sum out.gguf.tmp)
  "$BIN/quantize" --model DIR --weights q8_0 --out out.gguf >/dev/null || fail "quantize failed"
  [ "$(sha256sum out.gguf.tmp)" = "$before" ] || fail "out.gguf.tmp changed"
  [ "$(ls -A | sort | tr '\n' ' ')" = "DIR out.gguf out.gguf.tmp " ] || fail "other files: $(ls -A)"
  "$BIN/generate" --model out.gguf -p x -n 1 >/dev/null 2>&1 || fail "the written file does not load"
  echo PASS
}
# --- model paths that are not models -------------------------------------------------------------
case_generate_fifo_model() {
  mkfifo fifo
  expect_refused "model fifo is a FIFO, not a GGUF file or a model directory" "$BIN/generate" --model fifo -p x
}
case_generate_device_model() {
  expect_refused "model /dev/zero is a character device, not a GGUF file or a model directory" "$BIN/generate" --model /dev/zero -p x
}
case_generate_dangling_link_model() {
  ln -s nowhere.gguf x.gguf
  expect_refused "model x.gguf is a symbolic link to a file that does not exist" "$BIN/generate" --model x.gguf -p x
}
case_generate_empty_model() {
  expect_refused "the model path is empty" "$BIN/generate" --model '' -p x
}
case_perplexity_fifo_model() {
  tokens; mkfifo fifo
  expect_refused "model fifo is a FIFO" "$BIN/perplexity" --model fifo --tokens-file t.txt
}
# --- files that disagree with themselves ---------------------------------------------------------
case_config_fewer_layers_than_checkpoint() {
  model_dir; sed -i 's/"n_layer": 2/"n_layer": 1/' DIR/config.json
  grep -q '"n_layer": 1' DIR/config.json || fail "the fixture's config.json changed its form"
  tokens
  expect_refused "config.json's n_layer is 1 but the checkpoint holds tensors of 2 blocks" "$BIN/perplexity" --model DIR --tokens-file t.txt
}
# --- text and values ----------------------------------------------------------------------------
case_tokenize_deeply_nested_ids() {
  model_dir
  python3 -c 'print("["*100000+"]"*100000)' > deep.json
  expect_refused "element 0 ([[[[[…]]]]]) is not a token id" bash -c '"$0" --model DIR --decode < deep.json' "$BIN/tokenize"
}
case_generate_temperature_beyond_float() {
  model_dir
  expect_refused "--temperature: must be a finite number >= 0, got '1e39'" "$BIN/generate" --model DIR -p x --temperature 1e39
}
case_merges_with_nul_byte() {  # the message goes on past the NUL
  model_dir
  python3 -c "
lines = open('DIR/merges.txt', encoding='utf-8').read().split('\n')
lines[5] = 'a\x00b c'
open('DIR/merges.txt', 'w', encoding='utf-8').write('\n'.join(lines))"
  expect_refused 'a\x00b c' "$BIN/tokenize" --model DIR --text hi
}

declare -F "case_$1" >/dev/null || { echo "no case '$1'"; exit 2; }
"case_$1"
