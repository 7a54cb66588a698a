#pragma once
// Products with Q6_K weights (core/dtype.hpp: 256 weights per super-block, 16 groups of 16
// with an int8 scale each, one f16 d), the head of a Q4_0 model, as llama-quantize keeps it.
// The activations are quantized as for Q8_0 / Q4_0 (QuantizedRow: 8 bits per 32, a float
// scale), so each group's dot product is an integer sum: the unsigned six-bit quants q (0-63)
// times x, plus -32 times the sum of x (QuantizedRow::minus_32x), then scaled by d, the
// group's scale and x's block scale.
//
// One row (decoding) on every level: AVX-512 VNNI (`vpdpbusd`, 64 weights per instruction),
// AVX2 (`vpmaddubsw` + `vpmaddwd`), portable. Several rows with VNNI: the same kernel over up
// to eight activation rows, each super-block unpacked once for all of them.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int32_t
#include <utility>  // std::index_sequence

#include <tessera/backend/cpu/kernel_level.hpp>    // TESSERA_HAS_X86_KERNELS
#include <tessera/backend/cpu/products_avx2.hpp>  // avx2::unrolled, avx2::horizontal_sum
#include <tessera/backend/cpu/quantized_row.hpp>  // QuantizedRow
#include <tessera/core/dtype.hpp>                 // Q6_K
#include <tessera/core/weight_formats.hpp>        // WeightFormat<Q6_K>::quants

namespace tessera::cpu {

namespace portable {
// A Q6_K row · x: an integer sum per group of 16, each scaled by d, the group's scale and x's.
inline float dot(const Q6_K* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s = 0.0f;
    for (std::size_t b = 0; b < k / 256; ++b) {
        std::uint8_t q[256];
        WeightFormat<Q6_K>::quants(w[b], q);
        const float d = static_cast<float>(w[b].d);
        for (std::size_t group = 0; group < 16; ++group) {
            int sum = 0;
            for (std::size_t i = 16 * group; i < 16 * group + 16; ++i) sum += (static_cast<int>(q[i]) - 32) * x.q[b * 256 + i];
            s += static_cast<float>(sum) * (d * static_cast<float>(w[b].scales[group]) * x.d[b * 8 + group / 2]);
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

// Half `half` (weights [128 half, 128 half + 128)) of a Q6_K super-block as 4 vectors of 32
// unsigned six-bit quants (0-63), in the weights' order.
inline void q6_k_half_quants(const Q6_K& block, std::size_t half, __m256i* u) noexcept {
    const __m256i low4 = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3);
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.ql + 64 * half));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.ql + 64 * half + 32));
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh + 32 * half));
    u[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(h, two), 4));
    u[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two), 4));
    u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two), 4));
    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two), 4));
}

// One Q6_K row times T activation rows: out[t * stride] = W row · x[t]. Per 32 weights (two
// groups), the unsigned quants (unpacked once for all T rows) times x in 16-bit pairs (at most
// 2 * 63 * 127: no saturation), pairs of those into 8 int32 lanes, -32 times x's sums added,
// widened and scaled (lanes 0-3 the first group's, 4-7 the second's). Each row is summed alone
// in a fixed order: the same bits in a tile of any T as alone.
template <std::size_t T>
inline void dot_rows(const Q6_K* w, const QuantizedRow* x, std::size_t k, float* out, std::size_t stride) noexcept {
    const __m256i ones = _mm256_set1_epi16(1), pairs = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    __m256 acc0[T], acc1[T];
    unrolled<T>([&](auto t) { acc0[t] = acc1[t] = _mm256_setzero_ps(); });
    for (std::size_t b = 0; b < k / 256; ++b) {
        const Q6_K& block = w[b];
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(block.d.bits));
        for (std::size_t half = 0; half < 2; ++half) {
            __m256i u[4];  // weights [0, 32), [32, 64), [64, 96), [96, 128) of the half
            q6_k_half_quants(block, half, u);
            // The half's 8 group scales, as floats.
            const __m256 scales = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block.scales + 8 * half))));
            unrolled<T>([&](auto t) {
                // Lanes 2j, 2j + 1: d · xd of chunk j, times its two groups' scales (in that order).
                const __m256 xd = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(x[t].d.data() + b * 8 + 4 * half)), pairs);
                const __m256 group_scales = _mm256_mul_ps(_mm256_mul_ps(d, xd), scales);
                unrolled<4>([&](auto j) {
                    const std::size_t first = b * 256 + 128 * half + 32 * j;  // the chunk's first weight
                    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].q.data() + first));
                    const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u[j], xq), ones),
                                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].minus_32x.data() + first / 4)));
                    // lanes 0-3 the first group's scale, 4-7 the second's
                    constexpr int g = 2 * j;
                    const __m256 scale = _mm256_permutevar8x32_ps(group_scales, _mm256_setr_epi32(g, g, g, g, g + 1, g + 1, g + 1, g + 1));
                    if constexpr (j % 2 == 0) acc0[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc0[t]);
                    else acc1[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc1[t]);
                });
            });
        }
    }
    unrolled<T>([&](auto t) { out[t * stride] = horizontal_sum(_mm256_add_ps(acc0[t], acc1[t])); });
}

