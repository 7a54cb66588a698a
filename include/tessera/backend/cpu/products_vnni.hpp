#pragma once
// The AVX-512 kernels of the products with stored weights (weight_products.hpp chooses among
// them): CPU feature checks for VNNI and BF16; Q8_0 / Q4_0 one-row dots on vpdpbusd, the
// few-row integer tiles, the packed integer tiles of the prompt GEMM (Q6_K's panels included);
// bf16's packed vdpbf16ps tiles and one-row dot. Compiled for those instructions in a target
// region of their own, run only where the CPU has them.
#include <algorithm>  // std::min
#include <array>      // std::array
#include <cmath>      // std::fabs, std::nearbyint
#include <cstddef>    // std::size_t
#include <cstdint>    // std::int8_t
#include <cstring>    // std::memcpy
#include <type_traits>  // std::is_same_v, std::integral_constant
#include <utility>    // std::index_sequence, std::pair
#include <vector>     // std::vector

#include <tessera/backend/cpu/aligned_buffer.hpp>  // AlignedBuffer
#include <tessera/backend/cpu/eigen_maps.hpp>              // matrix, ConstVectorMap
#include <tessera/backend/cpu/matrix_products.hpp>         // few_rows_product
#include <tessera/backend/cpu/matrix_products_avx512.hpp>  // avx512::gemm_columns, has_avx512
#include <tessera/backend/cpu/products_amx.hpp>            // amx::block
#include <tessera/backend/cpu/quantized_row.hpp>           // QuantizedRow, portable::dot
#include <tessera/backend/cpu/products_avx2.hpp>           // avx2::dot, avx2::integer_columns
#include <tessera/backend/cpu/products_q6_k.hpp>           // Q6_K's dots and avx512vnni::integer_columns
#include <tessera/backend/cpu/products_k_quants.hpp>       // detail::scales_and_mins
#include <tessera/backend/cpu/thread_pool.hpp>             // ThreadPool
#include <tessera/core/weight_formats.hpp>                 // WeightFormat, Q8_0, Q4_0


#if TESSERA_HAS_AVX512_KERNELS
namespace tessera::cpu {
// AVX-512 with the byte/word and VNNI extensions (Intel since Ice Lake, AMD since Zen 4). Every
// AVX-512 CPU has F16C (and clang 14's __builtin_cpu_supports does not know the name).
inline bool has_avx512_vnni() noexcept {
    static const bool yes = has_avx512() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512vnni");
    return yes;
}
// And the BF16 extension (vdpbf16ps: Intel since Cooper Lake, AMD since Zen 4).
inline bool has_avx512_bf16() noexcept {
    static const bool yes = has_avx512_vnni() && __builtin_cpu_supports("avx512bf16");
    return yes;
}
}  // namespace tessera::cpu

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,f16c,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,f16c,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tessera::cpu::avx512vnni {

// The 64 weights of blocks b, b + 1 as signed bytes.
inline __m512i weights(const Q8_0* w, std::size_t b) noexcept {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b + 1].qs)), 1);
}
// (Named functions, not lambdas, throughout: a lambda's function-pointer thunk would not get
// this region's target attribute, and returning a vector from it breaks the ABI.)
// Blocks b and b + 1 of a Q4_0 row as unsigned nibbles 0-15, in the order they unpack:
// [b 0-15, b+1 0-15, b 16-31, b+1 16-31] (the activations are reordered to match, once per row).
inline __m512i nibbles(const Q4_0* w, std::size_t b) noexcept {
    const __m256i packed = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs))),
                                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b + 1].qs)), 1);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(packed), _mm256_srli_epi16(packed, 4), 1);
    return _mm512_and_si512(both, _mm512_set1_epi8(15));
}

// The integer dot products of blocks b, b + 1 with x: 16 int32 lanes, 0-7 the first block's
// partial sums, 8-15 the second's. Q8_0: vpdpbusd multiplies unsigned by signed bytes, so |w|
// times x with w's sign (that way round a weight of -128, which GGUF's format allows, is 128
// unsigned and exact; x never is, being quantized to ±127). Q4_0: the nibbles are the unsigned
// operand and x the signed one; the -8 of every weight is the accumulator's starting value, -8
// times each lane's four x.
inline __m512i pair_sums(const Q8_0* w, const QuantizedRow& x, std::size_t b) noexcept {
    const __m512i wv = weights(w, b);
    const __m512i xv = _mm512_loadu_si512(x.q.data() + b * 32);
    const __m512i signed_x = _mm512_mask_sub_epi8(xv, _mm512_movepi8_mask(wv), _mm512_setzero_si512(), xv);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(wv), signed_x);
}
inline __m512i pair_sums(const Q4_0* w, const QuantizedRow& x, std::size_t b) noexcept {
    return _mm512_dpbusd_epi32(_mm512_loadu_si512(x.minus_8x.data() + b * 8), nibbles(w, b),
                               _mm512_loadu_si512(x.q_pairs.data() + b * 32));
}

