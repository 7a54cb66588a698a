#pragma once
// LayerNorm and RMSNorm on the device: one block per row.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>  // std::size_t

#include <tessera/backend/cuda/reduce.cuh>  // block_reduce, SumOp, MaxOp

namespace tessera::gpu {

inline constexpr int row_block_threads = 256;

// Same algorithm as the CPU kernel: mean, one correction pass, variance of the deviations.
__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float eps, float* out,
                                  std::size_t cols) {
    const float* row = x + blockIdx.x * cols;
    float* dst = out + blockIdx.x * cols;
    const float n = static_cast<float>(cols);
    float s = 0;
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) s += row[c];
    float mean = block_reduce(s, SumOp{}, 0.0f) / n;
    s = 0;
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) s += row[c] - mean;
    mean += block_reduce(s, SumOp{}, 0.0f) / n;
    s = 0;
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) s += (row[c] - mean) * (row[c] - mean);
    const float inv_std = rsqrtf(block_reduce(s, SumOp{}, 0.0f) / n + eps);
    __syncthreads();  // out may be x: every thread has read the row before anyone writes it
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = (row[c] - mean) * inv_std * gamma[c] + beta[c];
}

// RMSNorm, as the CPU kernel: x / √(mean(x²) + eps) · gamma.
__global__ void rms_norm_kernel(const float* x, const float* gamma, float eps, float* out, std::size_t cols) {
    const float* row = x + blockIdx.x * cols;
    float* dst = out + blockIdx.x * cols;
    float s = 0;
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) s += row[c] * row[c];
    const float inv_rms = rsqrtf(block_reduce(s, SumOp{}, 0.0f) / static_cast<float>(cols) + eps);
    __syncthreads();  // out may be x
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = row[c] * inv_rms * gamma[c];
}

}  // namespace tessera::gpu
