#pragma once
// Matrix products with AVX2, FMA and F16C, for x86 CPUs without AVX-512 (Intel before Ice Lake
// servers and its client cores, AMD before Zen 4), and Q8_0 / Q4_0 on AVX-512 CPUs without VNNI
// (Skylake-X): the one-row dots of decoding (bf16, Q8_0, Q4_0) and few-row tiles (float or bf16
// W; Q8_0 / Q4_0 W) that read W as stored. Compiled for those instructions by a target pragma
// and called only where kernel_level() allows, as the AVX-512 kernels are.
//
// Q8_0 / Q4_0 per block of 32: vpmaddubsw (unsigned by signed bytes, pairs into 16 bits: at
// most 2 * 127 * 127, no saturation), vpmaddwd (pairs of those into 8 int32 lanes), widened to
// float and scaled by the two blocks' scales. The integer partial sums are exact; only the
// order of the float additions differs from the portable loops.
#include <algorithm>    // std::min
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int8_t, std::int32_t
#include <cstring>      // std::memcpy
#include <type_traits>  // std::integral_constant
#include <utility>      // std::index_sequence

#include <tessera/backend/cpu/kernel_level.hpp>    // TESSERA_HAS_X86_KERNELS
#include <tessera/backend/cpu/quantized_row.hpp>  // QuantizedRow, portable::dot