// The f16 scales of blocks [b, b + 8) of one row, widened (AVX2's, inlined here: this region's
// target includes that one's).
using avx2::weight_scales;

// The scales of blocks [b, b + 8), w's times x's, in lanes 0-7 (the eight f16 scales widened
// at once: converting them one by one measured ~1.5x slower overall).
template <class W>
inline __m512 eight_scales(const W* w, const QuantizedRow& x, std::size_t b) noexcept {
    return _mm512_castps256_ps512(_mm256_mul_ps(weight_scales(w, b), _mm256_loadu_ps(x.d.data() + b)));
}

// Pair p's two scales (scales[2p], scales[2p + 1]) over its partial sums: Q8_0's lanes 0-7 are
// the first block's, 8-15 the second's; Q4_0's alternate by four (the nibbles' order).
template <class W>
inline __m512 spread(__m512 scales, int p) noexcept {
    const __m512i first = std::is_same_v<W, Q8_0> ? _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
                                                  : _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
    return _mm512_permutexvar_ps(_mm512_add_epi32(first, _mm512_set1_epi32(2 * p)), scales);
}

// W row · x for a Q8_0 or Q4_0 row of k weights (k a multiple of 32): eight blocks per step
// (four vpdpbusd of 64 weights) into two accumulators.
template <class W>
inline float dot(const W* w, const float*, const QuantizedRow& x, std::size_t k) noexcept {
    const std::size_t nb = k / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        const __m512 scales = eight_scales(w, x, b);
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pair_sums(w, x, b)), spread<W>(scales, 0), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pair_sums(w, x, b + 2)), spread<W>(scales, 1), acc1);
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pair_sums(w, x, b + 4)), spread<W>(scales, 2), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pair_sums(w, x, b + 6)), spread<W>(scales, 3), acc1);
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    if (b < nb) s += portable::dot(w, nullptr, x, k, b);  // the last blocks of a row not a multiple of 256
    return s;
}

// f(0), ..., f(N-1) with compile-time indices, as avx512::unrolled, but compiled for this
// region's target: GCC inlines a function only into one whose target includes its own, so
// the VNNI lambdas would become calls inside avx512::unrolled, and the tiles' registers memory.
// The tiles' fixed loops (rows, panels, the groups of a block) go through it, not through a
// plain `for`, which GCC 12 unrolls only at -O3: at -O2 the sums would stay in memory.
template <std::size_t N, class F>
inline void unrolled(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (f(std::integral_constant<std::size_t, I>{}), ...); }
    (std::make_index_sequence<N>{});
}

// The few-row tiles (W rows times several activation rows): vpdpbusd needs one unsigned
// operand, and here it is always the weights, so that a weight vector is prepared once and
// used for every activation row: Q8_0's bytes + 128 (the sign bit flipped), Q4_0's nibbles.
// Each activation row's offsets (-128 or -8 times each group of four) start the integer sums,
// which are then exact: the same integers as the one-row kernel's.
inline __m512i unsigned_weights(const Q8_0* w, std::size_t b) noexcept {
    return _mm512_xor_si512(weights(w, b), _mm512_set1_epi8(static_cast<char>(0x80)));
}
inline __m512i unsigned_weights(const Q4_0* w, std::size_t b) noexcept { return nibbles(w, b); }
template <class W>
inline const std::int8_t* signed_operand(const QuantizedRow& x) noexcept {
    if constexpr (std::is_same_v<W, Q4_0>) return x.q_pairs.data();
    else return x.q.data();
}
template <class W>
inline const std::int32_t* offsets(const QuantizedRow& x) noexcept {
    if constexpr (std::is_same_v<W, Q4_0>) return x.minus_8x.data();
    else return x.minus_128x.data();
}
// c[t·ldc + r] = W row r · x[t] for R rows of W (`stored` blocks apart) and T quantized
// activation rows: eight blocks per step, the weights unpacked once for all T rows. One
// accumulator per (r, t), so a row's result does not depend on what else is in the batch.
template <class W, std::size_t R, std::size_t T>
inline void integer_tile(const W* w, std::size_t stored, const QuantizedRow* x, float* c, std::size_t ldc, std::size_t k) noexcept {
    const std::size_t nb = k / 32;
    __m512 acc[R][T];
    unrolled<R>([&](auto r) { unrolled<T>([&](auto t) { acc[r][t] = _mm512_setzero_ps(); }); });
    std::size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        __m256 ws[R];
        __m512i u[R][4];
        unrolled<R>([&](auto r) {
            ws[r] = weight_scales(w + r * stored, b);
            unrolled<4>([&](auto p) { u[r][p] = unsigned_weights(w + r * stored, b + 2 * p); });
        });
        unrolled<T>([&](auto t) {
            const __m256 xs = _mm256_loadu_ps(x[t].d.data() + b);
            const std::int8_t* xq = signed_operand<W>(x[t]) + b * 32;
            const std::int32_t* off = offsets<W>(x[t]) + b * 8;
            unrolled<R>([&](auto r) {
                const __m512 scales = _mm512_castps256_ps512(_mm256_mul_ps(ws[r], xs));
                unrolled<4>([&](auto p) {
                    const __m512i sums = _mm512_dpbusd_epi32(_mm512_loadu_si512(off + 16 * p), u[r][p], _mm512_loadu_si512(xq + 64 * p));
                    acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), spread<W>(scales, static_cast<int>(p)), acc[r][t]);
                });
            });
        });
    }
    unrolled<R>([&](auto r) {
        unrolled<T>([&](auto t) {
            float s = _mm512_reduce_add_ps(acc[r][t]);
            if (b < nb) s += portable::dot(w + r * stored, nullptr, x[t], k, b);  // the last blocks of a row not a multiple of 256
            c[t * ldc + r] = s;
        });
    });
}

