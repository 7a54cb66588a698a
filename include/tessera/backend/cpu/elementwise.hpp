#pragma once
// Element-wise kernels on the host, vectorised by Eigen's array expressions.

#include <tessera/backend/cpu/eigen_maps.hpp>   // ArrayMap, ConstArrayMap
#include <tessera/backend/cpu/thread_pool.hpp>  // ThreadPool

namespace tessera::cpu {

// Elements per chunk: small enough to split a 768-wide row, big enough to amortise a dispatch.
inline constexpr std::size_t elementwise_grain = 16384;

// out = a + b. out may be a or b.
template <class Deferred = void>
[[gnu::noinline]] void add(ThreadPool& pool, const float* a, const float* b, float* out, std::size_t n) {
    pool.parallel_for(n, elementwise_grain, [&](std::size_t begin, std::size_t end) {
        const auto len = static_cast<Eigen::Index>(end - begin);
        ArrayMap(out + begin, len) = ConstArrayMap(a + begin, len) + ConstArrayMap(b + begin, len);
    });
}

// GPT-2's GELU (`gelu_new`): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). out may be x.
template <class Deferred = void>
[[gnu::noinline]] void gelu(ThreadPool& pool, const float* x, float* out, std::size_t n) {
    constexpr float sqrt_2_over_pi = 0.7978845608028654f;
    pool.parallel_for(n, elementwise_grain, [&](std::size_t begin, std::size_t end) {
        const auto len = static_cast<Eigen::Index>(end - begin);
        const ConstArrayMap v(x + begin, len);
        ArrayMap(out + begin, len) = 0.5f * v * (1.0f + (sqrt_2_over_pi * (v + 0.044715f * v.cube())).tanh());
    });
}

// The gated SiLU of Llama's feed-forward: out = gate · σ(gate) · up. out may be gate or up.
template <class Deferred = void>
[[gnu::noinline]] void silu_mul(ThreadPool& pool, const float* gate, const float* up, float* out, std::size_t n) {
    pool.parallel_for(n, elementwise_grain, [&](std::size_t begin, std::size_t end) {
        const auto len = static_cast<Eigen::Index>(end - begin);
        const ConstArrayMap g(gate + begin, len);
        ArrayMap(out + begin, len) = g / (1.0f + (-g).exp()) * ConstArrayMap(up + begin, len);
    });
}

}  // namespace tessera::cpu
