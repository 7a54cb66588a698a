#pragma once
// Products with the types of llama-quantize's K-quant files besides Q6_K (products_q6_k.hpp)
// and Q8_0: Q4_K and Q5_K (super-blocks of 256: 8 groups of 32 with 6-bit scales and mins,
// weight = d · scale · q − dmin · min) and their fallbacks Q5_0 (d · (q − 16)) and Q5_1
// (d · q + m) for rows that are not whole super-blocks: the dots of one weight row with a few
// activation rows, and AVX2's panels of 8 weight rows for prompts (Q6_K's too).
//
// The activations are quantized as for Q8_0 (QuantizedRow: 8 bits per block of 32, a float
// scale each; llama.cpp quantizes them per 256 for the K-quants, Q8_K), so a group of 32 is one
// activation block and each group's dot product is one integer sum of the unsigned quants q
// times x: vpdpbusd with AVX-512 VNNI (64 weights per instruction), vpmaddubsw + vpmaddwd with
// AVX2. The offsets (−dmin · min, −16 d, + m) multiply the block's sum of x, which
// QuantizedRow::prepare_sums computes once per row (scaled_sums). The portable dots are the
// reference the vector ones must equal in their integer sums.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint32_t, std::uint64_t
#include <cstring>  // std::memcpy
#include <type_traits>  // std::is_same_v

#include <tessera/backend/cpu/kernel_level.hpp>    // TESSERA_HAS_X86_KERNELS
#include <tessera/backend/cpu/products_avx2.hpp>  // avx2::horizontal_sum
#include <tessera/backend/cpu/products_q6_k.hpp>  // avx2::q6_k_half_quants
#include <tessera/backend/cpu/quantized_row.hpp>  // QuantizedRow
#include <tessera/core/dtype.hpp>                 // Q4_K, Q5_K, Q5_0, Q5_1
#include <tessera/core/weight_formats.hpp>        // WeightFormat<W>::quants, detail::unpack_five_bits

namespace tessera::cpu {

namespace detail {
// A K-quant super-block's 8 six-bit scales (bytes 0-7 of the first word) and mins (of the
// second), unpacked from its 12 bytes all at once (k_scale_min's layout: groups 0-3 in the low
// six bits of bytes 0-3 and 4-7; groups 4-7 in the nibbles of bytes 8-11, their top two bits
// in the top bits of bytes 0-7).
struct ScalesAndMins {
    std::uint64_t scales, mins;
};
inline ScalesAndMins scales_and_mins(const std::uint8_t* packed) noexcept {
    std::uint32_t s[3];
    std::memcpy(s, packed, sizeof s);
    const std::uint32_t scales_high = (s[2] & 0x0f0f0f0fu) | ((s[0] >> 2) & 0x30303030u);
    const std::uint32_t mins_high = ((s[2] >> 4) & 0x0f0f0f0fu) | ((s[1] >> 2) & 0x30303030u);
    return {(s[0] & 0x3f3f3f3fu) | std::uint64_t{scales_high} << 32, (s[1] & 0x3f3f3f3fu) | std::uint64_t{mins_high} << 32};
}
}  // namespace detail

namespace portable {

// A Q4_K or Q5_K row · x: per group of 32, d · scale · xd · Σ q x − dmin · min · xd · Σ x.
template <class W>
    requires std::is_same_v<W, Q4_K> || std::is_same_v<W, Q5_K>
inline float dot(const W* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s = 0.0f;
    for (std::size_t b = 0; b < k / 256; ++b) {
        std::uint8_t q[256];
        WeightFormat<W>::quants(w[b], q);
        const auto [scales, mins] = detail::scales_and_mins(w[b].scales);
        const float d = static_cast<float>(w[b].d), dmin = static_cast<float>(w[b].dmin);
        for (std::size_t g = 0; g < 8; ++g) {
            const std::int8_t* xq = x.q.data() + b * 256 + 32 * g;
            int sum = 0, sum_x = 0;
            for (std::size_t i = 0; i < 32; ++i) {
                sum += q[32 * g + i] * xq[i];
                sum_x += xq[i];
            }
            const float xd = x.d[b * 8 + g];
            s += static_cast<float>(sum) * (d * static_cast<float>((scales >> (8 * g)) & 255) * xd) -
                 dmin * static_cast<float>((mins >> (8 * g)) & 255) * (static_cast<float>(sum_x) * xd);
        }
    }
    return s;
}

// A Q5_0 or Q5_1 row · x: per block, d · xd · Σ q x, then −16 d (Q5_0) or + m (Q5_1) times xd · Σ x.
template <class W>
    requires std::is_same_v<W, Q5_0> || std::is_same_v<W, Q5_1>
inline float dot(const W* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s = 0.0f;
    for (std::size_t b = 0; b < k / 32; ++b) {
        int q[32];
        tessera::detail::unpack_five_bits(w[b].qs, w[b].qh, q);
        const std::int8_t* xq = x.q.data() + b * 32;
        int sum = 0, sum_x = 0;
        for (std::size_t i = 0; i < 32; ++i) {
            sum += q[i] * xq[i];
            sum_x += xq[i];
        }
        const float d = static_cast<float>(w[b].d), scaled_sum_x = static_cast<float>(sum_x) * x.d[b];
        float offset = -16.0f * d;
        if constexpr (std::is_same_v<W, Q5_1>) offset = static_cast<float>(w[b].m);
        s += static_cast<float>(sum) * (d * x.d[b]) + offset * scaled_sum_x;
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

// 32 unsigned weights times 32 int8 activations, summed into 8 int32 lanes (pairs of at most
// 2 · 31 · 127 in 16 bits: no saturation).
inline __m256i products(__m256i u, const std::int8_t* x) noexcept {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))), _mm256_set1_epi16(1));
}