#if TESSERA_HAS_X86_KERNELS
#include <immintrin.h>  // AVX2, FMA, F16C intrinsics

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace tessera::cpu::avx2 {

inline float horizontal_sum(__m256 v) noexcept {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// vpmaddubsw multiplies unsigned by signed bytes. Q8_0: |w| times x with w's sign (that way
// round a weight of -128, which GGUF's format allows, is 128 unsigned and exact; x is
// quantized to ±127). Q4_0: the nibbles 0-15 (the low ones are weights 0-15, the high ones
// 16-31) times x, and the -8 of every weight is added once per block as -8 times the block's
// sum of x, times the two scales (QuantizedRow::prepare_for_avx2).
inline __m256i load32(const std::int8_t* p) noexcept { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256i unsigned_weights(const Q8_0& w) noexcept { return _mm256_abs_epi8(load32(w.qs)); }
inline __m256i unsigned_weights(const Q4_0& w) noexcept {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(15));
}

// Block b's integer dot product with row x in 8 int32 lanes, widened to float; `u` is the
// block's unsigned_weights (made once for every row of a tile).
inline __m256 block_sums(const Q8_0& w, __m256i u, const QuantizedRow& x, std::size_t b) noexcept {
    const __m256i pairs = _mm256_maddubs_epi16(u, _mm256_sign_epi8(load32(x.q.data() + b * 32), load32(w.qs)));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}
inline __m256 block_sums(const Q4_0&, __m256i u, const QuantizedRow& x, std::size_t b) noexcept {
    const __m256i pairs = _mm256_maddubs_epi16(u, load32(x.q.data() + b * 32));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// The f16 scales of blocks [b, b + 8) of one row, widened at once.
template <class W>
inline __m256 weight_scales(const W* w, std::size_t b) noexcept {
    return _mm256_cvtph_ps(_mm_setr_epi16(static_cast<short>(w[b].d.bits), static_cast<short>(w[b + 1].d.bits),
                                          static_cast<short>(w[b + 2].d.bits), static_cast<short>(w[b + 3].d.bits),
                                          static_cast<short>(w[b + 4].d.bits), static_cast<short>(w[b + 5].d.bits),
                                          static_cast<short>(w[b + 6].d.bits), static_cast<short>(w[b + 7].d.bits)));
}

// f(0), ..., f(N-1) with compile-time indices, compiled for this region's target (GCC inlines
// a function only into one whose target includes its own), so the tiles' accumulators stay in
// registers.
template <std::size_t N, class F>
inline void unrolled(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (f(std::integral_constant<std::size_t, I>{}), ...); }
    (std::make_index_sequence<N>{});
}

// One Q8_0 or Q4_0 weight row (k weights, k a multiple of 32) times T activation rows:
// out[t * stride] = W row · x[t]. Eight blocks per step: their scales widened at once and
// multiplied by each row's, each block's unsigned weights made once for all T rows. Each row is
// summed alone in a fixed order (two accumulators, alternating blocks; Q4_0's offsets in a
// third), so its result has the same bits in a tile of any T as alone (dot is the tile of one).
template <std::size_t T, class W>
    requires std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>
inline void dot_rows(const W* w, const QuantizedRow* x, std::size_t k, float* out, std::size_t stride) noexcept {
    constexpr bool q4 = std::is_same_v<W, Q4_0>;
    const std::size_t nb = k / 32;
    __m256 acc[T][2], offset[T];
    unrolled<T>([&](auto t) { acc[t][0] = acc[t][1] = offset[t] = _mm256_setzero_ps(); });
    std::size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        const __m256 dw = weight_scales(w, b);
        __m256 scales[T];
        unrolled<T>([&](auto t) {
            scales[t] = _mm256_mul_ps(dw, _mm256_loadu_ps(x[t].d.data() + b));
            if constexpr (q4) offset[t] = _mm256_fmadd_ps(dw, _mm256_loadu_ps(x[t].minus_8_sum.data() + b), offset[t]);
        });
        unrolled<8>([&](auto i) {
            const __m256i u = unsigned_weights(w[b + i]);
            unrolled<T>([&](auto t) {
                const __m256 scale = _mm256_permutevar8x32_ps(scales[t], _mm256_set1_epi32(static_cast<int>(i)));
                acc[t][i % 2] = _mm256_fmadd_ps(block_sums(w[b + i], u, x[t], b + i), scale, acc[t][i % 2]);
            });
        });
    }
    float tail[T] = {};  // the last nb % 8 blocks, one scale at a time
    for (; b < nb; ++b) {
        const __m256i u = unsigned_weights(w[b]);
        const float dw = _cvtsh_ss(w[b].d.bits);
        unrolled<T>([&](auto t) {
            acc[t][0] = _mm256_fmadd_ps(block_sums(w[b], u, x[t], b), _mm256_set1_ps(dw * x[t].d[b]), acc[t][0]);
            if constexpr (q4) tail[t] += dw * x[t].minus_8_sum[b];
        });
    }
    unrolled<T>([&](auto t) {
        out[t * stride] = horizontal_sum(_mm256_add_ps(acc[t][0], acc[t][1])) + (horizontal_sum(offset[t]) + tail[t]);
    });
}

// W row · x for one Q8_0 or Q4_0 row.
template <class W>
    requires std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>
inline float dot(const W* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    float s;
    dot_rows<1>(w, &x, k, &s, 1);
    return s;
}

// Rows [n_begin, n_end) of W times m quantized activation rows (C(m, ldc), those columns), four
// activation rows per tile, then the rest.
template <class W>
inline void integer_columns(const QuantizedRow* x, const W* w, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                            std::size_t n_begin, std::size_t n_end) noexcept {
    const std::size_t stored = k / 32;
    for (std::size_t r = n_begin; r < n_end; ++r) {
        std::size_t t = 0;
        for (; t + 4 <= m; t += 4) dot_rows<4>(w + r * stored, x + t, k, c + t * ldc + r, ldc);
        switch (m - t) {
            case 3: dot_rows<3>(w + r * stored, x + t, k, c + t * ldc + r, ldc); break;
            case 2: dot_rows<2>(w + r * stored, x + t, k, c + t * ldc + r, ldc); break;
            case 1: dot_rows<1>(w + r * stored, x + t, k, c + t * ldc + r, ldc); break;
            default: break;
        }
    }
}

// QuantizedRow::assign with vectors: 32 values per step, the same bits (cvtps2dq rounds to
// nearest, ties to even, as nearbyint does in the default mode; the scaled values are within
// ±127, so the saturating packs are exact).
inline void quantize_row(QuantizedRow& row, const float* x, std::size_t k) noexcept {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (std::size_t b = 0; b < k / 32; ++b) {
        __m256 v[4], amax = _mm256_setzero_ps();
        unrolled<4>([&](auto i) {
            v[i] = _mm256_loadu_ps(x + b * 32 + 8 * i);
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[i]));
        });
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        const float largest = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
        row.d[b] = largest / 127.0f;
        const __m256 id = _mm256_set1_ps(largest != 0.0f ? 127.0f / largest : 0.0f);
        __m256i q[4];
        unrolled<4>([&](auto i) { q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id)); });
        // packs work within 128-bit lanes: [0 1 4 5 | 2 3 6 7] in 16 bits, then bytes in the order
        // 0 2 4 6 1 3 5 7 of 32-bit groups, put back in order by one permute.
        const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(row.q.data() + b * 32),
                            _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
}

// Four activation bytes in every 32-bit lane. (A function, not a lambda: a lambda here that
// returns a vector fails -Wpsabi in a unit compiled without AVX.)
inline __m256i broadcast(const std::int8_t* q) noexcept {
    std::int32_t four;
    std::memcpy(&four, q, 4);
    return _mm256_set1_epi32(four);
}

