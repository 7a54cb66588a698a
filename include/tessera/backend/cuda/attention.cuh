#pragma once
// Causal multi-head attention on the device, fused: one block per (head, query); its warps split
// the keys, each keeps an online softmax (running max, running sum, weighted sum of values) in
// registers, and the block merges the warps' partial results through shared memory. No score
// matrix is written anywhere, so the same kernel serves prefill (many queries) and decoding (one
// query over the KV cache), for any number of keys.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>  // std::size_t

#include <tessera/backend/cuda/reduce.cuh>  // warp_reduce, SumOp, warp_size

namespace tessera::gpu {

inline constexpr int attention_max_warps = 32;

// Grid: (heads, tq); blockDim.x a multiple of 32, at most 1024. q(tq,heads,dim),
// k/v(tk,kv_heads,dim) (query head h reads key/value head h / (heads / kv_heads)),
// dim <= 32 * PerLane. `out` may be q: each block reads its query row
// into registers before anything is written.
template <int PerLane>
__global__ void __launch_bounds__(1024) causal_attention_kernel(const float* q, const float* k, const float* v,
                                                                 float* out, std::size_t tq, std::size_t tk,
                                                                 std::size_t heads, std::size_t kv_heads, std::size_t dim,
                                                                 float scale) {
    __shared__ float warp_max[attention_max_warps], warp_sum[attention_max_warps];
    __shared__ float warp_acc[attention_max_warps][PerLane * warp_size];
    const std::size_t h = blockIdx.x;
    const std::size_t i = blockIdx.y;
    const std::size_t row = heads * dim, kv_row = kv_heads * dim;
    const std::size_t g = h / (heads / kv_heads);  // the key/value head
    const std::size_t last = tk - tq + i;  // the query's own position: it sees keys 0..last
    const int lane = static_cast<int>(threadIdx.x) % warp_size;
    const int warp = static_cast<int>(threadIdx.x) / warp_size;
    const int warps = static_cast<int>(blockDim.x) / warp_size;

    // Lane l holds elements l, l + 32, ... of the (pre-scaled) query and of its output.
    float qr[PerLane], acc[PerLane];
    const float* qi = q + i * row + h * dim;
#pragma unroll
    for (int r = 0; r < PerLane; ++r) {
        const std::size_t e = static_cast<std::size_t>(lane + r * warp_size);
        qr[r] = e < dim ? qi[e] * scale : 0.0f;
        acc[r] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (std::size_t j = static_cast<std::size_t>(warp); j <= last; j += static_cast<std::size_t>(warps)) {
        const float* kj = k + j * kv_row + g * dim;
        const float* vj = v + j * kv_row + g * dim;
        float dot = 0.0f;
#pragma unroll
        for (int r = 0; r < PerLane; ++r) {
            const std::size_t e = static_cast<std::size_t>(lane + r * warp_size);
            if (e < dim) dot += qr[r] * kj[e];
        }
        dot = warp_reduce(dot, SumOp{});  // every lane gets the score
        const float m_new = fmaxf(m, dot);
        const float correction = expf(m - m_new);  // 0 at the first key, where m is -inf
        const float p = expf(dot - m_new);
        l = l * correction + p;
#pragma unroll
        for (int r = 0; r < PerLane; ++r) {
            const std::size_t e = static_cast<std::size_t>(lane + r * warp_size);
            acc[r] = acc[r] * correction + (e < dim ? p * vj[e] : 0.0f);
        }
        m = m_new;
    }

    // Merge: a warp that saw no key has m = -inf, l = 0, acc = 0 and weighs exp(-inf) = 0;
    // warp 0 always sees key 0, so the overall max is finite.
    if (lane == 0) {
        warp_max[warp] = m;
        warp_sum[warp] = l;
    }
#pragma unroll
    for (int r = 0; r < PerLane; ++r) warp_acc[warp][lane + r * warp_size] = acc[r];
    __syncthreads();
    float m_all = -INFINITY;
    for (int w = 0; w < warps; ++w) m_all = fmaxf(m_all, warp_max[w]);
    float l_all = 0.0f;
    for (int w = 0; w < warps; ++w) l_all += warp_sum[w] * expf(warp_max[w] - m_all);
    float* o = out + i * row + h * dim;
    for (std::size_t e = threadIdx.x; e < dim; e += blockDim.x) {
        float sum = 0.0f;
        for (int w = 0; w < warps; ++w) sum += warp_acc[w][e] * expf(warp_max[w] - m_all);
        o[e] = sum / l_all;
    }
}

}  // namespace tessera::gpu