// The eight group scales d · scale · xd and the min offsets' sum dmin · Σ min · xd · Σ x of
// one super-block.
inline __m256 k_group_scales(const std::uint64_t packed_scales, float d, const float* xd) noexcept {
    const __m256 scales = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(packed_scales))));
    return _mm256_mul_ps(_mm256_mul_ps(scales, _mm256_set1_ps(d)), _mm256_loadu_ps(xd));
}

// Groups 2h and 2h + 1 of a Q4_K or Q5_K super-block as 32 unsigned quants each: the low and
// high nibbles of qs[32 h, 32 h + 32), Q5_K's fifth bits (bits 2h and 2h + 1 of qh) as 16.
template <class W>
    requires std::is_same_v<W, Q4_K> || std::is_same_v<W, Q5_K>
inline void k_quant_groups(const W& block, int h, __m256i& low, __m256i& high) noexcept {
    const __m256i low4 = _mm256_set1_epi8(15);
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs + 32 * h));
    low = _mm256_and_si256(q, low4);
    high = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    if constexpr (std::is_same_v<W, Q5_K>) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh));
        const __m256i bit_low = _mm256_set1_epi8(static_cast<char>(1 << (2 * h))), bit_high = _mm256_set1_epi8(static_cast<char>(2 << (2 * h)));
        const __m256i sixteen = _mm256_set1_epi8(16);
        low = _mm256_or_si256(low, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit_low), bit_low), sixteen));
        high = _mm256_or_si256(high, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit_high), bit_high), sixteen));
    }
}

// A Q4_K or Q5_K row times T activation rows: out[t * stride] = W row · x[t]. Per 32 weights (a
// group), their quants (k_quant_groups, unpacked once for all T rows) times x, each group's 8
// lanes scaled by its d · scale · xd. Each row is summed alone in a fixed order, so its result
// has the same bits in a tile of any T as alone (dot is the tile of one).
template <std::size_t T, class W>
    requires std::is_same_v<W, Q4_K> || std::is_same_v<W, Q5_K>
