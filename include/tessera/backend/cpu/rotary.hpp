#pragma once
// Rotary position embedding on the host, in place.
#include <algorithm>  // std::max
#include <cmath>      // std::cos, std::sin
#include <cstddef>    // std::size_t

#include <tessera/backend/cpu/thread_pool.hpp>  // ThreadPool

namespace tessera::cpu {

// x(rows, heads, dim), row r at position first + r: in every head, pair i of the dim / 2 pairs
// turned by the angle position · inv_freq[i]. The pairs are (x[2i], x[2i+1]) (`halves` false:
// GGUF's llama rope) or (x[i], x[i + dim/2]) (true: NeoX, Hugging Face). The angle and its
// sine and cosine are computed in double (a float angle at position 30,000 is off by 2e-3
// radians), once per row and pair for all heads; both are scaled by `amplitude` (YaRN's
// attention factor; 1 leaves them as they are) once rounded to float.
[[gnu::noinline]] inline void rotary(ThreadPool& pool, float* x, std::size_t rows, std::size_t heads, std::size_t dim,
                                     std::size_t first, const double* inv_freq, bool halves, float amplitude = 1.0f) {
    const std::size_t pairs = dim / 2, row = heads * dim;
    const std::size_t grain = std::max<std::size_t>(1, 8192 / std::max<std::size_t>(1, row));
    pool.parallel_for(rows, grain, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const double position = static_cast<double>(first + r);
            for (std::size_t i = 0; i < pairs; ++i) {
                const double angle = position * inv_freq[i];
                const float c = static_cast<float>(std::cos(angle)) * amplitude, s = static_cast<float>(std::sin(angle)) * amplitude;
                const std::size_t a = halves ? i : 2 * i, b = halves ? i + pairs : 2 * i + 1;
                for (std::size_t h = 0; h < heads; ++h) {
                    float* v = x + r * row + h * dim;
                    const float x0 = v[a], x1 = v[b];
                    v[a] = x0 * c - x1 * s;
                    v[b] = x0 * s + x1 * c;
                }
            }
        }
    });
}

}  // namespace tessera::cpu
