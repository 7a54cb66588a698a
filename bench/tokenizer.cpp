// Tokenizer speed: encoding a ~1 MB mixed English / code / CJK text on one thread.
//
//   python3 tools/make_tokenizer_corpus.py build/corpus.txt
//   build/bench/bench_tokenizer --corpus build/corpus.txt --model tests/data/gpt2 [--pre llama3]
//
// --model takes any model path open_any_tokenizer does (a directory with tokenizer.json,
// tokenizer.model or vocab.json + merges.txt, a GGUF file); --pre runs that vocabulary with another pre-tokenizer
// (gpt2, llama3, qwen2, smollm), so that each pattern is timed with GPT-2's full 50,000 merges.
//
// bench/tokenizer_vs_tiktoken.sh runs this and js-tiktoken on the same text in one go.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <tessera/models/open_tokenizer.hpp>
#include <tessera/text/bpe_tokenizer.hpp>
#include <tessera/text/stream_decoder.hpp>

namespace {

std::string g_corpus;
std::unique_ptr<tessera::Tokenizer> g_tokenizer;

// The whole text each time: every call starts with an empty word cache, as a fresh request would.
void BM_Encode(benchmark::State& state) {
    std::size_t tokens = 0;
    for (auto _ : state) {
        const auto ids = g_tokenizer->encode(g_corpus);
        tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * g_corpus.size()));
    state.counters["tokens"] = static_cast<double>(tokens);
    state.counters["MB/s"] = benchmark::Counter(static_cast<double>(g_corpus.size()) / 1e6,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void BM_StreamDecode(benchmark::State& state) {
    const auto ids = g_tokenizer->encode(g_corpus);
    for (auto _ : state) {
        tessera::StreamDecoder stream(*g_tokenizer);
        std::size_t bytes = 0;
        for (const auto id : ids) bytes += stream.push(id).size();
        bytes += stream.finish().size();
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * g_corpus.size()));
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(ids.size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamDecode)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    std::string corpus_path, model = "tests/data/gpt2", pre;
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--corpus" && i + 1 < argc) {
            corpus_path = argv[++i];
        } else if (arg == "--model" && i + 1 < argc) {
            model = argv[++i];
        } else if (arg == "--pre" && i + 1 < argc) {
            pre = argv[++i];
        } else {
            rest.push_back(argv[i]);
        }
    }
    int rest_argc = static_cast<int>(rest.size());
    if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
    if (corpus_path.empty()) {
        std::fprintf(stderr, "bench_tokenizer: --corpus FILE is required (tools/make_tokenizer_corpus.py makes one)\n");
        return 2;
    }
    std::ifstream in(corpus_path, std::ios::binary);
    g_corpus.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    g_tokenizer = tessera::open_any_tokenizer(model);
    if (!pre.empty()) {
        const auto* bpe = dynamic_cast<const tessera::BpeTokenizer*>(g_tokenizer.get());
        if (!bpe) {
            std::fprintf(stderr, "bench_tokenizer: --pre needs a byte-level BPE model\n");
            return 2;
        }
        tessera::BpeTokenizer::Options options = bpe->options();
        bool known = false;
        for (const auto p : {tessera::PreTokenizer::gpt2, tessera::PreTokenizer::llama3, tessera::PreTokenizer::qwen2,
                             tessera::PreTokenizer::smollm}) {
            if (tessera::name(p) == pre) options.pre = p, known = true;
        }
        if (!known) {
            std::fprintf(stderr, "bench_tokenizer: --pre %s: gpt2, llama3, qwen2 or smollm\n", pre.c_str());
            return 2;
        }
        std::vector<std::string> tokens;
        std::vector<std::int32_t> types;
        for (std::size_t id = 0; id < bpe->vocab_size(); ++id) {
            tokens.push_back(bpe->token_text(static_cast<tessera::TokenId>(id)));
            types.push_back(static_cast<std::int32_t>(bpe->token_type(static_cast<tessera::TokenId>(id))));
        }
        g_tokenizer = std::make_unique<tessera::BpeTokenizer>(tokens, types, bpe->merge_texts(), options, model);
    }
    std::printf("corpus: %zu bytes from %s\n", g_corpus.size(), corpus_path.c_str());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