inline void dot_rows(const W* w, const QuantizedRow* x, std::size_t k, float* out, std::size_t stride) noexcept {
    __m256 acc0[T], acc1[T], offsets[T];
    unrolled<T>([&](auto t) { acc0[t] = acc1[t] = offsets[t] = _mm256_setzero_ps(); });
    for (std::size_t b = 0; b < k / 256; ++b) {
        const W& block = w[b];
        // Named members, not a structured binding: clang 14 cannot capture a binding in a lambda.
        const detail::ScalesAndMins packed = detail::scales_and_mins(block.scales);
        const std::uint64_t packed_scales = packed.scales, packed_mins = packed.mins;
        const float d = _cvtsh_ss(block.d.bits);
        const __m256 mins = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(packed_mins)))),
                                          _mm256_set1_ps(_cvtsh_ss(block.dmin.bits)));
        __m256i u[8];  // groups 2h (low nibbles) and 2h + 1 (high) at 2h and 2h + 1
        for (int h = 0; h < 4; ++h) k_quant_groups(block, h, u[2 * h], u[2 * h + 1]);
        unrolled<T>([&](auto t) {
            const __m256 scale = k_group_scales(packed_scales, d, x[t].d.data() + 8 * b);
            offsets[t] = _mm256_fmadd_ps(mins, _mm256_loadu_ps(x[t].scaled_sums.data() + 8 * b), offsets[t]);
            const std::int8_t* xq = x[t].q.data() + 256 * b;
            unrolled<4>([&](auto h) {
                acc0[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(products(u[2 * h], xq + 64 * h)),
                                          _mm256_permutevar8x32_ps(scale, _mm256_set1_epi32(static_cast<int>(2 * h))), acc0[t]);
                acc1[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(products(u[2 * h + 1], xq + 64 * h + 32)),
                                          _mm256_permutevar8x32_ps(scale, _mm256_set1_epi32(static_cast<int>(2 * h + 1))), acc1[t]);
            });
        });
    }
    unrolled<T>([&](auto t) { out[t * stride] = horizontal_sum(_mm256_add_ps(acc0[t], acc1[t])) - horizontal_sum(offsets[t]); });
}

// Block b of a Q5_0 / Q5_1 row as 32 unsigned five-bit quants: the nibbles of qs (low: weights
// 0-15, high: 16-31), bit j of qh set into byte j as 16.
template <class W>
inline __m256i five_bit_quants(const W& block) noexcept {
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
    const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), _mm256_set1_epi8(15));
    std::uint32_t qh;
    std::memcpy(&qh, block.qh, sizeof qh);
    // Byte j takes byte j / 8 of qh, then tests bit j % 8.
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                                               _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bits = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i fifth = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits), _mm256_set1_epi8(16));
    return _mm256_or_si256(nibbles, fifth);
}

// A Q5_0 or Q5_1 row times T activation rows: each block's quants made once for all T rows;
// per row one accumulator of d · xd · Σ q x, the offsets (−16 d or m, times xd · Σ x) summed
// apart. The same bits in a tile of any T.
template <std::size_t T, class W>
    requires std::is_same_v<W, Q5_0> || std::is_same_v<W, Q5_1>
inline void dot_rows(const W* w, const QuantizedRow* x, std::size_t k, float* out, std::size_t stride) noexcept {
    __m256 acc[T];
    float offsets[T];
    unrolled<T>([&](auto t) { acc[t] = _mm256_setzero_ps(), offsets[t] = 0.0f; });
    for (std::size_t b = 0; b < k / 32; ++b) {
        const float d = _cvtsh_ss(w[b].d.bits);
        float offset = -16.0f * d;
        if constexpr (std::is_same_v<W, Q5_1>) offset = _cvtsh_ss(w[b].m.bits);
        const __m256i u = five_bit_quants(w[b]);
        unrolled<T>([&](auto t) {
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(products(u, x[t].q.data() + 32 * b)), _mm256_set1_ps(d * x[t].d[b]), acc[t]);
            offsets[t] += offset * x[t].scaled_sums[b];
        });
    }
    unrolled<T>([&](auto t) { out[t * stride] = horizontal_sum(acc[t]) + offsets[t]; });
}

// A Q4_K, Q5_K, Q5_0 or Q5_1 row · x: the tile of one.
template <class W>
    requires with_offsets<W>
inline float dot(const W* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s;
    dot_rows<1>(w, &x, k, &s, 1);
    return s;
}


// Prompts: weight rows packed 8 at a time per call (pack_offset_panel) and multiplied by
// offset_panel_tile, whose activation bytes are broadcast to the 8 rows' lanes, so that one
// vpmaddubsw serves 8 weight rows (the dots above unpack a row for every 4 activation rows and
// serve one), as Q4_0's panels do (products_avx2.hpp).

