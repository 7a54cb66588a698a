#pragma once
// Products with Q6_K weights (core/dtype.hpp: 256 weights per super-block, 16 groups of 16
// with an int8 scale each, one f16 d), the head of a Q4_0 model, as llama-quantize keeps it.
// The activations are quantized as for Q8_0 / Q4_0 (QuantizedRow: 8 bits per 32, a float
// scale), so each group's dot product is an integer sum: the unsigned six-bit quants q (0-63)
// times x, plus -32 times the sum of x (QuantizedRow::minus_32x), then scaled by d, the
// group's scale and x's block scale.
//
// One row (decoding) on every level: AVX-512 VNNI (`vpdpbusd`, 64 weights per instruction),
// AVX2 (`vpmaddubsw` + `vpmaddwd`), portable. Several rows with VNNI: the same tile over up to
// four activation rows, each super-block unpacked once for all of them.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int32_t

#include <tessera/backend/cpu/kernel_level.hpp>    // TESSERA_HAS_X86_KERNELS
#include <tessera/backend/cpu/quantized_row.hpp>  // QuantizedRow
#include <tessera/core/dtype.hpp>                 // Q6_K

namespace tessera::cpu {

namespace portable {
// A Q6_K row · x: an integer sum per group of 16, each scaled by d, the group's scale and x's.
inline float dot(const Q6_K* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s = 0.0f;
    for (std::size_t b = 0; b < k / 256; ++b) {
        const Q6_K& block = w[b];
        const float d = static_cast<float>(block.d);
        for (std::size_t half = 0; half < 2; ++half) {
            const std::uint8_t* ql = block.ql + 64 * half;
            const std::uint8_t* qh = block.qh + 32 * half;
            const std::int8_t* xq = x.q.data() + b * 256 + 128 * half;
            int sums[8] = {};  // the half's 8 groups of 16
            for (std::size_t l = 0; l < 32; ++l) {
                const int q[4] = {(ql[l] & 15) | ((qh[l] & 3) << 4), (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4),
                                  (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4), (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)};
                for (std::size_t j = 0; j < 4; ++j) sums[l / 16 + 2 * j] += (q[j] - 32) * xq[l + 32 * j];
            }
            for (std::size_t g = 0; g < 8; ++g) {
                const std::size_t group = 8 * half + g;
                s += static_cast<float>(sums[g]) * (d * static_cast<float>(block.scales[group]) * x.d[b * 8 + group / 2]);
            }
        }
    }
    return s;
}
}  // namespace portable

}  // namespace tessera::cpu

#if TESSERA_HAS_X86_KERNELS
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace tessera::cpu::avx2 {

// One Q6_K row · x: per 32 weights (two groups), the unsigned quants times x in 16-bit pairs
// (at most 2 * 63 * 127: no saturation), pairs of those into 8 int32 lanes, -32 times x's sums
// added, widened and scaled (lanes 0-3 the first group's, 4-7 the second's).
inline float dot(const Q6_K* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    const __m256i low4 = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (std::size_t b = 0; b < k / 256; ++b) {
        const Q6_K& block = w[b];
        const float d = _cvtsh_ss(block.d.bits);
        for (std::size_t half = 0; half < 2; ++half) {
            const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.ql + 64 * half));
            const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.ql + 64 * half + 32));
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh + 32 * half));
            // Weights [0, 32), [32, 64), [64, 96), [96, 128) of the half.
            const __m256i u[4] = {
                _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(h, two), 4)),
                _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two), 4))};
            for (std::size_t j = 0; j < 4; ++j) {
                const std::size_t first = b * 256 + 128 * half + 32 * j;  // the chunk's first weight
                const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q.data() + first));
                const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u[j], xq), ones),
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.minus_32x.data() + first / 4)));
                const std::size_t group = 8 * half + 2 * j;
                const float dx = d * x.d[first / 32];
                const __m256 scale = _mm256_setr_m128(_mm_set1_ps(dx * static_cast<float>(block.scales[group])),
                                                      _mm_set1_ps(dx * static_cast<float>(block.scales[group + 1])));
                if (j % 2 == 0) acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc0);
                else acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc1);
            }
        }
    }
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(_mm256_add_ps(acc0, acc1)), _mm256_extractf128_ps(_mm256_add_ps(acc0, acc1), 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

}  // namespace tessera::cpu::avx2

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tessera::cpu::avx512vnni {

// A super-block's 256 quants as four vectors of 64 unsigned bytes (0-63), weights [64c, 64c +
// 64) in vector c. Per half of 128: ql's 64 bytes hold weights 0-63 in their low nibbles and
// 64-127 in their high ones; qh's 32 bytes, read twice, give bits 4-5 of each (its bits 0-1
// and 2-3 for weights 0-31 and 32-63, 4-5 and 6-7 for 64-95 and 96-127), moved there by
// 16-bit shifts whose spill into the next byte the mask 0x30 drops.
inline void unpack(const Q6_K& w, __m512i u[4]) noexcept {
    const __m512i low4 = _mm512_set1_epi8(15), bits45 = _mm512_set1_epi8(0x30);
    const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);    // bits 0-1, 2-3 to 4-5
    const __m512i down = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);  // bits 4-5, 6-7 to 4-5
    for (int half = 0; half < 2; ++half) {
        const __m512i l = _mm512_loadu_si512(w.ql + 64 * half);
        const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * half)));
        // (l & 15) | high bits: ternary-logic 0xEC is (a & c) | b
        u[2 * half] = _mm512_ternarylogic_epi32(l, _mm512_and_si512(_mm512_sllv_epi16(h, up), bits45), low4, 0xEC);
        u[2 * half + 1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(l, 4), _mm512_and_si512(_mm512_srlv_epi16(h, down), bits45), low4, 0xEC);
    }
}

