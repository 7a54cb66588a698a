// Microbenchmarks of the CPU kernels at GPT-2 124M shapes (and Llama-3.2-1B's for the stored formats). Every result carries GB/s and
// GFLOP/s counters and, against the machine's roofline measured in the same run, the fraction
// of read bandwidth (bw_frac) and of peak FMA rate (fma_frac) it reached. The roofline is
// measured once at start (printed) and then sampled between the kernel's calls, every 50 ms of
// kernel time: the fractions divide the kernel's mean rate by the mean ceilings sampled while
// it ran (counters read_GBps and peak_GFLOPs), because on a shared machine the ceilings drift
// by 2x within minutes.
//
//   build/bench/bench_kernels                    # all, with the threads the machine has
//   TESSERA_BENCH_THREADS=2 build/bench/bench_kernels --benchmark_filter=Gemv
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <tessera/tessera.hpp>

#include "roofline.hpp"

namespace {

using namespace tessera;
using Matrix = Tensor<float, Extents<dyn, dyn>, Cpu>;
using Vector = Tensor<float, Extents<dyn>, Cpu>;

std::unique_ptr<Cpu> g_cpu;
std::unique_ptr<bench::RooflineMeter> g_meter;

void fill(float* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
}

// Runs the benchmark loop, timing each call (manual time), and reports the rates of `bytes` and
// `flops` moved per call, also as fractions of the roofline sampled in between.
template <class F>
void run_and_report(benchmark::State& state, double bytes, double flops, F&& call) {
    constexpr double sample_every_seconds = 0.05;
    bench::RooflineSamples roof;
    g_meter->sample(roof);
    call();  // warm: first-touch and cache effects stay out of the timing
    double seconds = 0, since_sample = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        call();
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(dt);
        seconds += dt;
        if ((since_sample += dt) >= sample_every_seconds) {
            g_meter->sample(roof);
            since_sample = 0;
        }
    }
    const bench::Roofline ceiling = roof.mean();
    const double calls_per_second = static_cast<double>(state.iterations()) / seconds;
    state.counters["GB/s"] = bytes * calls_per_second / 1e9;
    state.counters["GFLOP/s"] = flops * calls_per_second / 1e9;
    state.counters["bw_frac"] = bytes * calls_per_second / ceiling.read_bytes_per_second;
    state.counters["fma_frac"] = flops * calls_per_second / ceiling.flops_per_second;
    state.counters["read_GBps"] = ceiling.read_bytes_per_second / 1e9;
    state.counters["peak_GFLOPs"] = ceiling.flops_per_second / 1e9;
}

// y(rows) = W(rows, cols) · x(cols): bytes are dominated by W. With `cold`, each call reads a
// different copy of W from a set of copies totalling at least 1 GiB, so W comes from DRAM as in
// decoding (where the rest of the model has evicted it); otherwise W stays cache-resident as
// far as it fits (this machine reports a very large L3).
void gemv_benchmark(benchmark::State& state, bool cold) {
    const auto rows = static_cast<std::size_t>(state.range(0)), cols = static_cast<std::size_t>(state.range(1));
    const std::size_t copies = cold ? ((std::size_t{1} << 30) + rows * cols * 4 - 1) / (rows * cols * 4) : 1;
    std::vector<Matrix> weights;
    for (std::size_t i = 0; i < copies; ++i) {
        weights.emplace_back(rows, cols);
        fill(weights.back().data(), rows * cols);
    }
    Vector x(cols), y(rows);
    fill(x.data(), x.size());
    std::size_t next = 0;
    run_and_report(state, 4.0 * (rows * cols + rows + cols), 2.0 * rows * cols, [&] {
        gemv(*g_cpu, weights[next], x, y);
        next = (next + 1) % copies;
        benchmark::DoNotOptimize(y.data());
    });
}
void BM_Gemv(benchmark::State& state) { gemv_benchmark(state, false); }
void BM_GemvCold(benchmark::State& state) { gemv_benchmark(state, true); }