// Eight rows of 8 dwords as 8 vectors: out[j] holds dword j of row r in lane r.
inline void transpose_8_rows(const __m256i* rows, __m256i* out) noexcept {
    __m256i t[8], u[8];
    for (int r = 0; r < 8; r += 2) t[r] = _mm256_unpacklo_epi32(rows[r], rows[r + 1]), t[r + 1] = _mm256_unpackhi_epi32(rows[r], rows[r + 1]);
    for (int i = 0; i < 8; i += 4) {  // u[i + j]: dword j (lanes 0-3), j + 4 (4-7) of rows i..i+3
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int j = 0; j < 4; ++j) {
        out[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
        out[j + 4] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
    }
}

// The formats packed in AVX2's offset panels: those with an offset, and Q6_K.
template <class W>
inline constexpr bool in_offset_panels = with_offsets<W> || std::is_same_v<W, Q6_K>;
// Scales per block of 32 in those panels (Q6_K: one per group of 16).
template <class W>
inline constexpr std::size_t panel_groups = std::is_same_v<W, Q6_K> ? 2 : 1;

// Q4_K / Q5_K / Q5_0 / Q5_1 / Q6_K weight rows [0, rows) (rows <= 8; `stored` blocks of their
// own per row) as one panel, per block of 32: 8 vectors whose dword r holds row r's unsigned
// quants 4j..4j+3 (wq, 256 bytes), the rows' scales (ws: Q4_K / Q5_K d · the group's scale,
// Q5_0 / Q5_1 d; Q6_K d · each group of 16's scale, [block][group][row]) and what each row adds
// per unit of the block's activation sum xd · Σ q (mins: −dmin · the group's min, Q5_1's m,
// Q5_0's −16 d; Q6_K's −32 is the activations' integer offset, and it has none). Missing rows
// get 0.
template <class W>
    requires in_offset_panels<W>
inline void pack_offset_panel(const W* w, std::size_t stored, std::size_t rows, std::uint8_t* wq, float* ws, float* mins) noexcept {
    constexpr std::size_t per = WeightFormat<W>::block / 32, groups = panel_groups<W>;  // blocks of 32 per stored block
    for (std::size_t sb = 0; sb < stored; ++sb) {
        __m256i quants[per][8];
        float* scale = ws + sb * per * groups * 8;  // [block of 32][group][row]
        float* min = mins + sb * per * 8;           // [block of 32][row]
        for (std::size_t r = 0; r < 8; ++r) {
            if (r >= rows) {
                for (std::size_t i = 0; i < per; ++i) {
                    quants[i][r] = _mm256_setzero_si256();
                    for (std::size_t g = 0; g < groups; ++g) scale[(i * groups + g) * 8 + r] = 0.0f;
                    if constexpr (with_offsets<W>) min[8 * i + r] = 0.0f;
                }
                continue;
            }
            const W& block = w[r * stored + sb];
            const float d = _cvtsh_ss(block.d.bits);
            if constexpr (std::is_same_v<W, Q6_K>) {
                for (std::size_t g = 0; g < 16; ++g) scale[8 * g + r] = d * static_cast<float>(block.scales[g]);
                for (std::size_t half = 0; half < 2; ++half) {
                    __m256i u[4];
                    q6_k_half_quants(block, half, u);
                    for (std::size_t j = 0; j < 4; ++j) quants[4 * half + j][r] = u[j];
                }
            } else if constexpr (per == 8) {  // Q4_K, Q5_K
                const detail::ScalesAndMins packed = detail::scales_and_mins(block.scales);
                const float dmin = _cvtsh_ss(block.dmin.bits);
                for (std::size_t g = 0; g < 8; ++g) {
                    scale[8 * g + r] = d * static_cast<float>((packed.scales >> (8 * g)) & 255);
                    min[8 * g + r] = -dmin * static_cast<float>((packed.mins >> (8 * g)) & 255);
                }
                for (int h = 0; h < 4; ++h) k_quant_groups(block, h, quants[2 * h][r], quants[2 * h + 1][r]);
            } else {  // Q5_0, Q5_1
                quants[0][r] = five_bit_quants(block);
                scale[r] = d;
                if constexpr (std::is_same_v<W, Q5_1>) min[r] = _cvtsh_ss(block.m.bits);
                else min[r] = -16.0f * d;
            }
        }
        for (std::size_t i = 0; i < per; ++i) {
            __m256i words[8];
            transpose_8_rows(quants[i], words);
            for (std::size_t j = 0; j < 8; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(wq + (sb * per + i) * 256 + 32 * j), words[j]);
        }
    }
}

// A panel (pack_offset_panel) times T <= 4 activation rows: out[t * ldc + r] = W row r · x[t]
// for its 8 rows. Per block, the unsigned quants times x in 16-bit pairs (at most 2 · 63 · 127;
// runs of vectors whose pairs add in 16 bits without overflow: eight of Q4_K's 4-bit quants,
// four of 5-bit ones, two of Q6_K's), into 32 bits, per group (Q6_K: of 16, with x's sum times
// -32 added, exact), then acc = fma(sum, scale · xd, acc) and, but for Q6_K,
// acc = fma(min, xd · Σ q, acc). Each row and activation row is summed in a fixed order: the
// same bits in a tile of any T.
template <std::size_t T, class W>
    requires in_offset_panels<W>
inline void offset_panel_tile(const std::uint8_t* wq, const float* ws, const float* mins, const QuantizedRow* x, std::size_t blocks,
                              float* out, std::size_t ldc) noexcept {
    constexpr std::size_t groups = panel_groups<W>, vectors = 8 / groups;  // per group
    constexpr std::size_t run = std::is_same_v<W, Q4_K> ? 8 : std::is_same_v<W, Q6_K> ? 2 : 4;  // vectors summed in 16 bits
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[T];
    unrolled<T>([&](auto t) { acc[t] = _mm256_setzero_ps(); });
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::uint8_t* v = wq + b * 256;
        unrolled<groups>([&](auto g) {
            __m256i sums[T];
            unrolled<T>([&](auto t) {
                if constexpr (std::is_same_v<W, Q6_K>) sums[t] = _mm256_set1_epi32(x[t].minus_32_group[b * 2 + g]);
                else sums[t] = _mm256_setzero_si256();
            });
            unrolled<vectors / run>([&](auto part) {
                __m256i pairs[T];
                unrolled<T>([&](auto t) { pairs[t] = _mm256_setzero_si256(); });
                unrolled<run>([&](auto i) {
                    constexpr std::size_t j = g * vectors + part * run + i;
                    const __m256i u = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + 32 * j));
                    unrolled<T>([&](auto t) {
                        pairs[t] = _mm256_add_epi16(pairs[t], _mm256_maddubs_epi16(u, broadcast(x[t].q.data() + 32 * b + 4 * j)));
                    });
                });
                unrolled<T>([&](auto t) { sums[t] = _mm256_add_epi32(sums[t], _mm256_madd_epi16(pairs[t], ones)); });
            });
            const __m256 scale = _mm256_loadu_ps(ws + (b * groups + g) * 8);
            unrolled<T>([&](auto t) {
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[t]), _mm256_mul_ps(scale, _mm256_set1_ps(x[t].d[b])), acc[t]);
            });
        });
        if constexpr (with_offsets<W>) {
            const __m256 min = _mm256_loadu_ps(mins + 8 * b);
            unrolled<T>([&](auto t) { acc[t] = _mm256_fmadd_ps(min, _mm256_set1_ps(x[t].scaled_sums[b]), acc[t]); });
        }
    }
    unrolled<T>([&](auto t) { _mm256_storeu_ps(out + t * ldc, acc[t]); });
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
#pragma GCC diagnostic push  // (GCC's AVX-512 intrinsics start from an undefined vector)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tessera::cpu::avx512vnni {

