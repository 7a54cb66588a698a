#pragma once
// Memory for the CPU backend's large buffers (weights, the KV cache, scratch) in 2 MB pages
// where Linux gives them (transparent huge pages, asked for with madvise: the default setting).
//
// Why: a decode step reads every weight once, and a small model's matrices are short streams
// (SmolLM2-135M's q, k and v: 62-190 KB in Q4_0). With 4 KB pages each page is a TLB miss and
// a boundary the hardware prefetchers do not cross, so a thin matrix is read at a fraction of
// the bandwidth a large one gets. A 2 MB page covers many of them. A buffer of its own cannot
// give a matrix under 2 MB a large page, so they are carved from shared regions of 64 MB
// (first fit, freed blocks merged with their neighbours, their whole pages given back to the
// system; regions stay mapped for reuse).
// Under AddressSanitizer (or off Linux) buffers come from operator new, so that ASan sees
// every one.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uintptr_t
#include <cstdlib>  // std::getenv
#include <iterator> // std::prev
#include <map>      // std::map
#include <mutex>    // std::mutex, std::lock_guard
#include <new>      // std::bad_alloc
#include <utility>  // std::pair
#include <vector>   // std::vector

#if defined(__linux__)
#include <sys/mman.h>  // mmap, munmap, madvise
#endif

namespace tessera::cpu {

// Whether AlignedBuffer takes large buffers from LargePageHeap: on Linux, not under ASan.
inline constexpr bool large_pages_possible = [] {
#if !defined(__linux__) || defined(__SANITIZE_ADDRESS__)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return false;
#else
    return true;
#endif
#else
    return true;
#endif
}();

class LargePageHeap {
public:
    static constexpr std::size_t page = std::size_t{2} << 20;
    static constexpr std::size_t region = std::size_t{64} << 20;
    static constexpr std::size_t alignment = 64;
    // Buffers from this size on come from the heap (below it: rows, small scratch).
    static constexpr std::size_t min_bytes = std::size_t{64} << 10;

    // Whether a buffer of `bytes` comes from the heap: large enough, and the heap not turned off
    // (TESSERA_LARGE_PAGES=0 in the environment, read once: for comparing, or where a buffer's
    // last, partly used 2 MB page matters).
    static bool takes(std::size_t bytes) noexcept {
        static const bool off = [] {
            const char* e = std::getenv("TESSERA_LARGE_PAGES");
            return e != nullptr && e[0] == '0';
        }();
        return large_pages_possible && !off && bytes >= min_bytes;
    }

    // The process's heap, never destroyed (buffers of threads and statics may outlive main).
    static LargePageHeap& instance() {
        static LargePageHeap* heap = new LargePageHeap;
        return *heap;
    }

    LargePageHeap() = default;
    LargePageHeap(const LargePageHeap&) = delete;
    LargePageHeap& operator=(const LargePageHeap&) = delete;
    ~LargePageHeap() {
#if defined(__linux__)
        for (const auto& [begin, size] : regions_) ::munmap(begin, size);
#endif
    }

    void* allocate(std::size_t bytes) {
        bytes = round_up(bytes, alignment);
        std::lock_guard lock(mutex_);
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->second < bytes) continue;
            char* p = it->first;
            const std::size_t left = it->second - bytes;
            free_.erase(it);
            if (left != 0) free_.emplace(p + bytes, left);
            return p;
        }
        const std::size_t size = round_up(bytes, region);
        regions_.reserve(regions_.size() + 1);
        char* p = map(size);
        regions_.emplace_back(p, size);
        if (size > bytes) release(p + bytes, size - bytes);
        return p;
    }

    // The bytes of the regions mapped so far.
    std::size_t mapped_bytes() {
        std::lock_guard lock(mutex_);
        std::size_t bytes = 0;
        for (const auto& r : regions_) bytes += r.second;
        return bytes;
    }

    void deallocate(void* pointer, std::size_t bytes) noexcept {
        std::lock_guard lock(mutex_);
        try {
            release(static_cast<char*>(pointer), round_up(bytes, alignment));
        } catch (const std::bad_alloc&) {  // no room to record the block: it stays unused
        }
    }

private:
    static std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

    // A new region of `size` bytes (a multiple of 2 MB), 2 MB-aligned, marked for huge pages.
    static char* map(std::size_t size) {
#if defined(__linux__)
        void* raw = ::mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) throw std::bad_alloc();
        char* begin = static_cast<char*>(raw);
        char* aligned = reinterpret_cast<char*>(round_up(reinterpret_cast<std::uintptr_t>(begin), page));
        if (aligned != begin) ::munmap(begin, static_cast<std::size_t>(aligned - begin));
        if (aligned + size != begin + size + page) ::munmap(aligned + size, static_cast<std::size_t>(begin + size + page - (aligned + size)));
        ::madvise(aligned, size, MADV_HUGEPAGE);  // a hint: without it (or refused), 4 KB pages
        return aligned;
#else
        (void)size;
        throw std::bad_alloc();
#endif
    }

    // Returns [p, p + bytes) to the free blocks, merged with the free blocks it touches, and the
    // whole 2 MB pages inside the merged block to the system (a model unloaded leaves no
    // resident memory behind; reused, the pages fault in again, zeroed).
    void release(char* p, std::size_t bytes) {
        auto next = free_.lower_bound(p);
        if (next != free_.end() && p + bytes == next->first) {
            bytes += next->second;
            next = free_.erase(next);
        }
        if (next != free_.begin()) {
            const auto previous = std::prev(next);
            if (previous->first + previous->second == p) {
                p = previous->first;
                bytes += previous->second;
                next = free_.erase(previous);
            }
        }
        free_.emplace_hint(next, p, bytes);
#if defined(__linux__)
        const auto first = round_up(reinterpret_cast<std::uintptr_t>(p), page), last = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
        if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
#endif
    }

    std::mutex mutex_;
    std::map<char*, std::size_t> free_;  // free blocks by address
    std::vector<std::pair<char*, std::size_t>> regions_;
};

}  // namespace tessera::cpu
