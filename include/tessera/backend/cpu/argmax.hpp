#pragma once
// The greedy token of one row of logits, found on the host (HasArgmaxRows).
//
// The row is read in blocks of 1,024: each block's maximum comes from vector code (AVX-512 or
// AVX2, picked at run time as the other kernels are; the portable loop elsewhere), and only
// the first block holding the row's maximum is searched for its index: a scan that tracks the
// index as it goes cannot be vectorised (bench/RESULTS.md, issue #34's eleventh part).
#include <algorithm>  // std::min, std::max
#include <cmath>      // std::isnan, INFINITY
#include <cstddef>    // std::size_t
#include <cstdint>    // std::int32_t

#include <tessera/backend/cpu/kernel_level.hpp>  // TESSERA_HAS_X86_KERNELS, has_avx512, has_avx2

#if TESSERA_HAS_X86_KERNELS
#if !defined(__clang__)
// GCC 12.2's AVX-512 intrinsics self-initialise a variable (`__m512 __Y = __Y;`, GCC bug
// 105593) and warn about it wherever they are inlined. The intrinsics' headers are included
// under the same silence: a warning's state is that of the header's own lines, so whichever
// tessera header includes them first decides for every unit (as matrix_products_avx512.hpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>  // AVX2 and AVX-512 intrinsics, each function compiled for its own target
#endif

namespace tessera::cpu {

namespace argmax_detail {

// The largest of x[0..n) (-infinity when n is 0), and whether any is NaN.
struct BlockMax {
    float max;
    bool nan;
};

inline BlockMax block_max_portable(const float* x, std::size_t n) noexcept {
    float m = -INFINITY;
    bool nan = false;
    for (std::size_t i = 0; i < n; ++i) {
        nan |= std::isnan(x[i]);
        m = std::max(m, x[i]);
    }
    return {m, nan};
}

#if TESSERA_HAS_X86_KERNELS
// Four running maxima (independent chains), NaNs noted apart: max_ps drops a NaN operand.
[[gnu::target("avx512f")]] inline BlockMax block_max_avx512(const float* x, std::size_t n) noexcept {
    constexpr std::size_t lanes = 16;
    __m512 m[4] = {_mm512_set1_ps(-INFINITY), _mm512_set1_ps(-INFINITY), _mm512_set1_ps(-INFINITY), _mm512_set1_ps(-INFINITY)};
    __mmask16 nan = 0;
    std::size_t i = 0;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        for (std::size_t k = 0; k < 4; ++k) {
            const __m512 v = _mm512_loadu_ps(x + i + k * lanes);
            nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            m[k] = _mm512_max_ps(m[k], v);
        }
    }
    alignas(64) float lane[lanes];
    _mm512_store_ps(lane, _mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
    const BlockMax rest = block_max_portable(x + i, n - i);
    BlockMax out{rest.max, rest.nan || nan != 0};
    for (const float v : lane) out.max = std::max(out.max, v);
    return out;
}

[[gnu::target("avx2")]] inline BlockMax block_max_avx2(const float* x, std::size_t n) noexcept {
    constexpr std::size_t lanes = 8;
    __m256 m[4] = {_mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY)};
    __m256 nan = _mm256_setzero_ps();
    std::size_t i = 0;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        for (std::size_t k = 0; k < 4; ++k) {
            const __m256 v = _mm256_loadu_ps(x + i + k * lanes);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            m[k] = _mm256_max_ps(m[k], v);
        }
    }
    alignas(32) float lane[lanes];
    _mm256_store_ps(lane, _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])));
    const BlockMax rest = block_max_portable(x + i, n - i);
    BlockMax out{rest.max, rest.nan || _mm256_movemask_ps(nan) != 0};
    for (const float v : lane) out.max = std::max(out.max, v);
    return out;
}
#endif

}  // namespace argmax_detail

// The index of the largest of x[0..n), the lowest among equals (as std::max_element); -1 when
// x holds a NaN or +infinity, or nothing above -infinity: no greedy choice is honest then, and
// the sampler's full check names the fault.
inline std::int32_t argmax_row(const float* x, std::size_t n) noexcept {
    using argmax_detail::BlockMax;
    BlockMax (*block_max)(const float*, std::size_t) noexcept = argmax_detail::block_max_portable;
#if TESSERA_HAS_X86_KERNELS
    if (has_avx512()) block_max = argmax_detail::block_max_avx512;
    else if (has_avx2()) block_max = argmax_detail::block_max_avx2;
#endif
    constexpr std::size_t block = 1024;
    float top = -INFINITY;
    std::size_t first = n;  // the first block whose maximum is top
    for (std::size_t b = 0; b < n; b += block) {
        const BlockMax m = block_max(x + b, std::min(block, n - b));
        if (m.nan || m.max == INFINITY) return -1;
        if (m.max > top) {
            top = m.max;
            first = b;
        }
    }
    if (first == n) return -1;
    for (std::size_t i = first;; ++i) {
        if (x[i] == top) return static_cast<std::int32_t>(i);
    }
}

}  // namespace tessera::cpu

#if TESSERA_HAS_X86_KERNELS && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