// Up to four activation rows at once, for R weight rows.
template <class W, std::size_t R>
inline void integer_tiles(const W* w, std::size_t stored, const QuantizedRow* x, float* c, std::size_t ldc, std::size_t k,
                          std::size_t rows) noexcept {
    constexpr std::size_t t_max = 4;
    std::size_t t = 0;
    for (; t + t_max <= rows; t += t_max) integer_tile<W, R, t_max>(w, stored, x + t, c + t * ldc, ldc, k);
    switch (rows - t) {
        case 3: integer_tile<W, R, 3>(w, stored, x + t, c + t * ldc, ldc, k); break;
        case 2: integer_tile<W, R, 2>(w, stored, x + t, c + t * ldc, ldc, k); break;
        case 1: integer_tile<W, R, 1>(w, stored, x + t, c + t * ldc, ldc, k); break;
        default: break;
    }
}

// Rows [n_begin, n_end) of W times m quantized activation rows: C(m, ldc) columns n_begin..n_end.
// One weight row per tile: with two or four, the interleaved row streams read memory at half
// the speed (measured, cold weights), more than the shared activation loads save.
template <class W>
inline void integer_columns(const QuantizedRow* x, const W* w, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                            std::size_t n_begin, std::size_t n_end) noexcept {
    const std::size_t stored = k / 32;
    for (std::size_t r = n_begin; r < n_end; ++r) integer_tiles<W, 1>(w + r * stored, stored, x, c + r, ldc, k, m);
}

// QuantizedRow::assign with vectors: 32 values per step, the same bits.
inline void quantize_row(QuantizedRow& row, const float* x, std::size_t k) noexcept {
    for (std::size_t b = 0; b < k / 32; ++b) {
        const __m512 lo = _mm512_loadu_ps(x + b * 32), hi = _mm512_loadu_ps(x + b * 32 + 16);
        // (_mm512_abs_ps, not an and-not with -0: that one is AVX-512 DQ, outside this region's target)
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
        row.d[b] = amax / 127.0f;
        const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
        // cvtps2dq rounds to nearest, ties to even, as nearbyint does in the default mode.
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row.q.data() + b * 32), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(lo, id))));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row.q.data() + b * 32 + 16),
                         _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(hi, id))));
    }
}

// Many rows (a long prompt) times Q8_0 / Q4_0: a packed integer GEMM. Per call, each task
// packs 32 weight rows as unsigned bytes (as unsigned_weights makes them) in the order one
// vpdpbusd wants them: per block, 8 vectors of [16 rows][4 bytes], so that a vector's 16 int32
// lanes are 16 weight rows and one broadcast activation group feeds them all: 64 multiply-adds
// per instruction with no per-block reshuffling (the one-row kernel's spread and its 8 lanes
// per block). The activations are quantized as for one row, packed 4 rows at a time.
inline constexpr std::size_t packed_rows = 4;  // activation rows per tile

// Activation rows [0, m) as tiles of 4 (missing rows zero): per tile, per block, 8 groups of
// [4 rows][4 bytes], then the rows' scales and offsets (-128 or -8 times the block's sum, the
// shift of unsigned_weights; Q6_K: -32 times each half's, whose weights have a scale per 16)
// [block][half][row].
template <class W>
inline constexpr std::size_t offsets_per_block = std::is_same_v<W, Q6_K> ? 2 : 1;
struct PackedActivations {
    AlignedBuffer<std::int8_t> q;
    AlignedBuffer<float> d;
    AlignedBuffer<std::int32_t> offset;
    std::size_t blocks = 0, offsets = 1;  // offsets per block and row

    void reserve(std::size_t m, std::size_t k, std::size_t offsets_per_row_block) {
        const std::size_t tiles = (m + packed_rows - 1) / packed_rows;
        blocks = k / 32;
        offsets = offsets_per_row_block;
        if (q.size() < tiles * packed_rows * k) q = AlignedBuffer<std::int8_t>(tiles * packed_rows * k);
        if (d.size() < tiles * packed_rows * blocks) d = AlignedBuffer<float>(tiles * packed_rows * blocks);
        if (offset.size() < tiles * packed_rows * blocks * offsets) offset = AlignedBuffer<std::int32_t>(tiles * packed_rows * blocks * offsets);
    }
    std::int8_t* tile_q(std::size_t tile) noexcept { return q.data() + tile * packed_rows * blocks * 32; }
    float* tile_d(std::size_t tile) noexcept { return d.data() + tile * packed_rows * blocks; }
    std::int32_t* tile_offset(std::size_t tile) noexcept { return offset.data() + tile * packed_rows * blocks * offsets; }
};

