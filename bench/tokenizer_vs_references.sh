#!/usr/bin/env bash
# Encode speed of tessera's tokenizers and of their references on the same ~1 MB mixed English /
# code / CJK text and the same files, one thread, in one run: Hugging Face's JavaScript
# tokenizers (under node) on each tokenizer.json fixture (tests/data/tokenizer_json), and Google's
# sentencepiece (Debian python3-sentencepiece) on a realistic 32,000-piece SentencePiece vocabulary
# trained here on Debian's fortunes, read by tessera as tokenizer.model, as GGUF metadata and in
# tokenizer.json's Llama 2 layout. Needs a build, `npm ci --prefix tests/tokenizers`, and Debian's
# python3-sentencepiece and fortunes.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=build/tokenizer_corpus.txt
python3 tools/make_tokenizer_corpus.py "$corpus" >/dev/null
tessera() {  # MODEL: the median of 5 runs
  echo -n "tessera $1: "
  taskset -c 0 build/bench/bench_tokenizer --corpus "$corpus" --model "$1" --benchmark_filter=BM_Encode \
      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null | grep median | grep -o "MB/s=[0-9.]*"
}
for style in gpt2 llama3 qwen2 smollm llama2 mistral; do
  dir=tests/data/tokenizer_json/$style
  tessera "$dir"
  taskset -c 0 node tests/tokenizers/speed.mjs "$dir" "$corpus" 5
done
spm=build/sentencepiece-32k
[ -f $spm/tokenizer.model ] || /usr/bin/python3 tools/make_sentencepiece_fixture.py --out $spm --vocab 32000 >/dev/null
[ -f $spm/json/tokenizer.json ] || /usr/bin/python3 tools/make_tokenizer_json_fixtures.py --from-sentencepiece $spm/tokenizer.model $spm/json >/dev/null
tessera $spm  # its tokenizer.model
tessera $spm/tokenizer.gguf
tessera $spm/json
taskset -c 0 /usr/bin/python3 - "$spm/tokenizer.model" "$corpus" <<'PY'
import sys, time
import sentencepiece
sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])
text = open(sys.argv[2], encoding="utf-8").read()
size = len(text.encode("utf-8"))
times = []
for _ in range(5):
    start = time.perf_counter()
    n = len(sp.encode(text))
    times.append(time.perf_counter() - start)
median = sorted(times)[2]
print(f"sentencepiece {sentencepiece.__version__} {sys.argv[1]}: {size} bytes -> {n} tokens, median {median * 1e3:.1f} ms, {size / median / 1e6:.1f} MB/s")
PY
taskset -c 0 node tests/tokenizers/speed.mjs $spm/json "$corpus" 3