// A Q4_K or Q5_K super-block's 8 scales times d (lanes 0-7) and 8 mins times dmin (8-15),
// unpacked in vectors as detail::scales_and_mins does in general registers: the scalar
// unpacking was a third of a one-row dot's instructions (a row of 2,048 from the L2: 6.8 ns a
// super-block, 5.1 with these; the same products, so the same bits).
template <class W>
    requires std::is_same_v<W, Q4_K> || std::is_same_v<W, Q5_K>
inline __m512 scales_and_mins(const W& block) noexcept {
    // The 12 bytes as dwords s0 s1 s2 (and 4 bytes beyond, of qh or qs).
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.scales));
    const __m128i a = _mm_shuffle_epi32(s, 0b10'01'10'00);  // s0 s2 s1 s2
    const __m128i b = _mm_shuffle_epi32(s, 0b01'01'00'00);  // s0 s0 s1 s1
    // [s0 & 0x3f, s2 & 0x0f | (s0 >> 2) & 0x30, s1 & 0x3f, (s2 >> 4) & 0x0f | (s1 >> 2) & 0x30]
    const __m128i low = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                      _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    const __m128i high = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    const __m512 scales_mins = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_or_si128(low, high)));
    const __m128 d_dmin = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(block.d.bits | std::uint32_t{block.dmin.bits} << 16)));
    const __m512i halves = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    return _mm512_mul_ps(scales_mins, _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(d_dmin)));
}

