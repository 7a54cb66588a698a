#pragma once
// Zero-initialised host memory aligned to 64 bytes (one cache line, one AVX-512 register);
// from 64 KB on, in 2 MB pages where the system gives them (large_pages.hpp says why).
#include <algorithm>  // std::fill_n
#include <cstddef>    // std::size_t
#include <new>        // operator new, std::align_val_t
#include <utility>    // std::exchange

#include <tessera/backend/cpu/large_pages.hpp>  // LargePageHeap

namespace tessera::cpu {

template <class T>
class AlignedBuffer {
public:
    static constexpr std::size_t alignment = 64;

    AlignedBuffer() noexcept = default;
    explicit AlignedBuffer(std::size_t n) : size_(n) {
        if (n == 0) return;
        data_ = static_cast<T*>(in_large_pages(n) ? LargePageHeap::instance().allocate(n * sizeof(T))
                                                  : ::operator new(n * sizeof(T), std::align_val_t{alignment}));
        std::fill_n(data_, n, T{});
    }
    AlignedBuffer(AlignedBuffer&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
        if (this != &other) {
            release();
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer() { release(); }

    T* data() noexcept { return data_; }
    const T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }

private:
    static bool in_large_pages(std::size_t n) noexcept { return LargePageHeap::takes(n * sizeof(T)); }
    void release() noexcept {
        if (data_ == nullptr) return;
        if (in_large_pages(size_)) LargePageHeap::instance().deallocate(data_, size_ * sizeof(T));
        else ::operator delete(data_, std::align_val_t{alignment});
        data_ = nullptr;
    }

    T* data_ = nullptr;
    std::size_t size_ = 0;
};

// n floats rounded up to whole 64-byte lines: where a second array in one AlignedBuffer<float>
// starts aligned like the first.
inline constexpr std::size_t aligned_floats(std::size_t n) noexcept {
    constexpr std::size_t line = AlignedBuffer<float>::alignment / sizeof(float);
    return (n + line - 1) / line * line;
}

}  // namespace tessera::cpu