// The same decode product with W stored in a weight format (bf16, Q8_0, the K-quants): bytes
// are W's stored bytes. Cold: copies of one quantized W (quantizing 1 GiB with the K-quants'
// scale search would take minutes) read in turn, as in decoding.
template <class W>
void BM_GemvStored(benchmark::State& state) {
    const auto rows = static_cast<std::size_t>(state.range(0)), cols = static_cast<std::size_t>(state.range(1));
    const bool cold = state.range(2) != 0;
    using Stored = Tensor<W, Extents<dyn, dyn>, Cpu>;
    const std::size_t stored = cols / WeightFormat<W>::block, bytes = rows * stored * sizeof(W);
    const std::size_t copies = cold ? ((std::size_t{1} << 30) + bytes - 1) / bytes : 1;
    std::vector<float> values(rows * cols);
    fill(values.data(), values.size());
    std::vector<Stored> weights;
    weights.emplace_back(rows, stored);
    WeightFormat<W>::quantize(values.data(), weights.back().data(), values.size());
    for (std::size_t i = 1; i < copies; ++i) {
        weights.emplace_back(rows, stored);
        std::memcpy(weights.back().data(), weights.front().data(), bytes);
    }
    Vector x(cols), y(rows);
    fill(x.data(), x.size());
    std::size_t next = 0;
    run_and_report(state, static_cast<double>(bytes), 2.0 * rows * cols, [&] {
        gemv(*g_cpu, weights[next], x, y);
        next = (next + 1) % copies;
        benchmark::DoNotOptimize(y.data());
    });
}

// C(tokens, rows) = A(tokens, cols) · W(rows, cols)ᵀ: the prefill matrix product.
void BM_Gemm(benchmark::State& state) {
    const auto tokens = static_cast<std::size_t>(state.range(0)), rows = static_cast<std::size_t>(state.range(1)),
               cols = static_cast<std::size_t>(state.range(2));
    Matrix a(tokens, cols), w(rows, cols), c(tokens, rows);
    fill(a.data(), a.size());
    fill(w.data(), w.size());
    run_and_report(state, 4.0 * (tokens * cols + rows * cols + tokens * rows), 2.0 * tokens * rows * cols, [&] {
        gemm(*g_cpu, a, w, c);
        benchmark::DoNotOptimize(c.data());
    });
}

// The same for a few rows of A (a batched decode step: one row per sequence) with W read cold,
// as in gemv_benchmark: the kernel must stream W at the memory's rate while doing `tokens`
// times the arithmetic of a GEMV. arranged 1: W arranged in place first, as a model's layers
// are (Cpu::arrange_weights: panels of 16 rows where the CPU has AVX-512), 0: W as stored (the head).
void BM_GemmFewRowsCold(benchmark::State& state) {
    const auto tokens = static_cast<std::size_t>(state.range(0)), rows = static_cast<std::size_t>(state.range(1)),
               cols = static_cast<std::size_t>(state.range(2));
    const bool arrange = state.range(3) != 0;
    const std::size_t copies = ((std::size_t{1} << 30) + rows * cols * 4 - 1) / (rows * cols * 4);
    std::vector<Matrix> weights;
    std::vector<cpu::Arrangement> arranged;
    for (std::size_t i = 0; i < copies; ++i) {
        weights.emplace_back(rows, cols);
        fill(weights.back().data(), rows * cols);
        arranged.push_back(arrange ? g_cpu->arrange_weights(weights.back().view()) : cpu::Arrangement{});
    }
    Matrix a(tokens, cols), c(tokens, rows);
    Vector bias(rows);
    fill(a.data(), a.size());
    std::size_t next = 0;
    run_and_report(state, 4.0 * (tokens * cols + rows * cols + tokens * rows), 2.0 * tokens * rows * cols, [&] {
        gemm(*g_cpu, a, weights[next], arranged[next], bias, c);
        next = (next + 1) % copies;
        benchmark::DoNotOptimize(c.data());
    });
}

