#pragma once
// Element-wise kernels (sum, GELU, gated SiLU), rotary positions and the embedding lookup. Plain grid-stride kernels on the
// backend's stream: thrust's transform would add nothing but its own error type.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int32_t

namespace tessera::gpu {

inline constexpr unsigned elementwise_threads = 256;
// Blocks for n elements: enough to fill the device, each thread then striding over the rest.
inline unsigned elementwise_blocks(std::size_t n) {
    const std::size_t blocks = (n + elementwise_threads - 1) / elementwise_threads;
    return static_cast<unsigned>(blocks < 4096 ? (blocks == 0 ? 1 : blocks) : 4096);
}

// GPT-2's GELU, the same formula as the CPU kernel.
struct GeluTanh {
    __host__ __device__ float operator()(float x) const {
        constexpr float sqrt_2_over_pi = 0.7978845608028654f;
        return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
    }
};

// out = a + b (out may alias either).
__global__ void add_kernel(const float* a, const float* b, float* out, std::size_t n) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        out[i] = a[i] + b[i];
}

// out = GELU(x) (out may alias x).
__global__ void gelu_kernel(const float* x, float* out, std::size_t n) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        out[i] = GeluTanh{}(x[i]);
}

// out = gate · σ(gate) · up (out may alias either).
__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, std::size_t n) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

// Rotary frequencies travel by value in the launch's parameters, as token ids do (a captured
// graph holds them): heads of up to 512 elements.
inline constexpr std::size_t rotary_max_pairs = 256;
struct RotaryFrequencies {
    double inv_freq[rotary_max_pairs];
};

// Grid: one block per row of x(rows, heads, dim), at position first + row; each thread turns
// pairs (i, of dim / 2) in every head, the angle in double and cos, sin scaled by `amplitude` as
// on the CPU.
__global__ void rotary_kernel(float* x, std::size_t heads, std::size_t dim, std::size_t first, RotaryFrequencies f, bool halves,
                              float amplitude) {
    const std::size_t pairs = dim / 2;
    const double position = static_cast<double>(first + blockIdx.x);
    float* row = x + blockIdx.x * heads * dim;
    for (std::size_t i = threadIdx.x; i < pairs; i += blockDim.x) {
        double s, c;
        sincos(position * f.inv_freq[i], &s, &c);
        const float cf = static_cast<float>(c) * amplitude, sf = static_cast<float>(s) * amplitude;
        const std::size_t a = halves ? i : 2 * i, b = halves ? i + pairs : 2 * i + 1;
        for (std::size_t h = 0; h < heads; ++h) {
            float* v = row + h * dim;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cf - x1 * sf;
            v[b] = x0 * sf + x1 * cf;
        }
    }
}

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
