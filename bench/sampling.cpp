// Sampling cost per token at GPT-2's vocabulary (V = 50,257), one thread: the README's chain
// (repetition penalty 1.1, temperature 0.8, top-k 40, top-p 0.95) and top-p 0.95 alone, each
// including the copy of the logits the generator makes. Logits: a seeded normal(0, 3) draw,
// about the spread of GPT-2 124M's logits; history: 64 random ids.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include <tessera/sampling/sampler.hpp>

namespace {

constexpr std::size_t vocab = 50257;

void run(benchmark::State& state, const tessera::SamplingParams& params) {
    std::vector<float> logits(vocab), scratch(vocab);
    std::mt19937 gen(1);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (float& l : logits) l = normal(gen);
    std::vector<tessera::TokenId> history(64);
    for (auto& t : history) t = static_cast<tessera::TokenId>(gen() % vocab);
    auto sampler = tessera::make_sampler(params);
    for (auto _ : state) {
        scratch.assign(logits.begin(), logits.end());
        benchmark::DoNotOptimize(sampler.sample(scratch, history));
    }
}

void BM_ReadmeChain(benchmark::State& state) {
    run(state, {.temperature = 0.8f, .top_k = 40, .top_p = 0.95, .repetition_penalty = 1.1f, .seed = 1});
}
void BM_TopP(benchmark::State& state) { run(state, {.top_p = 0.95, .seed = 1}); }
void BM_PlainMultinomial(benchmark::State& state) { run(state, {.seed = 1}); }

}  // namespace

BENCHMARK(BM_ReadmeChain)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TopP)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainMultinomial)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
