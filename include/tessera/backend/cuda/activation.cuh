#pragma once
// Activation: which device and stream this thread works for, set for a scope and restored
// after it, as PyTorch's CUDAGuard does. A Cuda instance activates itself on entry to each of
// its operations (so launches and allocations go to its device even when another instance, on
// another device, ran last in this thread), and Cuda::activate() gives the same to a caller that
// allocates tensors for it. New device buffers are zero-filled on the active stream.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cuda_runtime.h>  // cudaGetDevice, cudaSetDevice, cudaStream_t

#include <tessera/backend/cuda/check.cuh>  // check

namespace tessera::gpu {

class Activation {
public:
    Activation(int device, cudaStream_t stream) : previous_stream_(active()) {
        check(cudaGetDevice(&previous_device_), "cudaGetDevice");
        if (previous_device_ != device) check(cudaSetDevice(device), "cudaSetDevice");
        active() = stream;
    }
    Activation(const Activation&) = delete;
    Activation& operator=(const Activation&) = delete;
    ~Activation() {
        active() = previous_stream_;
        int now = previous_device_;
        if (cudaGetDevice(&now) == cudaSuccess && now != previous_device_) cudaSetDevice(previous_device_);
    }

    // The stream of the innermost activation on this thread; null when there is none.
    static cudaStream_t stream() noexcept { return active(); }

private:
    static cudaStream_t& active() noexcept {
        thread_local cudaStream_t stream = nullptr;
        return stream;
    }
    int previous_device_ = 0;
    cudaStream_t previous_stream_;
};

}  // namespace tessera::gpu
