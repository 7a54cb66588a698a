#pragma once
// Device memory for Tensor<T, E, Cuda>: a thrust::device_vector (zero-filled on creation),
// exposing the raw pointer that kernels and cuBLAS take.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>                   // std::size_t
#include <thrust/device_vector.h>    // thrust::device_vector

namespace tessera::gpu {

template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t n) : storage_(n, T{}) {}

    T* data() noexcept { return thrust::raw_pointer_cast(storage_.data()); }
    const T* data() const noexcept { return thrust::raw_pointer_cast(storage_.data()); }
    std::size_t size() const noexcept { return storage_.size(); }

private:
    thrust::device_vector<T> storage_;
};

}  // namespace tessera::gpu
