#pragma once
// Device memory for Tensor<T, E, Cuda>: thrust's device allocation, zero-filled on the stream of
// the active Cuda backend (activation.cuh), so the fill is ordered with that backend's work and
// never touches the legacy default stream; with none active, on this thread's default stream,
// waited for. Failures are BackendErrors naming the size; an allocation inside a captured
// step (a CUDA graph) is refused, since the graph would replay it.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>                  // std::size_t
#include <exception>                // std::exception
#include <string>                   // std::to_string
#include <utility>                  // std::exchange
#include <thrust/device_free.h>     // thrust::device_free
#include <thrust/device_malloc.h>   // thrust::device_malloc
#include <thrust/device_ptr.h>      // thrust::device_ptr

#include <tessera/backend/cuda/activation.cuh>  // Activation
#include <tessera/backend/cuda/check.cuh>       // check
#include <tessera/core/error.hpp>               // BackendError

namespace tessera::gpu {

template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t n) : size_(n) {
        if (n == 0) return;
        const std::size_t bytes = n * sizeof(T);
        const cudaStream_t stream = Activation::stream();
        if (stream != nullptr) {
            cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
            check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
            if (capture != cudaStreamCaptureStatusNone) {
                throw BackendError("Cuda: a buffer of " + std::to_string(bytes) +
                                   " bytes allocated inside a captured step (reserve it before the step)");
            }
        }
        try {
            data_ = thrust::device_malloc<T>(n);
        } catch (const std::exception& e) {
            cudaGetLastError();  // clear the failed allocation's error
            throw BackendError("Cuda: allocating " + std::to_string(bytes) + " bytes of device memory failed: " + e.what());
        }
        if (stream != nullptr) {
            check(cudaMemsetAsync(data(), 0, bytes, stream), "cudaMemsetAsync (a new buffer's zero fill)");
        } else {
            check(cudaMemsetAsync(data(), 0, bytes, cudaStreamPerThread), "cudaMemsetAsync (a new buffer's zero fill)");
            check(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize (a new buffer's zero fill)");
        }
    }
    DeviceBuffer(DeviceBuffer&& other) noexcept : data_(std::exchange(other.data_, {})), size_(std::exchange(other.size_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        if (this != &other) {
            release();
            data_ = std::exchange(other.data_, {});
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { release(); }

    T* data() noexcept { return thrust::raw_pointer_cast(data_); }
    const T* data() const noexcept { return thrust::raw_pointer_cast(data_); }
    std::size_t size() const noexcept { return size_; }

private:
    void release() noexcept {
        if (data_.get() == nullptr) return;
        try {
            thrust::device_free(data_);
        } catch (...) {  // a destructor cannot report it; the context is broken anyway
            cudaGetLastError();
        }
        data_ = {};
    }
    thrust::device_ptr<T> data_{};
    std::size_t size_ = 0;
};

}  // namespace tessera::gpu