// Row t (< 4) of a tile from its quantized row.
template <class W>
inline void pack_activation_row(const QuantizedRow& x, std::size_t t, std::size_t blocks, std::int8_t* q, float* d,
                                std::int32_t* offset) noexcept {
    // (Q5_0: its −16; Q4_K / Q5_K / Q5_1's mins are float, added apart: packed_offset_gemm.)
    constexpr int shift = std::is_same_v<W, Q4_0> ? 8 : std::is_same_v<W, Q5_0> ? 16 : std::is_same_v<W, Q6_K> ? 32 : with_offsets<W> ? 0 : 128;
    constexpr std::size_t halves = offsets_per_block<W>;
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::int8_t* block = x.q.data() + b * 32;
        // (Whole groups of 4 bytes and a separate sum: byte by byte, with the sum in the same
        // loop, this packing took 7% of a 16-sequence Q8_0 step.)
        for (std::size_t g = 0; g < 8; ++g) std::memcpy(q + (b * 8 + g) * 16 + t * 4, block + 4 * g, 4);
        int sums[2] = {};
        for (std::size_t i = 0; i < 32; ++i) sums[halves == 2 ? i / 16 : 0] += block[i];
        d[b * packed_rows + t] = x.d[b];
        for (std::size_t h = 0; h < halves; ++h) offset[(b * halves + h) * packed_rows + t] = -shift * sums[h];
    }
}

// Weight rows [0, rows) (rows <= 32) as two panels of 16: per block, per panel, 8 vectors of
// [16 rows][4 unsigned bytes] (wq) and 16 scales (ws). Missing rows get scale 0.
template <class W>
inline void pack_weight_panels(const W* w, std::size_t stored, std::size_t rows, std::uint8_t* wq, float* ws) noexcept {
    for (std::size_t r = 0; r < 32; ++r) {
        const std::size_t panel = r / 16, lane = r % 16;
        for (std::size_t b = 0; b < stored; ++b) {
            std::uint8_t u[32];
            float scale = 0.0f;
            if (r < rows) {
                const W& block = w[r * stored + b];
                scale = static_cast<float>(block.d);
                for (std::size_t e = 0; e < 32; ++e) {
                    if constexpr (std::is_same_v<W, Q4_0>) u[e] = static_cast<std::uint8_t>(e < 16 ? block.qs[e] & 15 : block.qs[e - 16] >> 4);
                    else u[e] = static_cast<std::uint8_t>(block.qs[e] ^ 0x80);
                }
            } else {
                for (std::uint8_t& v : u) v = 0;
            }
            std::uint8_t* dst = wq + (b * 2 + panel) * 512 + lane * 4;
            for (std::size_t g = 0; g < 8; ++g)
                for (std::size_t i = 0; i < 4; ++i) dst[g * 64 + i] = u[4 * g + i];
            ws[(b * 2 + panel) * 16 + lane] = scale;
        }
    }
}

