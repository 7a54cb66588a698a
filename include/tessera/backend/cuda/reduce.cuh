#pragma once
// Block-wide reductions for the row kernels: warp shuffles, then one value per warp through
// shared memory. Every thread of the block gets the result.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif

namespace tessera::gpu {

inline constexpr int warp_size = 32;
inline constexpr int max_block_threads = 1024;

struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ float warp_reduce(float v, Op op) {
    for (int offset = warp_size / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// All threads of the block must call it; `identity` fills the lanes of absent warps.
template <class Op>
__device__ float block_reduce(float v, Op op, float identity) {
    __shared__ float partial[max_block_threads / warp_size];
    const int lane = static_cast<int>(threadIdx.x) % warp_size;
    const int warp = static_cast<int>(threadIdx.x) / warp_size;
    v = warp_reduce(v, op);
    __syncthreads();  // `partial` may still be read by a previous reduction
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    const int warps = (static_cast<int>(blockDim.x) + warp_size - 1) / warp_size;
    v = lane < warps ? partial[lane] : identity;
    return warp_reduce(v, op);
}

}  // namespace tessera::gpu
