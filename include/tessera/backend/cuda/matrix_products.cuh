#pragma once
// Matrix products with few rows (decoding: one token, a handful at most): C(M,N) = A(M,K)·W(N,K)ᵀ
// + bias with M <= skinny_max_rows. Reading W is all the cost, so each warp streams one row of W
// (float4 loads where K and the pointers allow) once for all M rows of A, and the bias is added
// in the same pass. Larger M goes to cuBLAS.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uintptr_t

#include <tessera/backend/cuda/reduce.cuh>  // warp_reduce, SumOp, warp_size

namespace tessera::gpu {

inline constexpr int skinny_max_rows = 8;
inline constexpr int skinny_block_threads = 128;  // 4 warps: 768 outputs make 192 blocks, more than the SMs

inline bool aligned16(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Grid: ceil(N / warps per block). bias may be null. Vector: K % 4 == 0 and a, w 16-byte aligned.
template <bool Vector>
__global__ void __launch_bounds__(skinny_block_threads) skinny_gemm_kernel(const float* a, const float* w,
                                                                           const float* bias, float* c, int m, int n,
                                                                           int k) {
    const int lane = static_cast<int>(threadIdx.x) % warp_size;
    const int col = static_cast<int>(blockIdx.x) * (skinny_block_threads / warp_size) +
                    static_cast<int>(threadIdx.x) / warp_size;
    if (col >= n) return;  // whole warps leave together; no block-wide barrier follows
    const float* wr = w + static_cast<std::size_t>(col) * static_cast<std::size_t>(k);
    float acc[skinny_max_rows] = {};
    if constexpr (Vector) {
        const int k4 = k / 4;
        const float4* w4 = reinterpret_cast<const float4*>(wr);
#pragma unroll 4
        for (int i = lane; i < k4; i += warp_size) {
            const float4 wv = w4[i];
#pragma unroll
            for (int r = 0; r < skinny_max_rows; ++r) {
                if (r < m) {
                    const float4 av = reinterpret_cast<const float4*>(a + static_cast<std::size_t>(r) * k)[i];
                    acc[r] += wv.x * av.x + wv.y * av.y + wv.z * av.z + wv.w * av.w;
                }
            }
        }
    } else {
        for (int i = lane; i < k; i += warp_size) {
            const float wv = wr[i];
#pragma unroll
            for (int r = 0; r < skinny_max_rows; ++r) {
                if (r < m) acc[r] += wv * a[static_cast<std::size_t>(r) * k + i];
            }
        }
    }
    const float b = bias != nullptr ? bias[col] : 0.0f;
#pragma unroll
    for (int r = 0; r < skinny_max_rows; ++r) {
        if (r < m) {
            const float sum = warp_reduce(acc[r], SumOp{});
            if (lane == 0) c[static_cast<std::size_t>(r) * n + col] = sum + b;
        }
    }
}

// c(m, n) += bias(n) on every row (after cuBLAS, which has no bias).
__global__ void add_bias_rows_kernel(float* c, const float* bias, std::size_t m, std::size_t n) {
    const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx < m * n) c[idx] += bias[idx % n];
}

}  // namespace tessera::gpu