// Sixteen rows' 8 words each (rows[r]: 32 bytes) as 8 vectors of 16 words: out[g] holds word g
// of rows 0-15 in lanes 0-15 (an 8 x 8 transpose in each 256-bit half of [row r, row r + 8]).
inline void transpose_16_rows(const __m256i* rows, __m512i* out) noexcept {
    __m512i z[8], t[8];
    for (int r = 0; r < 8; ++r) z[r] = _mm512_inserti64x4(_mm512_castsi256_si512(rows[r]), rows[r + 8], 1);
    for (int r = 0; r < 8; r += 2) t[r] = _mm512_unpacklo_epi32(z[r], z[r + 1]), t[r + 1] = _mm512_unpackhi_epi32(z[r], z[r + 1]);
    // z[4i + j]: words j, j + 4 (j < 4) of rows 4i..4i+3 (and of their rows + 8) in each 128-bit lane
    for (int i = 0; i < 2; ++i) {
        z[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        z[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        z[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        z[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), second = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int j = 0; j < 4; ++j) {
        out[j] = _mm512_permutex2var_epi64(z[j], first, z[4 + j]);
        out[j + 4] = _mm512_permutex2var_epi64(z[j], second, z[4 + j]);
    }
}

// Q4_K / Q5_K / Q5_0 / Q5_1 weight rows [0, rows) (rows <= 32; `stored` blocks of their own
// per row) in pack_weight_panels' layout, per block of 32: the unsigned quants (0-31), the
// rows' scales (Q4_K / Q5_K: d · the group's scale; Q5_0 / Q5_1: d) and in `mins` what each
// row adds per unit of the block's activation sum ([block][row of 32]: −dmin · the group's min,
// Q5_1's m; Q5_0's −16 d is an integer offset, the activations' shift). Missing rows get 0.
// Per panel of 16 rows and stored block, each row's blocks of 32 are unpacked as vectors, then
// transposed 16 rows at a time: stored 4 bytes at a time row by row, the packing took most of a
// 16-token prompt's Q4_K products (bench/RESULTS.md, K-quants fourth part).
template <class W>
    requires with_offsets<W>
inline void pack_offset_panels(const W* w, std::size_t stored, std::size_t rows, std::uint8_t* wq, float* ws, float* mins) noexcept {
    constexpr std::size_t per = WeightFormat<W>::block / 32;  // blocks of 32 per stored block
    for (std::size_t panel = 0; panel < 2; ++panel) {
        for (std::size_t sb = 0; sb < stored; ++sb) {
            __m256i quants[per][16];
            for (std::size_t lane = 0; lane < 16; ++lane) {
                const std::size_t r = panel * 16 + lane;
                float* scale = ws + (sb * per * 2 + panel) * 16 + lane;  // block sb * per + i: + 32 i
                float* min = mins + sb * per * 32 + r;                   // + 32 i
                if (r >= rows) {
                    for (std::size_t i = 0; i < per; ++i) quants[i][lane] = _mm256_setzero_si256(), scale[32 * i] = 0.0f, min[32 * i] = 0.0f;
                    continue;
                }
                const W& block = w[r * stored + sb];
                const float d = _cvtsh_ss(block.d.bits);
                if constexpr (per == 8) {  // Q4_K, Q5_K
                    const detail::ScalesAndMins packed = detail::scales_and_mins(block.scales);
                    const float dmin = _cvtsh_ss(block.dmin.bits);
                    for (std::size_t g = 0; g < 8; ++g) {
                        scale[32 * g] = d * static_cast<float>((packed.scales >> (8 * g)) & 255);
                        min[32 * g] = -dmin * static_cast<float>((packed.mins >> (8 * g)) & 255);
                    }
                    for (int h = 0; h < 4; ++h) avx2::k_quant_groups(block, h, quants[2 * h][lane], quants[2 * h + 1][lane]);
                } else {  // Q5_0, Q5_1
                    quants[0][lane] = avx2::five_bit_quants(block);
                    scale[0] = d;
                    min[0] = 0.0f;
                    if constexpr (std::is_same_v<W, Q5_1>) min[0] = _cvtsh_ss(block.m.bits);
                }
            }
            for (std::size_t i = 0; i < per; ++i) {
                __m512i words[8];
                transpose_16_rows(quants[i], words);
                std::uint8_t* dst = wq + ((sb * per + i) * 2 + panel) * 512;
                for (std::size_t g = 0; g < 8; ++g) _mm512_store_si512(dst + g * 64, words[g]);
            }
        }
    }
}

// C rows [0, m) x columns [0, cols) (cols <= 32; row stride ldc) += sums(m, blocks) ·
// mins(blocks, 32)ᵀ: each activation row's block sums times the panel's mins (pack_offset_panels).
inline void add_mins(const float* sums, const float* mins, std::size_t blocks, float* c, std::size_t ldc, std::size_t m,
                     std::size_t cols) noexcept {
    const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xffffu : (1u << cols) - 1u);
    const __mmask16 m1 = static_cast<__mmask16>(cols >= 32 ? 0xffffu : cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
    for (std::size_t t = 0; t < m; ++t) {
        __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
        for (std::size_t b = 0; b < blocks; ++b) {
            const __m512 x = _mm512_set1_ps(sums[t * blocks + b]);
            lo = _mm512_fmadd_ps(_mm512_loadu_ps(mins + b * 32), x, lo);
            hi = _mm512_fmadd_ps(_mm512_loadu_ps(mins + b * 32 + 16), x, hi);
        }
        float* out = c + t * ldc;
        _mm512_mask_storeu_ps(out, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, out), lo));
        _mm512_mask_storeu_ps(out + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, out + 16), hi));
    }
}

// Two panels of 16 weight rows as pack_weight_panels packs them (per call, or once in advance):
// what packed_tile reads through groups(b, panel, j), the vpdpbusd operands of groups j and
// j + 4 of block b, and scales(b, panel), the panel's 16 scales of block b.
struct GroupPair {
    __m512i low, high;  // groups j and j + 4
};
struct BytePanels {
    const std::uint8_t* wq;
    const float* ws;
    GroupPair groups(std::size_t b, std::size_t panel, std::size_t j) const noexcept {
        const std::uint8_t* v = wq + (b * 2 + panel) * 512 + j * 64;
        return {_mm512_load_si512(v), _mm512_load_si512(v + 256)};
    }
    __m512 scales(std::size_t b, std::size_t panel) const noexcept { return _mm512_load_ps(ws + (b * 2 + panel) * 16); }
};

