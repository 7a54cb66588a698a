#pragma once
// Page-locked host memory (cudaMallocHost): a device copies into it directly and asynchronously,
// where a pageable destination needs a staging copy and blocks. Cuda::HostBuffer<T>: where a
// step's results (the logits, greedy token ids) land.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cstddef>         // std::size_t
#include <cuda_runtime.h>  // cudaMallocHost, cudaFreeHost
#include <span>            // std::span
#include <string>          // std::to_string
#include <utility>         // std::exchange

#include <tessera/backend/cuda/check.cuh>  // check

namespace tessera::gpu {

template <class T>
class PinnedBuffer {
public:
    explicit PinnedBuffer(std::size_t n = 0) : size_(n) {
        if (n == 0) return;
        void* p = nullptr;
        check(cudaMallocHost(&p, n * sizeof(T)), "cudaMallocHost (pinned host memory)");
        data_ = static_cast<T*>(p);
    }
    PinnedBuffer(PinnedBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
        if (this != &other) {
            if (data_ != nullptr) cudaFreeHost(data_);
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    ~PinnedBuffer() {
        if (data_ != nullptr) cudaFreeHost(data_);
    }

    T* data() noexcept { return data_; }
    const T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    operator std::span<const T>() const noexcept { return {data_, size_}; }

private:
    T* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace tessera::gpu