// Q8_0 / Q4_0 weights arranged in panels of 8 rows (arranged_weights.hpp: per block, vector j's
// 32-bit lane r holds row r's qs[4j, 4j + 4), then the 8 rows' f16 scales) times T <= 4
// activation rows: out[t * ldc + r] = W row r · x[t] for the panel's 8 rows. Each vector of 4
// weights per row meets the same 4 activations, broadcast to every lane, so one vpmaddubsw
// serves 8 rows (the tiles over W as stored serve one). Q4_0's nibbles 0-15 by ±127 make pairs
// of at most 2 · 15 · 127, so a block's 8 pairs of vectors add in 16 bits (at most 30,480)
// before one vpmaddwd; Q8_0's pairs (up to 2 · 128 · 127) are widened to 32 bits at once.
// Each row and activation row is summed in a fixed order, so a result has the same bits in a
// tile of any T (one decode row is a tile of one).
template <std::size_t T, class W>
inline void panel_tile(const std::uint8_t* panel, const QuantizedRow* x, std::size_t blocks, float* out, std::size_t ldc) noexcept {
    constexpr bool q4 = std::is_same_v<W, Q4_0>;
    constexpr std::size_t vectors = sizeof(W::qs) / 4, block_bytes = 8 * sizeof(W);
    const __m256i ones = _mm256_set1_epi16(1), low_nibbles = _mm256_set1_epi8(15);
    __m256 acc[T];
    unrolled<T>([&](auto t) { acc[t] = _mm256_setzero_ps(); });
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::uint8_t* v = panel + b * block_bytes;
        __m256i sums[T];
        unrolled<T>([&](auto t) { sums[t] = _mm256_setzero_si256(); });
        unrolled<vectors>([&](auto j) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 32 * j));
            if constexpr (q4) {
                const __m256i low = _mm256_and_si256(raw, low_nibbles), high = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low_nibbles);
                unrolled<T>([&](auto t) {
                    const std::int8_t* q = x[t].q.data() + 32 * b + 4 * j;
                    sums[t] = _mm256_add_epi16(sums[t], _mm256_maddubs_epi16(low, broadcast(q)));
                    sums[t] = _mm256_add_epi16(sums[t], _mm256_maddubs_epi16(high, broadcast(q + 16)));
                });
            } else {
                const __m256i u = _mm256_abs_epi8(raw);
                unrolled<T>([&](auto t) {
                    const __m256i pairs = _mm256_maddubs_epi16(u, _mm256_sign_epi8(broadcast(x[t].q.data() + 32 * b + 4 * j), raw));
                    sums[t] = _mm256_add_epi32(sums[t], _mm256_madd_epi16(pairs, ones));
                });
            }
        });
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 32 * vectors)));
        unrolled<T>([&](auto t) {
            const __m256i whole = q4 ? _mm256_madd_epi16(sums[t], ones) : sums[t];
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(whole), _mm256_mul_ps(dw, _mm256_set1_ps(x[t].d[b])), acc[t]);
            if constexpr (q4) acc[t] = _mm256_fmadd_ps(dw, _mm256_set1_ps(x[t].minus_8_sum[b]), acc[t]);
        });
    }
    unrolled<T>([&](auto t) { _mm256_storeu_ps(out + t * ldc, acc[t]); });
}

// Eight bf16 weights widened to float (exact: a bf16 is a float's upper half).
inline __m256 widen(const bf16* w) noexcept {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16));
}

// W row · x for a bf16 row of k weights: 32 per step into four accumulators, then 8 at a time,
// then the last k % 8 one by one.
inline float dot(const bf16* w, const float* x, const QuantizedRow&, std::size_t k) noexcept {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    std::size_t i = 0;
    for (; i + 32 <= k; i += 32) {
        for (std::size_t a = 0; a < 4; ++a)
            acc[a] = _mm256_fmadd_ps(widen(w + i + 8 * a), _mm256_loadu_ps(x + i + 8 * a), acc[a]);
    }
    for (; i + 8 <= k; i += 8) acc[0] = _mm256_fmadd_ps(widen(w + i), _mm256_loadu_ps(x + i), acc[0]);
    float s = horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < k; ++i) s += static_cast<float>(w[i]) * x[i];
    return s;
}

// Few rows of A (2 to few_rows_max: a short prompt, a batched decode step) times float or bf16
// W as stored (packing W would cost more than the product): a tile of R weight rows times T
// activation rows, R·T accumulators of 8 lanes along k, each W vector loaded once for the T
// rows. c[t·ldc + r] = W row r · A row t. Each dot product is summed in one accumulator in a
// fixed order, so a row's result is the same bits whatever else is in the product.
inline __m256 load8(const float* w) noexcept { return _mm256_loadu_ps(w); }
inline __m256 load8(const bf16* w) noexcept { return widen(w); }
// The last k % 8 of a row through a zeroed copy (once per row and tile).
template <class E>
inline __m256 load_tail(const E* w, std::size_t n) noexcept {
    alignas(32) float tail[8] = {};
    for (std::size_t i = 0; i < n; ++i) tail[i] = static_cast<float>(w[i]);
    return _mm256_load_ps(tail);
}