// Q6_K weight rows [0, rows) (rows <= 32; `stored` super-blocks each) as two panels of 16 in
// pack_weight_panels' layout, per block of 32: 8 vectors of [16 rows][4 unsigned quants 0-63]
// (wq), then, since Q6_K scales each 16 weights, the rows' d * scale for the block's first
// and second 16 (ws [block][panel][half][16]). Missing rows get scale 0.
inline void pack_q6_k_panels(const Q6_K* w, std::size_t stored, std::size_t rows, std::uint8_t* wq, float* ws) noexcept {
    for (std::size_t r = 0; r < 32; ++r) {
        const std::size_t panel = r / 16, lane = r % 16;
        for (std::size_t sb = 0; sb < stored; ++sb) {
            std::uint8_t q[256] = {};
            float d = 0.0f;
            if (r < rows) {
                WeightFormat<Q6_K>::quants(w[r * stored + sb], q);
                d = static_cast<float>(w[r * stored + sb].d);
            }
            for (std::size_t i = 0; i < 8; ++i) {
                const std::size_t b = sb * 8 + i;
                std::uint8_t* dst = wq + (b * 2 + panel) * 512 + lane * 4;
                for (std::size_t g = 0; g < 8; ++g)
                    for (std::size_t e = 0; e < 4; ++e) dst[g * 64 + e] = q[32 * i + 4 * g + e];
                for (std::size_t half = 0; half < 2; ++half)
                    ws[((b * 2 + panel) * 2 + half) * 16 + lane] = r < rows ? d * static_cast<float>(w[r * stored + sb].scales[2 * i + half]) : 0.0f;
            }
        }
    }
}

// Q6_K rows packed by pack_q6_k_panels: the groups as BytePanels reads them, and a scale per
// half block.
struct SixBitPanels {
    const std::uint8_t* wq;
    const float* ws;
    GroupPair groups(std::size_t b, std::size_t panel, std::size_t j) const noexcept { return BytePanels{wq, ws}.groups(b, panel, j); }
    __m512 scales(std::size_t b, std::size_t panel, std::size_t half) const noexcept {
        return _mm512_load_ps(ws + ((b * 2 + panel) * 2 + half) * 16);
    }
};

// Scales per block of 32 in a panel layout: one (BytePanels, Q8_0 / Q4_0 arranged), or one per
// half of 16 (SixBitPanels).
template <class Panels>
inline constexpr std::size_t scale_halves = 1;
template <>
inline constexpr std::size_t scale_halves<SixBitPanels> = 2;

// C rows [0, T) x columns [0, cols) (cols <= 32; row stride ldc) = a tile of activations times
// two weight panels (BytePanels, Q4_0 / Q8_0 arranged as arranged_weights.hpp lays them out, or
// SixBitPanels). Per block: int32 sums started at the rows' offsets, 8 vpdpbusd per row and
// panel, then scaled (w's 16 scales times the row's) into float accumulators. With a scale per
// half block (Q6_K) the groups of each half (j and j + 4: weights 0-15 and 16-31) are summed
// apart, from that half's offset, and the tile runs two activation rows at a time: four rows'
// 16 integer sums and 8 accumulators would not fit in the 32 registers (measured 1.7x slower at
// 4 rows than two passes of 2, which read the panel again from L1). Integer sums are exact, so
// a row's result is the same bits whatever the panels' source and whatever else is in the tile.
template <std::size_t T, class Panels>
inline void packed_tile(const std::int8_t* aq, const float* ad, const std::int32_t* aoff, const Panels& w, std::size_t blocks,
                        float* c, std::size_t ldc, std::size_t cols) noexcept {
    constexpr std::size_t halves = scale_halves<Panels>;
    if constexpr (halves == 2 && T > 2) {
        packed_tile<2>(aq, ad, aoff, w, blocks, c, ldc, cols);
        return packed_tile<T - 2>(aq + 2 * 4, ad + 2, aoff + 2, w, blocks, c + 2 * ldc, ldc, cols);
    }
    __m512 acc[T][2];
    unrolled<T>([&](auto t) { acc[t][0] = acc[t][1] = _mm512_setzero_ps(); });
    for (std::size_t b = 0; b < blocks; ++b) {
        __m512i sums[T][2][halves];  // [row][panel][half]
        unrolled<T>([&](auto t) {
            unrolled<halves>([&](auto h) { sums[t][0][h] = sums[t][1][h] = _mm512_set1_epi32(aoff[(b * halves + h) * packed_rows + t]); });
        });
        unrolled<4>([&](auto j) {
            const GroupPair wp[2] = {w.groups(b, 0, j), w.groups(b, 1, j)};
            const std::int8_t* low = aq + (b * 8 + j) * 16;  // activation groups j and j + 4
            const std::int8_t* high = low + 4 * 16;
            unrolled<T>([&](auto t) {
                std::int32_t four_low, four_high;
                std::memcpy(&four_low, low + t * 4, 4);
                std::memcpy(&four_high, high + t * 4, 4);
                const __m512i x_low = _mm512_set1_epi32(four_low), x_high = _mm512_set1_epi32(four_high);
                unrolled<2>([&](auto p) {
                    sums[t][p][0] = _mm512_dpbusd_epi32(sums[t][p][0], wp[p].low, x_low);
                    sums[t][p][halves - 1] = _mm512_dpbusd_epi32(sums[t][p][halves - 1], wp[p].high, x_high);
                });
            });
        });
        unrolled<T>([&](auto t) {
            const __m512 da = _mm512_set1_ps(ad[b * packed_rows + t]);
            unrolled<2>([&](auto p) {
                if constexpr (halves == 1) {
                    acc[t][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[t][p][0]), _mm512_mul_ps(w.scales(b, p), da), acc[t][p]);
                } else {
                    const __m512 both = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[t][p][1]), w.scales(b, p, 1),
                                                        _mm512_mul_ps(_mm512_cvtepi32_ps(sums[t][p][0]), w.scales(b, p, 0)));
                    acc[t][p] = _mm512_fmadd_ps(both, da, acc[t][p]);
                }
            });
        });
    }
    const auto lanes = [](std::size_t n) { return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << n) - 1u); };
    const __mmask16 m0 = lanes(cols), m1 = lanes(cols > 16 ? cols - 16 : 0);
    unrolled<T>([&](auto t) {
        _mm512_mask_storeu_ps(c + t * ldc, m0, acc[t][0]);
        _mm512_mask_storeu_ps(c + t * ldc + 16, m1, acc[t][1]);
    });
}

