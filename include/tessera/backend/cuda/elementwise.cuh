#pragma once
// Element-wise work on the device with thrust, and the embedding lookup.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int32_t

namespace tessera::gpu {

// GPT-2's GELU, the same formula as the CPU kernel.
struct GeluTanh {
    __host__ __device__ float operator()(float x) const {
        constexpr float sqrt_2_over_pi = 0.7978845608028654f;
        return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
    }
};

// Token ids travel by value in the launch's parameters: no staging copy to the device, and a
// captured CUDA graph holds them. Longer sequences take several launches.
inline constexpr std::size_t gather_ids_per_launch = 256;
struct TokenIds {
    std::int32_t id[gather_ids_per_launch];
};

// Grid: one block per id. out row b = table row ids.id[b].
__global__ void gather_rows_kernel(const float* table, TokenIds ids, float* out, std::size_t cols) {
    const float* src = table + static_cast<std::size_t>(ids.id[blockIdx.x]) * cols;
    float* dst = out + static_cast<std::size_t>(blockIdx.x) * cols;
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = src[c];
}

}  // namespace tessera::gpu