// Float or bf16 weights arranged in place (arranged_weights.hpp: float in panels of 16 rows,
// [k][16]; bf16 for AVX2 in groups of 32, [k][32]) times T activation rows (stride lda):
// c[t · ldc + r] = W row r · A row t (+ bias[r] unless null, added as the tile is stored) for
// the rows of P streams (stream p at rows + p · stream_stride, its k-th 8 · V values at + k ·
// step). Decode (T = 1) takes a group of 32 rows: float's two panels, bf16's one stream (a line
// per k), prefetched 2 KiB ahead. More rows take 16 rows six at a time: 12 accumulators, 2
// weight vectors and a broadcast activation of AVX2's 16 registers, one line of `next` fetched
// per k (lines [0, next_last], then the last again: no branch in the loop, whose accumulators
// GCC otherwise keeps in memory). Each activation is
// broadcast and meets 16 rows per pair of FMAs, where the tiles over W as stored sum each dot
// product across the lanes of its own accumulator. Every output is one fused multiply-add
// chain over k in order from 0 (as AVX-512's arranged tile), so a row's result has the same
// bits in any tile.
template <std::size_t T, std::size_t P, std::size_t V, class E>
inline void panel_rows_tile(const E* rows, std::size_t stream_stride, std::size_t step, std::size_t k, const float* a, std::size_t lda,
                            const float* bias, float* c, std::size_t ldc, const char* next = nullptr, std::size_t next_last = 0) noexcept {
    constexpr std::size_t ahead = 2048;  // bytes
    __m256 acc[T][P * V];
    unrolled<T>([&](auto t) { unrolled<P * V>([&](auto v) { acc[t][v] = _mm256_setzero_ps(); }); });
    for (std::size_t i = 0; i < k; ++i) {
        if constexpr (T == 1) {
            unrolled<P>([&](auto p) {
                const auto* line = reinterpret_cast<const char*>(rows + p * stream_stride + i * step) + ahead;
                for (std::size_t b = 0; b < step * sizeof(E); b += 64) _mm_prefetch(line + b, _MM_HINT_T0);
            });
        } else {
            _mm_prefetch(next + 64 * std::min(i, next_last), _MM_HINT_T0);
        }
        __m256 w[P * V];
        unrolled<P * V>([&](auto v) { w[v] = load8(rows + v / V * stream_stride + i * step + 8 * (v % V)); });
        unrolled<T>([&](auto t) {
            const __m256 x = _mm256_broadcast_ss(a + t * lda + i);
            unrolled<P * V>([&](auto v) { acc[t][v] = _mm256_fmadd_ps(x, w[v], acc[t][v]); });
        });
    }
    unrolled<P * V>([&](auto v) {
        const __m256 b = bias != nullptr ? _mm256_loadu_ps(bias + 8 * v) : _mm256_setzero_ps();
        unrolled<T>([&](auto t) { _mm256_storeu_ps(c + t * ldc + 8 * v, bias != nullptr ? _mm256_add_ps(acc[t][v], b) : acc[t][v]); });
    });
}

