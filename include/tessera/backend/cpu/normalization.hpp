#pragma once
// Row-wise kernels on the host: LayerNorm and RMSNorm, one row per task.
#include <cmath>       // std::sqrt

#include <tessera/backend/cpu/eigen_maps.hpp>   // ArrayMap, ConstArrayMap
#include <tessera/backend/cpu/thread_pool.hpp>  // ThreadPool

namespace tessera::cpu {

// Each row of x(rows, cols): (x - mean) / √(var + eps) · gamma + beta, with the biased variance
// (as torch.nn.LayerNorm). The variance comes from squared deviations (not E[x²] - E[x]², which
// cancels away when the mean is large), and the mean gets one correction pass: the rounding
// error of a float sum of large values would otherwise shift every output. out may be x.
template <class Deferred = void>
[[gnu::noinline]] void layer_norm(ThreadPool& pool, const float* x, const float* gamma, const float* beta, float eps, float* out,
                       std::size_t rows, std::size_t cols) {
    const auto c = static_cast<Eigen::Index>(cols);
    const ConstArrayMap g(gamma, c);
    const ConstArrayMap b(beta, c);
    pool.parallel_for(rows, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const ConstArrayMap v(x + r * cols, c);
            float mean = v.mean();
            mean += (v - mean).mean();
            const float var = (v - mean).square().mean();
            const float inv_std = 1.0f / std::sqrt(var + eps);
            ArrayMap(out + r * cols, c) = (v - mean) * inv_std * g + b;
        }
    });
}

// Each row of x(rows, cols): x / √(mean(x²) + eps) · gamma (RMSNorm, as Llama's). out may be x.
template <class Deferred = void>
[[gnu::noinline]] void rms_norm(ThreadPool& pool, const float* x, const float* gamma, float eps, float* out, std::size_t rows,
                                       std::size_t cols) {
    const auto c = static_cast<Eigen::Index>(cols);
    const ConstArrayMap g(gamma, c);
    pool.parallel_for(rows, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const ConstArrayMap v(x + r * cols, c);
            const float inv_rms = 1.0f / std::sqrt(v.square().mean() + eps);
            ArrayMap(out + r * cols, c) = v * inv_rms * g;
        }
    });
}

}  // namespace tessera::cpu