// A Q4_K or Q5_K row times T activation rows: out[t] = W · x[t]. Per super-block, 64 bytes of
// qs at a time (h = 0, 1) hold groups 4h and 4h + 2 in their low nibbles, 4h + 1 and 4h + 3 in
// their high ones (bytes 0-31 and 32-63); Q5_K's fifth bits (bit 2j of qh[l] for group 2j,
// 2j + 1 for 2j + 1) are added as 16 under a byte mask. The weights are unpacked once for all T
// rows; each vpdpbusd sums two groups, 8 lanes each, scaled lane by lane by the groups'
// d · scale · xd. Each row's operations are the same whatever T: the same bits for any T.
template <class W, std::size_t T>
    requires std::is_same_v<W, Q4_K> || std::is_same_v<W, Q5_K>
inline void dot_rows(const W* w, const QuantizedRow* x, std::size_t k, float* out) noexcept {
    const __m512i low4 = _mm512_set1_epi8(15);
    // Lanes 0-7 from scale g, 8-15 from g + 2, for g = 0, 1, 4, 5 (the vectors' first groups).
    const __m512i pick[4] = {_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
                             _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3),
                             _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6),
                             _mm512_setr_epi32(5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7)};
    __m512 acc0[T], acc1[T];
    __m256 offsets[T];
    for (std::size_t t = 0; t < T; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps(), offsets[t] = _mm256_setzero_ps();
    for (std::size_t b = 0; b < k / 256; ++b) {
        const W& block = w[b];
        const __m512 scales_mins = avx512vnni::scales_and_mins(block);
        const __m256 scales = _mm512_castps512_ps256(scales_mins);
        const __m256 mins = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(scales_mins), 1));
        __m512i u[4];  // [low, high] of h = 0, then of h = 1
        for (int h = 0; h < 2; ++h) {
            const __m512i q = _mm512_loadu_si512(block.qs + 64 * h);
            u[2 * h] = _mm512_and_si512(q, low4);
            u[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
            if constexpr (std::is_same_v<W, Q5_K>) {
                const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh)));
                const auto bits = [h](int j) {  // groups 4h + j and 4h + j + 2
                    return _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (4 * h + j))),
                                              _mm256_set1_epi8(static_cast<char>(1 << (4 * h + j + 2))), 1);
                };
                const __m512i sixteen = _mm512_set1_epi8(16);
                u[2 * h] = _mm512_mask_add_epi8(u[2 * h], _mm512_test_epi8_mask(qh, bits(0)), u[2 * h], sixteen);
                u[2 * h + 1] = _mm512_mask_add_epi8(u[2 * h + 1], _mm512_test_epi8_mask(qh, bits(1)), u[2 * h + 1], sixteen);
            }
        }
        for (std::size_t t = 0; t < T; ++t) {
            const __m512 scale = _mm512_zextps256_ps512(_mm256_mul_ps(scales, _mm256_loadu_ps(x[t].d.data() + 8 * b)));
            offsets[t] = _mm256_fmadd_ps(mins, _mm256_loadu_ps(x[t].scaled_sums.data() + 8 * b), offsets[t]);
            const std::int8_t* xq = x[t].q_nibble_order.data() + 256 * b;  // groups 0, 2, 1, 3, 4, 6, 5, 7
            for (int h = 0; h < 2; ++h) {
                const __m512i sums_low = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[2 * h], _mm512_loadu_si512(xq + 128 * h));
                const __m512i sums_high = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[2 * h + 1], _mm512_loadu_si512(xq + 128 * h + 64));
                acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums_low), _mm512_permutexvar_ps(pick[2 * h], scale), acc0[t]);
                acc1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums_high), _mm512_permutexvar_ps(pick[2 * h + 1], scale), acc1[t]);
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t) out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t])) - avx2::horizontal_sum(offsets[t]);
}

