#pragma once
// Causal multi-head attention on the device: one block per (query, head). Scores go to a
// global scratch row per block, so any key count works; issue #6 replaces this with a fused
// (flash-style) kernel for decoding.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>  // std::size_t

#include <tessera/backend/cuda/reduce.cuh>  // block_reduce, SumOp, MaxOp

namespace tessera::gpu {

inline constexpr int attention_block_threads = 128;

// Grid: (heads, tq). q(tq,heads,dim), k/v(tk,heads,dim), scores(tq*heads, tk).
__global__ void causal_attention_kernel(const float* q, const float* k, const float* v, float* out, float* scores,
                                        std::size_t tq, std::size_t tk, std::size_t heads, std::size_t dim,
                                        float scale) {
    const std::size_t h = blockIdx.x;
    const std::size_t i = blockIdx.y;
    const std::size_t row = heads * dim;
    const std::size_t last = tk - tq + i;
    const float* qi = q + i * row + h * dim;
    float* s = scores + (i * heads + h) * tk;
    float m = -INFINITY;
    for (std::size_t j = threadIdx.x; j <= last; j += blockDim.x) {
        const float* kj = k + j * row + h * dim;
        float dot = 0;
        for (std::size_t e = 0; e < dim; ++e) dot += qi[e] * kj[e];
        s[j] = dot * scale;
        m = fmaxf(m, s[j]);
    }
    m = block_reduce(m, MaxOp{}, -INFINITY);
    float sum = 0;
    for (std::size_t j = threadIdx.x; j <= last; j += blockDim.x) {
        s[j] = expf(s[j] - m);
        sum += s[j];
    }
    const float inv_sum = 1.0f / block_reduce(sum, SumOp{}, 0.0f);  // its barriers publish s[] too
    float* o = out + i * row + h * dim;  // may be q: all reads of qi happened before the barrier above
    for (std::size_t e = threadIdx.x; e < dim; e += blockDim.x) {
        float acc = 0;
        for (std::size_t j = 0; j <= last; ++j) acc += s[j] * v[j * row + h * dim + e];
        o[e] = acc * inv_sum;
    }
}

}  // namespace tessera::gpu
