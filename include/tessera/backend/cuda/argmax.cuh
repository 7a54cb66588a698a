#pragma once
// The greedy token of each row of logits, found on the device (Cuda::argmax_rows): one id per
// row crosses to the host instead of the row.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int32_t

namespace tessera::gpu {

inline constexpr unsigned argmax_threads = 256;  // a power of two: the tree below halves it

// Grid: one block of argmax_threads per row. out[row] = the column of the row's largest value,
// the lowest among equals; -1 when the row holds a NaN or +infinity or nothing above -infinity
// (as cpu::argmax_row).
__global__ void argmax_rows_kernel(const float* x, std::size_t cols, std::int32_t* out) {
    __shared__ float values[argmax_threads];
    __shared__ std::int32_t columns[argmax_threads];
    const float* row = x + static_cast<std::size_t>(blockIdx.x) * cols;
    const unsigned t = threadIdx.x;
    float best = -INFINITY;
    std::int32_t at = -1;
    int bad = 0;
    for (std::size_t c = t; c < cols; c += argmax_threads) {  // ascending: `>` keeps the lowest of equals
        const float v = row[c];
        if (isnan(v) || v == INFINITY) bad = 1;
        else if (v > best) {
            best = v;
            at = static_cast<std::int32_t>(c);
        }
    }
    bad = __syncthreads_or(bad);
    values[t] = best;
    columns[t] = at;
    __syncthreads();
    for (unsigned half = argmax_threads / 2; half > 0; half /= 2) {
        if (t < half) {
            const float v = values[t + half];
            const std::int32_t c = columns[t + half];
            if (c >= 0 && (columns[t] < 0 || v > values[t] || (v == values[t] && c < columns[t]))) {
                values[t] = v;
                columns[t] = c;
            }
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = bad ? -1 : columns[0];
}

}  // namespace tessera::gpu