inline float dot(const Q6_K* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s;
    dot_rows<1>(w, &x, k, &s, 1);
    return s;
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

// The unpacked quants regrouped so that 32-bit lane i of vector q holds quants 4q..4q+3 of
// group i (weights 16i + 4q..): a 4 x 4 transpose of (group, quarter), in eight two-source
// permutes. Then vpdpbusd over the four vectors sums each group's 16 products in its own lane,
// and one multiply by the 16 groups' scales finishes the super-block.
inline void by_group(const __m512i u[4], __m512i v[4]) noexcept {
    // Stage 1: for chunks (c, c + 1) and quarters (q, q + 1), lane 8 dq + 4 dc + j takes lane
    // 4j + q + dq of chunk c + dc (j: the group within the chunk).
    const __m512i quarters01 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
    const __m512i quarters23 = _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
    const __m512i a01_01 = _mm512_permutex2var_epi32(u[0], quarters01, u[1]), a01_23 = _mm512_permutex2var_epi32(u[0], quarters23, u[1]);
    const __m512i a23_01 = _mm512_permutex2var_epi32(u[2], quarters01, u[3]), a23_23 = _mm512_permutex2var_epi32(u[2], quarters23, u[3]);
    // Stage 2: quarter q's lanes of chunks 0-1 then 2-3.
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    v[0] = _mm512_permutex2var_epi32(a01_01, first, a23_01);
    v[1] = _mm512_permutex2var_epi32(a01_01, second, a23_01);
    v[2] = _mm512_permutex2var_epi32(a01_23, first, a23_23);
    v[3] = _mm512_permutex2var_epi32(a01_23, second, a23_23);
}

// R Q6_K rows (`stored` super-blocks apart) times T quantized activation rows
// (QuantizedRow::prepare_for<Q6_K>): out[t * stride + r] = W row r · x[t]. Per super-block:
// each weight row's quants unpacked and regrouped once for all T rows, its groups' scales
// times d; per (weight row, activation row), four vpdpbusd from -32 times the activation
// groups' sums give the 16 groups' integer sums, scaled (d, the group's scale, x's block
// scale) into one accumulator. A row's result is the same bits for any R and T (decoding's
// one row included); R = 2 shares each activation load between two weight rows.
template <std::size_t R, std::size_t T>
inline void q6_k_tile(const Q6_K* w, std::size_t stored, const QuantizedRow* x, std::size_t k, float* out, std::size_t stride) noexcept {
    __m512 acc[R][T];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const __m512i block_of_group = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);  // x's block of 32
    for (std::size_t b = 0; b < k / 256; ++b) {
        __m512i v[R][4];
        __m512 group_scales[R];
        for (std::size_t r = 0; r < R; ++r) {
            const Q6_K& block = w[r * stored + b];
            __m512i u[4];
            unpack(block, u);
            by_group(u, v[r]);
            group_scales[r] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.scales)))),
                                            _mm512_set1_ps(_cvtsh_ss(block.d.bits)));
        }
        for (std::size_t t = 0; t < T; ++t) {
            const std::int8_t* xq = x[t].q_by_group.data() + b * 256;
            const __m512i offset = _mm512_loadu_si512(x[t].minus_32_group.data() + b * 16);
            const __m512 dx = _mm512_permutexvar_ps(block_of_group, _mm512_castps256_ps512(_mm256_loadu_ps(x[t].d.data() + b * 8)));
            __m512i sums[R];
            for (std::size_t r = 0; r < R; ++r) sums[r] = offset;
            for (int q = 0; q < 4; ++q) {
                const __m512i xv = _mm512_loadu_si512(xq + 64 * q);
                for (std::size_t r = 0; r < R; ++r) sums[r] = _mm512_dpbusd_epi32(sums[r], v[r][q], xv);
            }
            for (std::size_t r = 0; r < R; ++r)
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r]), _mm512_mul_ps(group_scales[r], dx), acc[r][t]);
        }
    }
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t t = 0; t < T; ++t) out[t * stride + r] = _mm512_reduce_add_ps(acc[r][t]);
}

inline float dot(const Q6_K* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s;
    q6_k_tile<1, 1>(w, k / 256, &x, k, &s, 1);
    return s;
}

// Weight rows [begin, begin + R) times m quantized activation rows: `tile` activation rows at
// a time, then the rest.
template <std::size_t R, std::size_t Tile>
inline void q6_k_tiles(const Q6_K* w, std::size_t stored, const QuantizedRow* x, std::size_t m, std::size_t k, float* c,
                       std::size_t ldc) noexcept {
    std::size_t t = 0;
    for (; t + Tile <= m; t += Tile) q6_k_tile<R, Tile>(w, stored, x + t, k, c + t * ldc, ldc);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (void)((m - t == I + 1 ? (q6_k_tile<R, I + 1>(w, stored, x + t, k, c + t * ldc, ldc), true) : false) || ...);
    }(std::make_index_sequence<Tile - 1>{});
}

// Rows [n_begin, n_end) of W times m quantized activation rows: C(m, ldc), those columns; two
// weight rows and four activation rows per tile.
inline void integer_columns(const QuantizedRow* x, const Q6_K* w, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                            std::size_t n_begin, std::size_t n_end) noexcept {
    const std::size_t stored = k / 256;
    std::size_t r = n_begin;
    for (; r + 2 <= n_end; r += 2) q6_k_tiles<2, 4>(w + r * stored, stored, x, m, k, c + r, ldc);
    if (r < n_end) q6_k_tiles<1, 4>(w + r * stored, stored, x, m, k, c + r, ldc);
}

}  // namespace tessera::cpu::avx512vnni

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#endif  // TESSERA_HAS_X86_KERNELS