// One activation row (a decode step) times G groups of 32 weight rows (one scale per block:
// BytePanels or ArrangedPanels), C[0, 32 G): packed_tile<1> over each group, the G groups in
// the same pass, so that each thread reads G streams through memory instead of one. Measured
// on Zen 4 (one row, 2 threads, cold arranged Q8_0, medians of 12 alternating rounds): G = 4
// streamed 1.09-1.16x packed_tile<1>'s rate, G = 2 1.04-1.15x, G = 8 0.84x (its 48 live
// vectors spill). The 8 vpdpbusd of a block run as two chains of 4 (packed_tile's one chain of
// 8 waits ~40 cycles a block); integer sums are exact, so each result is packed_tile<1>'s bits.
template <std::size_t G, class Panels>
    requires(scale_halves<Panels> == 1)
inline void packed_row(const std::int8_t* aq, const float* ad, const std::int32_t* aoff, const std::array<Panels, G>& w,
                       std::size_t blocks, float* c) noexcept {
    __m512 acc[G][2];
    unrolled<G>([&](auto g) { acc[g][0] = acc[g][1] = _mm512_setzero_ps(); });
    for (std::size_t b = 0; b < blocks; ++b) {
        __m512i sums[G][2][2];  // [group][panel][groups j, groups j + 4]
        const __m512i offset = _mm512_set1_epi32(aoff[b * packed_rows]);
        unrolled<G>([&](auto g) {
            unrolled<2>([&](auto p) { sums[g][p][0] = offset, sums[g][p][1] = _mm512_setzero_si512(); });
        });
        unrolled<4>([&](auto j) {
            std::int32_t four_low, four_high;
            std::memcpy(&four_low, aq + (b * 8 + j) * 16, 4);
            std::memcpy(&four_high, aq + (b * 8 + j + 4) * 16, 4);
            const __m512i x_low = _mm512_set1_epi32(four_low), x_high = _mm512_set1_epi32(four_high);
            unrolled<G>([&](auto g) {
                unrolled<2>([&](auto p) {
                    const GroupPair wp = w[g].groups(b, p, j);
                    sums[g][p][0] = _mm512_dpbusd_epi32(sums[g][p][0], wp.low, x_low);
                    sums[g][p][1] = _mm512_dpbusd_epi32(sums[g][p][1], wp.high, x_high);
                });
            });
        });
        const __m512 da = _mm512_set1_ps(ad[b * packed_rows]);
        unrolled<G>([&](auto g) {
            unrolled<2>([&](auto p) {
                const __m512i sum = _mm512_add_epi32(sums[g][p][0], sums[g][p][1]);
                acc[g][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(w[g].scales(b, p), da), acc[g][p]);
            });
        });
    }
    unrolled<G>([&](auto g) {
        _mm512_storeu_ps(c + g * 32, acc[g][0]);
        _mm512_storeu_ps(c + g * 32 + 16, acc[g][1]);
    });
}