// One Q6_K row times T quantized activation rows: out[t * stride] = W row · x[t]. Per
// super-block: the quants unpacked once; per row, the 16 groups' scales (d times the group's
// times x's block scale) in 16 lanes; per vector of 64 weights, vpdpbusd from -32 times x's
// sums, and its 16 lanes (4 per group) scaled into two accumulators. Each row is summed alone
// in a fixed order, so its result has the same bits in a tile of any T.
template <std::size_t T>
inline void q6_k_rows(const Q6_K* w, const QuantizedRow* x, std::size_t k, float* out, std::size_t stride) noexcept {
    __m512 acc[T][2];
    for (std::size_t t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
    const __m512i group_of_lane = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);  // x's block of each group
    for (std::size_t b = 0; b < k / 256; ++b) {
        __m512i u[4];
        unpack(w[b], u);
        const __m512 group_scales = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)))),
                                                  _mm512_set1_ps(_cvtsh_ss(w[b].d.bits)));
        for (std::size_t t = 0; t < T; ++t) {
            const __m512 scales = _mm512_mul_ps(group_scales, _mm512_permutexvar_ps(group_of_lane, _mm512_castps256_ps512(_mm256_loadu_ps(x[t].d.data() + b * 8))));
            const std::int8_t* xq = x[t].q.data() + b * 256;
            const std::int32_t* offset = x[t].minus_32x.data() + b * 64;
            for (int c = 0; c < 4; ++c) {
                const __m512i sums = _mm512_dpbusd_epi32(_mm512_loadu_si512(offset + 16 * c), u[c], _mm512_loadu_si512(xq + 64 * c));
                // lane i holds weights 4i..4i+3 of the vector: group 4c + i / 4
                const __m512i lane_group = _mm512_add_epi32(_mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2),
                                                            _mm512_set1_epi32(4 * c));
                acc[t][c % 2] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_permutexvar_ps(lane_group, scales), acc[t][c % 2]);
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t) out[t * stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
}

inline float dot(const Q6_K* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s;
    q6_k_rows<1>(w, &x, k, &s, 1);
    return s;
}

// Rows [n_begin, n_end) of W times m quantized activation rows: C(m, ldc), those columns; four
// activation rows per tile, then the rest.
inline void integer_columns(const QuantizedRow* x, const Q6_K* w, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                         std::size_t n_begin, std::size_t n_end) noexcept {
    const std::size_t stored = k / 256;
    for (std::size_t r = n_begin; r < n_end; ++r) {
        std::size_t t = 0;
        for (; t + 4 <= m; t += 4) q6_k_rows<4>(w + r * stored, x + t, k, c + t * ldc + r, ldc);
        switch (m - t) {
            case 3: q6_k_rows<3>(w + r * stored, x + t, k, c + t * ldc + r, ldc); break;
            case 2: q6_k_rows<2>(w + r * stored, x + t, k, c + t * ldc + r, ldc); break;
            case 1: q6_k_rows<1>(w + r * stored, x + t, k, c + t * ldc + r, ldc); break;
            default: break;
        }
    }
}

}  // namespace tessera::cpu::avx512vnni

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#endif  // TESSERA_HAS_X86_KERNELS