// A Q5_0 or Q5_1 row times T activation rows, two blocks per vpdpbusd: bytes 0-15 and 16-31
// the low and high nibbles of block b (its weights in order), 32-63 block b + 1's, so x is
// read as stored; the fifth bits are the 64 bits of the two qh, added as 16 under that mask.
// Q5_0's offset −16 starts the integer sums (QuantizedRow::minus_16x); Q5_1's m times each
// block's xd · Σ q, two blocks to a 128-bit FMA.
template <class W, std::size_t T>
    requires std::is_same_v<W, Q5_0> || std::is_same_v<W, Q5_1>
inline void dot_rows(const W* w, const QuantizedRow* x, std::size_t k, float* out) noexcept {
    const __m512i low4 = _mm512_set1_epi8(15), sixteen = _mm512_set1_epi8(16);
    const __m512i shifts = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);  // the high nibbles' 128-bit lanes
    const __m512i pair = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m512 acc[T];
    __m128 offsets[T];
    for (std::size_t t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps(), offsets[t] = _mm_setzero_ps();
    const auto two_floats = [](const float* p) { return _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p))); };
    const std::size_t blocks = k / 32, paired = blocks / 2 * 2;
    for (std::size_t b = 0; b < paired; b += 2) {
        const __m256i two = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b + 1].qs)),
                                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs)));
        // 128-bit lanes [qs b, qs b, qs b+1, qs b+1], the second of each pair shifted down 4.
        const __m512i spread = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_zextsi256_si512(two));
        __m512i u = _mm512_and_si512(_mm512_srlv_epi64(spread, shifts), low4);
        std::uint32_t qh0, qh1;
        std::memcpy(&qh0, w[b].qh, sizeof qh0);
        std::memcpy(&qh1, w[b + 1].qh, sizeof qh1);
        u = _mm512_mask_add_epi8(u, static_cast<__mmask64>(qh0 | std::uint64_t{qh1} << 32), u, sixteen);
        const __m128 d = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(w[b].d.bits), w[b + 1].d.bits, 1));  // d0, d1
        __m128 m = _mm_setzero_ps();  // Q5_1's m0, m1
        if constexpr (std::is_same_v<W, Q5_1>) m = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(w[b].m.bits), w[b + 1].m.bits, 1));
        for (std::size_t t = 0; t < T; ++t) {
            // Q5_0: the sums start at -16 times x's, its weights' offset; Q5_1 adds m · xd · Σ x apart.
            __m512i sums = _mm512_setzero_si512();
            if constexpr (std::is_same_v<W, Q5_0>) sums = _mm512_loadu_si512(x[t].minus_16x.data() + 8 * b);
            sums = _mm512_dpbusd_epi32(sums, u, _mm512_loadu_si512(x[t].q.data() + 32 * b));
            const __m512 scale = _mm512_permutexvar_ps(pair, _mm512_zextps128_ps512(_mm_mul_ps(d, two_floats(x[t].d.data() + b))));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, acc[t]);
            if constexpr (std::is_same_v<W, Q5_1>) offsets[t] = _mm_fmadd_ps(m, two_floats(x[t].scaled_sums.data() + b), offsets[t]);
        }
    }
    for (std::size_t t = 0; t < T; ++t) {
        float s = _mm512_reduce_add_ps(acc[t]);
        if constexpr (std::is_same_v<W, Q5_1>) s += _mm_cvtss_f32(_mm_add_ss(offsets[t], _mm_movehdup_ps(offsets[t])));
        if (paired < blocks) {  // an odd block count's last block, as AVX2 multiplies it
            const std::size_t b = paired;
            const float db = _cvtsh_ss(w[b].d.bits);
            const __m256 sums = _mm256_cvtepi32_ps(avx2::products(avx2::five_bit_quants(w[b]), x[t].q.data() + 32 * b));
            s += avx2::horizontal_sum(sums) * (db * x[t].d[b]);
            if constexpr (std::is_same_v<W, Q5_0>) s += -16.0f * db * x[t].scaled_sums[b];
            else s += _cvtsh_ss(w[b].m.bits) * x[t].scaled_sums[b];
        }
        out[t] = s;
    }
}

// W row · x: dot_rows for one activation row (decoding).
template <class W>
    requires with_offsets<W>
inline float dot(const W* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s;
    dot_rows<W, 1>(w, &x, k, &s);
    return s;
}

}  // namespace tessera::cpu::avx512vnni

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#endif  // TESSERA_HAS_X86_KERNELS