void BM_LayerNorm(benchmark::State& state) {
    const auto tokens = static_cast<std::size_t>(state.range(0)), channels = static_cast<std::size_t>(state.range(1));
    Matrix x(tokens, channels), out(tokens, channels);
    Vector gamma(channels), beta(channels);
    fill(x.data(), x.size());
    fill(gamma.data(), gamma.size());
    run_and_report(state, 4.0 * 2 * tokens * channels, 8.0 * tokens * channels, [&] {
        layer_norm(*g_cpu, x, gamma, beta, 1e-5f, out);
        benchmark::DoNotOptimize(out.data());
    });
}

void BM_Gelu(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    Vector x(n), out(n);
    fill(x.data(), n);
    run_and_report(state, 4.0 * 2 * n, 10.0 * n, [&] {
        gelu(*g_cpu, x, out);
        benchmark::DoNotOptimize(out.data());
    });
}

// The greedy pick over one row of `vocab` logits (argmax_rows), as each greedy decode step runs
// it on the calling thread: SmolLM2's 49,152, Llama 3's 128,256 and Qwen2.5's 151,936.
void BM_Argmax(benchmark::State& state) {
    const auto vocab = static_cast<std::size_t>(state.range(0));
    Vector logits(vocab);
    fill(logits.data(), vocab);
    std::int32_t id = 0;
    run_and_report(state, 4.0 * vocab, 2.0 * vocab, [&] {
        g_cpu->argmax_rows(MatrixView<const float, Cpu>(logits.data(), DynExtents<2>(1, vocab)), std::span<std::int32_t>(&id, 1));
        benchmark::DoNotOptimize(id);
    });
}

// One decode step's attention `keys` positions deep: one query of `heads` heads over keys and
// values of `kv_heads` heads (grouped-query attention), f32 (kv 0), bf16 (1) or Q8_0 (2), as a
// KV cache holds them; bytes: the cache read once.
void BM_DecodeAttention(benchmark::State& state) {
    const auto keys = static_cast<std::size_t>(state.range(0)), heads = static_cast<std::size_t>(state.range(1)),
               kv_heads = static_cast<std::size_t>(state.range(2)), dim = static_cast<std::size_t>(state.range(3));
    const auto kv = state.range(4);
    using T3 = Tensor<float, Extents<dyn, dyn, dyn>, Cpu>;
    T3 q(1, heads, dim), out(1, heads, dim), k(keys, kv_heads, dim), v(keys, kv_heads, dim);
    fill(q.data(), q.size());
    fill(k.data(), k.size());
    fill(v.data(), v.size());
    Tensor<bf16, Extents<dyn, dyn, dyn>, Cpu> k16(kv == 1 ? keys : 0, kv_heads, dim), v16(kv == 1 ? keys : 0, kv_heads, dim);
    Tensor<Q8_0, Extents<dyn, dyn, dyn>, Cpu> k8(kv == 2 ? keys : 0, kv_heads, dim / 32), v8(kv == 2 ? keys : 0, kv_heads, dim / 32);
    if (kv == 1) convert(k, k16), convert(v, v16);
    if (kv == 2) WeightFormat<Q8_0>::quantize(k.data(), k8.data(), k.size()), WeightFormat<Q8_0>::quantize(v.data(), v8.data(), v.size());
    const double per_value = kv == 0 ? 4.0 : kv == 1 ? 2.0 : 34.0 / 32.0;
    run_and_report(state, 2.0 * per_value * static_cast<double>(keys * kv_heads * dim), 4.0 * static_cast<double>(keys * heads * dim), [&] {
        if (kv == 0) causal_attention(*g_cpu, q, k, v, out);
        if (kv == 1) causal_attention(*g_cpu, q, k16, v16, out);
        if (kv == 2) causal_attention(*g_cpu, q, k8, v8, out);
        benchmark::DoNotOptimize(out.data());
    });
}