// Columns [n_begin, n_end) (multiples of 32) of C(m, ldc) = A(m, k) · W(·, k)ᵀ + bias (over all
// the columns; null: none) for W arranged in panels of Width rows, [k][Width] (16 or 32).
template <std::size_t Width, class E>
inline void panel_rows_columns(const float* a, const E* w, const float* bias, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                               std::size_t n_begin, std::size_t n_end) noexcept {
    const auto bias_at = [&](std::size_t r) { return bias != nullptr ? bias + r : nullptr; };
    if (m == 1) {
        for (std::size_t r = n_begin; r < n_end; r += 32) {
            if constexpr (Width == 32) panel_rows_tile<1, 1, 4>(w + r * k, 0, 32, k, a, k, bias_at(r), c + r, ldc);
            else panel_rows_tile<1, 2, 2>(w + r * k, 16 * k, 16, k, a, k, bias_at(r), c + r, ldc);
        }
        return;
    }
    // While a strip's tiles run, they fetch the next group of the range (a line per k) in slices,
    // one per tile, so that its first tile reads it from the cache rather than from memory
    // (short prompts gain most: bench/RESULTS.md); the range's last group fetches its own lines.
    const std::size_t strip_tiles = (m + 5) / 6, group_tiles = Width / 16 * strip_tiles, slice = (k + group_tiles - 1) / group_tiles;
    for (std::size_t r = n_begin; r < n_end; r += 16) {
        const E* rows = w + r / Width * Width * k + r % Width;  // 16 rows of a panel
        const std::size_t group_end = (r / Width + 1) * Width;
        const auto* next = reinterpret_cast<const char*>(group_end < n_end ? w + group_end * k : rows);
        std::size_t t = 0, tile = r % Width / 16 * strip_tiles;  // the group's tiles counted from its first strip
        const auto tile_rows = [&]<std::size_t T>() {
            const char* from = next + 64 * std::min(k - 1, slice * tile++);
            panel_rows_tile<T, 1, 2>(rows, 0, Width, k, a + t * k, k, bias_at(r), c + t * ldc + r, ldc, from, slice - 1);
        };
        for (; t + 6 <= m; t += 6) tile_rows.template operator()<6>();
        switch (m - t) {
            case 5: tile_rows.template operator()<5>(); break;
            case 4: tile_rows.template operator()<4>(); break;
            case 3: tile_rows.template operator()<3>(); break;
            case 2: tile_rows.template operator()<2>(); break;
            case 1: tile_rows.template operator()<1>(); break;
            default: break;
        }
    }
}

// Up to this many rows of A, few_rows_columns; more go to Eigen's packed product. Measured on
// the 124M shapes built for Haswell, 2 threads, prompts of m tokens: the tiles 1.3-1.6x faster
// (f32) and 1.2-1.5x (bf16) at 2 rows, 1.0-1.3x at 4, even at ~8, 0.9x at 16 and less beyond
// (AVX2's 16 registers hold a 2 x 4 tile; the packed kernel's is larger).
template <class E>
inline constexpr std::size_t few_rows_max = 8;

template <std::size_t R, std::size_t T, class E>
inline void few_rows_tile(const E* w, const float* a, float* c, std::size_t ldc, std::size_t k) noexcept {
    __m256 acc[R][T];
    unrolled<R>([&](auto r) { unrolled<T>([&](auto t) { acc[r][t] = _mm256_setzero_ps(); }); });
    const std::size_t full = k & ~std::size_t{7};
    for (std::size_t i = 0; i < full; i += 8) {
        __m256 wv[R];
        unrolled<R>([&](auto r) { wv[r] = load8(w + r * k + i); });
        unrolled<T>([&](auto t) {
            const __m256 av = _mm256_loadu_ps(a + t * k + i);
            unrolled<R>([&](auto r) { acc[r][t] = _mm256_fmadd_ps(wv[r], av, acc[r][t]); });
        });
    }
    if (full != k) {
        unrolled<R>([&](auto r) {
            const __m256 wv = load_tail(w + r * k + full, k - full);
            unrolled<T>([&](auto t) { acc[r][t] = _mm256_fmadd_ps(wv, load_tail(a + t * k + full, k - full), acc[r][t]); });
        });
    }
    unrolled<R>([&](auto r) { unrolled<T>([&](auto t) { c[t * ldc + r] = horizontal_sum(acc[r][t]); }); });
}

// Columns [n_begin, n_end) of C(m, ldc) = A(m, k) · W(·, k)ᵀ: two weight rows times four
// activation rows at a time (8 accumulators, 2 weight vectors and an activation vector of
// AVX2's 16 registers), then the rest.
template <class E>
inline void few_rows_columns(const float* a, const E* w, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                             std::size_t n_begin, std::size_t n_end) noexcept {
    const auto tiles = [&]<std::size_t R>(std::size_t r) {
        std::size_t t = 0;
        for (; t + 4 <= m; t += 4) few_rows_tile<R, 4>(w + r * k, a + t * k, c + t * ldc + r, ldc, k);
        switch (m - t) {
            case 3: few_rows_tile<R, 3>(w + r * k, a + t * k, c + t * ldc + r, ldc, k); break;
            case 2: few_rows_tile<R, 2>(w + r * k, a + t * k, c + t * ldc + r, ldc, k); break;
            case 1: few_rows_tile<R, 1>(w + r * k, a + t * k, c + t * ldc + r, ldc, k); break;
            default: break;
        }
    };
    std::size_t r = n_begin;
    for (; r + 2 <= n_end; r += 2) tiles.template operator()<2>(r);
    if (r < n_end) tiles.template operator()<1>(r);
}

}  // namespace tessera::cpu::avx2

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // TESSERA_HAS_X86_KERNELS