// Many rows times bf16 weights: a packed GEMM on vdpbf16ps, which multiplies pairs of bf16 and
// adds both products to a float lane: 32 multiply-adds per instruction, twice an FMA's. The
// activations are rounded to bf16 (to nearest, ties to even) as llama.cpp does for bf16
// weights; that rounding is this path's only difference from the float one. Packed as the
// integer GEMM: per pair of k, two vectors of [16 weight rows][2 bf16]; activations 8 rows at
// a time, [pair][row] as 32-bit words: 16 accumulators, enough independent chains for a CPU
// that issues vdpbf16ps on two ports (on one port, Sapphire Rapids, 4 and 8 rows measured
// alike).
inline constexpr std::size_t bf16_packed_rows = 8;  // activation rows per tile
inline void pack_bf16_panels(const bf16* w, std::size_t k, std::size_t rows, std::uint16_t* wp) noexcept {
    const std::size_t pairs = (k + 1) / 2;
    for (std::size_t r = 0; r < 32; ++r) {
        const std::size_t panel = r / 16, lane = r % 16;
        for (std::size_t j = 0; j < pairs; ++j) {
            for (std::size_t i = 0; i < 2; ++i) {
                const std::size_t e = 2 * j + i;
                wp[(j * 2 + panel) * 32 + lane * 2 + i] = r < rows && e < k ? w[r * k + e].bits : std::uint16_t{0};
            }
        }
    }
}

template <std::size_t T>
inline void bf16_tile(const std::uint32_t* ap, const std::uint16_t* wp, std::size_t pairs, float* c, std::size_t ldc,
                      std::size_t cols) noexcept {
    __m512 acc[T][2];
    unrolled<T>([&](auto t) { acc[t][0] = acc[t][1] = _mm512_setzero_ps(); });
    for (std::size_t j = 0; j < pairs; ++j) {
        const __m512bh w0 = (__m512bh)_mm512_load_si512(wp + (j * 2) * 32);
        const __m512bh w1 = (__m512bh)_mm512_load_si512(wp + (j * 2 + 1) * 32);
        unrolled<T>([&](auto t) {
            const __m512bh x = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[j * bf16_packed_rows + t]));
            acc[t][0] = _mm512_dpbf16_ps(acc[t][0], x, w0);
            acc[t][1] = _mm512_dpbf16_ps(acc[t][1], x, w1);
        });
    }
    const auto lanes = [](std::size_t n) { return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << n) - 1u); };
    const __mmask16 m0 = lanes(cols), m1 = lanes(cols > 16 ? cols - 16 : 0);
    unrolled<T>([&](auto t) {
        _mm512_mask_storeu_ps(c + t * ldc, m0, acc[t][0]);
        _mm512_mask_storeu_ps(c + t * ldc + 16, m1, acc[t][1]);
    });
}

// One activation row (a decode step; ap: its pairs packed alone, one row per tile) times G
// groups of 32 weight rows as pack_bf16_panels lays them out, C[0, 32 G): bf16_tile<1> over
// each group, the G groups in the same pass, so that each thread reads G streams through
// memory, as packed_row does for Q8_0. Each output's chain of vdpbf16ps is bf16_tile<1>'s: the
// same bits. Measured on Zen 4 (2 threads, cold arranged weights, medians of 12 alternating
// rounds, against the tile of one row with its 8-row activation packing): G = 4 1.08-1.21x,
// G = 1 1.07-1.10x.
template <std::size_t G>
inline void bf16_row(const std::uint32_t* ap, const std::array<const std::uint16_t*, G>& wp, std::size_t pairs, float* c) noexcept {
    __m512 acc[G][2];
    unrolled<G>([&](auto g) { acc[g][0] = acc[g][1] = _mm512_setzero_ps(); });
    for (std::size_t j = 0; j < pairs; ++j) {
        const __m512bh x = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[j]));
        unrolled<G>([&](auto g) {
            acc[g][0] = _mm512_dpbf16_ps(acc[g][0], x, (__m512bh)_mm512_load_si512(wp[g] + (j * 2) * 32));
            acc[g][1] = _mm512_dpbf16_ps(acc[g][1], x, (__m512bh)_mm512_load_si512(wp[g] + (j * 2 + 1) * 32));
        });
    }
    unrolled<G>([&](auto g) {
        _mm512_storeu_ps(c + g * 32, acc[g][0]);
        _mm512_storeu_ps(c + g * 32 + 16, acc[g][1]);
    });
}

// W row · x for bf16 W and x rounded to bf16 (xb): vdpbf16ps, 32 products per instruction, no
// widening of W. Decoding with bf16 weights, measured against widening W to float and FMA (the
// same run, 124M): 63 -> 75 tokens/s. llama.cpp rounds the activations of bf16 products so too.
inline float dot_bf16(const bf16* w, const bf16* xb, std::size_t k) noexcept {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::size_t i = 0;
    for (; i + 64 <= k; i += 64) {
        acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_loadu_si512(w + i), (__m512bh)_mm512_loadu_si512(xb + i));
        acc1 = _mm512_dpbf16_ps(acc1, (__m512bh)_mm512_loadu_si512(w + i + 32), (__m512bh)_mm512_loadu_si512(xb + i + 32));
    }
    for (; i < k; i += 32) {
        const std::size_t n = std::min<std::size_t>(32, k - i);
        const __mmask32 lanes = n == 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1;
        acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_maskz_loadu_epi16(lanes, w + i), (__m512bh)_mm512_maskz_loadu_epi16(lanes, xb + i));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

}  // namespace tessera::cpu::avx512vnni

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#endif  // TESSERA_HAS_AVX512_KERNELS