// GPT-2 124M: C = 768, 4C = 3072, 3C = 2304 (fused qkv), V = 50257.
void weight_shapes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"rows", "cols"});
    for (const auto& [rows, cols] : {std::pair{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}, {50257, 768}})
        b->Args({rows, cols});
    b->UseManualTime();
}
BENCHMARK(BM_Gemv)->Apply(weight_shapes);
BENCHMARK(BM_GemvCold)->Apply(weight_shapes);
// Llama-3.2-1B's feed-forward (2,048 -> 8,192 and back), warm and cold, in the formats of
// llama-quantize's files.
void stored_shapes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"rows", "cols", "cold"})->ArgsProduct({{8192}, {2048}, {0, 1}})->Args({2048, 8192, 1})->UseManualTime();
}
BENCHMARK_TEMPLATE(BM_GemvStored, Q8_0)->Apply(stored_shapes);
BENCHMARK_TEMPLATE(BM_GemvStored, Q4_0)->Apply(stored_shapes);
BENCHMARK_TEMPLATE(BM_GemvStored, Q4_K)->Apply(stored_shapes);
BENCHMARK_TEMPLATE(BM_GemvStored, Q5_K)->Apply(stored_shapes);
BENCHMARK_TEMPLATE(BM_GemvStored, Q6_K)->Apply(stored_shapes);
BENCHMARK(BM_Gemm)
    ->ArgNames({"tokens", "rows", "cols"})
    ->Args({4, 3072, 768})
    ->Args({8, 3072, 768})
    ->Args({16, 3072, 768})
    ->Args({512, 768, 768})
    ->Args({512, 2304, 768})
    ->Args({512, 3072, 768})
    ->Args({512, 768, 3072})
    ->Args({512, 50257, 768})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GemmFewRowsCold)
    ->ArgNames({"tokens", "rows", "cols", "arranged"})
    ->ArgsProduct({{1, 2, 4, 8, 16, 64}, {3072}, {768}, {0, 1}})
    ->Args({16, 768, 3072, 0})
    ->Args({16, 768, 3072, 1})
    ->UseManualTime();
// SmolLM2-135M's heads (9 query, 3 key/value, 64 wide) 4,096 positions deep, in each cache format;
// and 256 deep, and Qwen2.5-0.5B's (14 query, 2 key/value) and Llama-3.2-1B's (32, 8) in f32.
BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"keys", "heads", "kv_heads", "dim", "kv"})
    ->Args({4096, 9, 3, 64, 0})
    ->Args({4096, 9, 3, 64, 1})
    ->Args({4096, 9, 3, 64, 2})
    ->Args({256, 9, 3, 64, 0})
    ->Args({256, 14, 2, 64, 0})
    ->Args({4096, 14, 2, 64, 0})
    ->Args({256, 32, 8, 64, 0})
    ->Args({4096, 32, 8, 64, 0})
    ->UseManualTime();
BENCHMARK(BM_LayerNorm)->ArgNames({"tokens", "C"})->Args({1, 768})->Args({512, 768})->UseManualTime();

BENCHMARK(BM_Gelu)->ArgNames({"n"})->Arg(3072)->Arg(512 * 3072)->UseManualTime();

BENCHMARK(BM_Argmax)->ArgNames({"vocab"})->Arg(49152)->Arg(128256)->Arg(151936)->UseManualTime();

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    unsigned threads = Cpu::default_threads();
    if (const char* env = std::getenv("TESSERA_BENCH_THREADS")) threads = static_cast<unsigned>(std::stoul(env));
    g_cpu = std::make_unique<Cpu>(threads);
    g_meter = std::make_unique<bench::RooflineMeter>(g_cpu->pool());
    const bench::Roofline roof = g_meter->measure_best(10, 20'000'000);
    std::printf("roofline (%u threads): read bandwidth %.1f GB/s, peak FMA %.1f GFLOP/s\n", threads,
                roof.read_bytes_per_second / 1e9, roof.flops_per_second / 1e9);
    benchmark::AddCustomContext("threads", std::to_string(threads));
    benchmark::AddCustomContext("read_bandwidth_GBps_at_start", std::to_string(roof.read_bytes_per_second / 1e9));
    benchmark::AddCustomContext("peak_fma_GFLOPs_at_start", std::to_string(roof.flops_per_second / 1e9));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
