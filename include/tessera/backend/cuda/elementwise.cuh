#pragma once
// Element-wise work on the device with thrust, plus the bias broadcast of gemm.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>                  // std::size_t
#include <thrust/functional.h>      // thrust::plus
#include <thrust/transform.h>       // thrust::transform
#include <thrust/execution_policy.h>

namespace tessera::gpu {

// GPT-2's GELU, the same formula as the CPU kernel.
struct GeluTanh {
    __host__ __device__ float operator()(float x) const {
        constexpr float sqrt_2_over_pi = 0.7978845608028654f;
        return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
    }
};

// c(m, n) += bias(n) on every row.
__global__ void add_bias_rows_kernel(float* c, const float* bias, std::size_t m, std::size_t n) {
    const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx < m * n) c[idx] += bias[idx % n];
}

}  // namespace tessera::gpu
