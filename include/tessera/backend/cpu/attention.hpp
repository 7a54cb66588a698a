#pragma once
// Causal multi-head attention on the host, exact softmax (scores kept, not streamed).
#include <algorithm>   // std::max
#include <cmath>       // std::sqrt, INFINITY
#include <vector>      // std::vector

#include <tessera/backend/cpu/eigen_maps.hpp>   // ConstVectorMap, VectorMap, ArrayMap
#include <tessera/backend/cpu/thread_pool.hpp>  // ThreadPool

namespace tessera::cpu {

// q(tq, heads, dim), k and v (tk, heads, dim), out(tq, heads, dim); query i is at position
// tk - tq + i and attends keys 0..that position. `scratch` holds one score row (tk floats) per
// thread, sized by the caller so that this kernel never allocates. out may alias q (each
// query row is read whole before its output row is written), not k or v.
[[gnu::noinline]] inline void causal_attention(ThreadPool& pool, std::vector<std::vector<float>>& scratch, const float* q, const float* k,
                             const float* v, float* out, std::size_t tq, std::size_t tk, std::size_t heads,
                             std::size_t dim) {
    const auto d = static_cast<Eigen::Index>(dim);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    const std::size_t row = heads * dim;  // stride between positions
    pool.parallel_for(tq * heads, 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
        float* scores = scratch[thread].data();
        for (std::size_t task = begin; task < end; ++task) {
            const std::size_t i = task / heads;
            const std::size_t h = task % heads;
            const std::size_t last = tk - tq + i;  // last visible key
            const ConstVectorMap qi(q + i * row + h * dim, d);
            float max_score = -INFINITY;
            for (std::size_t j = 0; j <= last; ++j) {
                scores[j] = scale * qi.dot(ConstVectorMap(k + j * row + h * dim, d));
                max_score = std::max(max_score, scores[j]);
            }
            ArrayMap p(scores, static_cast<Eigen::Index>(last + 1));
            p = (p - max_score).exp();
            const float inv_sum = 1.0f / p.sum();
            VectorMap o(out + i * row + h * dim, d);
            o.setZero();
            for (std::size_t j = 0; j <= last; ++j) o += scores[j] * ConstVectorMap(v + j * row + h * dim, d);
            o *= inv_sum;
        }
    });
}

}  // namespace tessera::cpu
