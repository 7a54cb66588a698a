#pragma once
// The machine's own ceilings, measured in the same run as the kernels: read bandwidth (a
// STREAM-like sum over 1 GiB on every thread) and the peak fused multiply-add rate. Kernel
// results are reported as fractions of these, which survive noisy machines better than seconds.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include <tessera/backend/cpu.hpp>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tessera::bench {

struct Roofline {
    double read_bytes_per_second = 0;  // best of several passes
    double flops_per_second = 0;       // best of several runs; an FMA counts as 2 flops
};

namespace detail {

template <class F>
double best_seconds(int repeats, F&& f) {
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

// Sum of n floats read as 4 concurrent sequential streams (the range cut in 4), each with 2
// vector accumulators: the loads, not the adds, limit it, and 4 streams per core keep more
// misses in flight than one (measured 10-30% more bandwidth on this machine than one stream,
// so the roofline, and every fraction against it, is the stricter one).
[[gnu::noinline]] inline float sum_floats(const float* p, std::size_t n) {
    constexpr std::size_t streams = 4;
#if defined(__AVX512F__)
    const std::size_t part = (n / streams) & ~std::size_t{31};
    __m512 acc[streams][2];
    for (auto& a : acc) a[0] = a[1] = _mm512_setzero_ps();
    for (std::size_t i = 0; i < part; i += 32) {
        for (std::size_t s = 0; s < streams; ++s) {
            acc[s][0] = _mm512_add_ps(acc[s][0], _mm512_loadu_ps(p + s * part + i));
            acc[s][1] = _mm512_add_ps(acc[s][1], _mm512_loadu_ps(p + s * part + i + 16));
        }
    }
    __m512 total = _mm512_setzero_ps();
    for (auto& a : acc) total = _mm512_add_ps(total, _mm512_add_ps(a[0], a[1]));
    float sum = _mm512_reduce_add_ps(total);
#else
    const std::size_t part = n / streams;
    float acc[streams] = {};
    for (std::size_t i = 0; i < part; ++i)
        for (std::size_t s = 0; s < streams; ++s) acc[s] += p[s * part + i];
    float sum = acc[0] + acc[1] + acc[2] + acc[3];
#endif
    for (std::size_t i = streams * part; i < n; ++i) sum += p[i];
    return sum;
}

// `iterations` rounds of 12 independent FMA chains: enough to cover the FMA latency on two pipes.
[[gnu::noinline]] inline float fma_chains(long iterations, float seed) {
#if defined(__AVX512F__)
    constexpr int lanes = 16;
    __m512 acc[12];
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(seed * 1e-7f);
    for (int c = 0; c < 12; ++c) acc[c] = _mm512_set1_ps(seed + static_cast<float>(c));
    for (long i = 0; i < iterations; ++i)
        for (int c = 0; c < 12; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
    __m512 total = acc[0];
    for (int c = 1; c < 12; ++c) total = _mm512_add_ps(total, acc[c]);
    return _mm512_reduce_add_ps(total) / lanes;
#elif defined(__AVX2__) && defined(__FMA__)
    __m256 acc[12];
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(seed * 1e-7f);
    for (int c = 0; c < 12; ++c) acc[c] = _mm256_set1_ps(seed + static_cast<float>(c));
    for (long i = 0; i < iterations; ++i)
        for (int c = 0; c < 12; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
    __m256 total = acc[0];
    for (int c = 1; c < 12; ++c) total = _mm256_add_ps(total, acc[c]);
    alignas(32) float out[8];
    _mm256_store_ps(out, total);
    return out[0];
#else
    float acc[12];
    for (int c = 0; c < 12; ++c) acc[c] = seed + static_cast<float>(c);
    for (long i = 0; i < iterations; ++i)
        for (int c = 0; c < 12; ++c) acc[c] = acc[c] * 0.999999f + seed * 1e-7f;
    float total = 0;
    for (float x : acc) total += x;
    return total;
#endif
}

inline constexpr int fma_lanes =
#if defined(__AVX512F__)
    16;
#elif defined(__AVX2__) && defined(__FMA__)
    8;
#else
    1;
#endif

}  // namespace detail

// Accumulated ceiling samples: the mean rates seen over all samples taken.
struct RooflineSamples {
    double read_bytes = 0, read_seconds = 0, flops = 0, fma_seconds = 0;
    Roofline mean() const { return {read_bytes / read_seconds, flops / fma_seconds}; }
};

// Measures both ceilings with every thread of the pool. The 1 GiB buffer is allocated once and
// kept, so that the measurement can be repeated while the kernels run: on a shared machine the
// ceilings drift (read bandwidth was seen to move between 28 and 66 GB/s within one run), and a
// fraction is only meaningful against the ceilings of the same moments.
class RooflineMeter {
public:
    explicit RooflineMeter(cpu::ThreadPool& pool) : pool_(pool), data_(bytes / sizeof(float)), sink_(pool.size()) {
        pool_.parallel_for(data_.size(), 1 << 16,
                           [&](std::size_t b, std::size_t e) { std::fill(data_.data() + b, data_.data() + e, 1.0f); });
    }

    // Best of several passes: the ceilings right now.
    Roofline measure_best(int read_passes, long fma_iterations) {
        const double read_s = detail::best_seconds(read_passes, [&] { read_pass(); });
        const double fma_s = detail::best_seconds(3, [&] { fma_run(fma_iterations); });
        return {static_cast<double>(bytes) / read_s, fma_flops(fma_iterations) / fma_s};
    }

    // One read pass (1 GiB) and one short FMA run, added to `samples`.
    void sample(RooflineSamples& samples) {
        constexpr long fma_iterations = 2'000'000;
        samples.read_seconds += detail::best_seconds(1, [&] { read_pass(); });
        samples.read_bytes += static_cast<double>(bytes);
        samples.fma_seconds += detail::best_seconds(1, [&] { fma_run(fma_iterations); });
        samples.flops += fma_flops(fma_iterations);
    }

private:
    void read_pass() {
        pool_.parallel_for(data_.size(), 1 << 16, [&](std::size_t b, std::size_t e, unsigned t) {
            sink_[t] += detail::sum_floats(data_.data() + b, e - b);
        });
        consume();
    }
    void fma_run(long iterations) {
        pool_.run([&](unsigned t, unsigned) { sink_[t] += detail::fma_chains(iterations, 1.0f + static_cast<float>(t)); });
        consume();
    }
    double fma_flops(long iterations) const {
        return 2.0 * 12 * detail::fma_lanes * static_cast<double>(iterations) * pool_.size();
    }
    void consume() {
        volatile float keep = 0;
        for (float s : sink_) keep = keep + s;  // the sums must be used or the loops vanish
    }

    static constexpr std::size_t bytes = std::size_t{1} << 30;  // 1 GiB: far beyond any cache
    cpu::ThreadPool& pool_;
    Cpu::Buffer<float> data_;
    std::vector<float> sink_;
};

}  // namespace tessera::bench
