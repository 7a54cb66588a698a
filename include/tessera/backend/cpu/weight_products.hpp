#pragma once
// Matrix products with weights stored as bf16, Q8_0 or Q4_0 (core/weight_formats.hpp), on the
// host: C(M,N) = A(M,K) · W(N,K)ᵀ + bias with A and C in float.
//
// One row (the decode step, memory-bound): every weight is read once, so the kernels read the
// stored format directly. bf16 is widened to float (exact) and multiplied with the float
// activations. Q8_0 and Q4_0 multiply integers, as llama.cpp does: the activation row is
// quantized once per call to 8 bits in blocks of 32 (a float scale per block, kept in float,
// not rounded to f16 as GGML does), and each block's dot product is an integer sum, scaled by
// the two blocks' scales. With AVX-512 VNNI (checked at run time) that sum is `vpdpbusd`, 64
// weights per instruction; with AVX2 (products_avx2.hpp) `vpmaddubsw` + `vpmaddwd`.
//
// A few rows (a short prompt, a batched decode step; with AVX-512): W is read as stored, once,
// by tiles that multiply each weight vector with several activation rows: bf16 widened into
// the float tiles of matrix_products_avx512.hpp (up to 192 rows), Q8_0 / Q4_0 by integer tiles
// over activations quantized as for one row (2 to 10 rows; with AVX2 alone, 2 to 16 or 32).
//
// More rows (prefill, compute-bound): Q8_0 / Q4_0 with AVX-512 VNNI, a packed integer GEMM
// (64 multiply-adds per instruction); otherwise each task dequantizes a panel of W to float and
// runs the float product on it (the AVX-512 packed kernel or Eigen).
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
    constexpr int shift = std::is_same_v<W, Q4_0> ? 8 : std::is_same_v<W, Q6_K> ? 32 : 128;
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
            for (std::size_t h = 0; h < halves; ++h) sums[t][0][h] = sums[t][1][h] = _mm512_set1_epi32(aoff[(b * halves + h) * packed_rows + t]);
        });
        for (std::size_t j = 0; j < 4; ++j) {
            const GroupPair wp[2] = {w.groups(b, 0, j), w.groups(b, 1, j)};
            const std::int8_t* low = aq + (b * 8 + j) * 16;  // activation groups j and j + 4
            const std::int8_t* high = low + 4 * 16;
            unrolled<T>([&](auto t) {
                std::int32_t four_low, four_high;
                std::memcpy(&four_low, low + t * 4, 4);
                std::memcpy(&four_high, high + t * 4, 4);
                const __m512i x_low = _mm512_set1_epi32(four_low), x_high = _mm512_set1_epi32(four_high);
                for (std::size_t p = 0; p < 2; ++p) {
                    sums[t][p][0] = _mm512_dpbusd_epi32(sums[t][p][0], wp[p].low, x_low);
                    sums[t][p][halves - 1] = _mm512_dpbusd_epi32(sums[t][p][halves - 1], wp[p].high, x_high);
                }
            });
        }
        unrolled<T>([&](auto t) {
            const __m512 da = _mm512_set1_ps(ad[b * packed_rows + t]);
            for (std::size_t p = 0; p < 2; ++p) {
                if constexpr (halves == 1) {
                    acc[t][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[t][p][0]), _mm512_mul_ps(w.scales(b, p), da), acc[t][p]);
                } else {
                    const __m512 both = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[t][p][1]), w.scales(b, p, 1),
                                                        _mm512_mul_ps(_mm512_cvtepi32_ps(sums[t][p][0]), w.scales(b, p, 0)));
                    acc[t][p] = _mm512_fmadd_ps(both, da, acc[t][p]);
                }
            }
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
            for (std::size_t p = 0; p < 2; ++p) sums[g][p][0] = offset, sums[g][p][1] = _mm512_setzero_si512();
        });
        for (std::size_t j = 0; j < 4; ++j) {
            std::int32_t four_low, four_high;
            std::memcpy(&four_low, aq + (b * 8 + j) * 16, 4);
            std::memcpy(&four_high, aq + (b * 8 + j + 4) * 16, 4);
            const __m512i x_low = _mm512_set1_epi32(four_low), x_high = _mm512_set1_epi32(four_high);
            unrolled<G>([&](auto g) {
                for (std::size_t p = 0; p < 2; ++p) {
                    const GroupPair wp = w[g].groups(b, p, j);
                    sums[g][p][0] = _mm512_dpbusd_epi32(sums[g][p][0], wp.low, x_low);
                    sums[g][p][1] = _mm512_dpbusd_epi32(sums[g][p][1], wp.high, x_high);
                }
            });
        }
        const __m512 da = _mm512_set1_ps(ad[b * packed_rows]);
        unrolled<G>([&](auto g) {
            for (std::size_t p = 0; p < 2; ++p) {
                const __m512i sum = _mm512_add_epi32(sums[g][p][0], sums[g][p][1]);
                acc[g][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(w[g].scales(b, p), da), acc[g][p]);
            }
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

namespace tessera::cpu {

// y(N) = W(N,K) · x(K) + bias(N) for stored weights; k a multiple of the format's block.
template <class W>
[[gnu::noinline]] void gemv_weights(ThreadPool& pool, const W* w, const float* x, const float* bias, float* y, std::size_t n,
                                    std::size_t k) {
    constexpr bool integer = !std::is_same_v<W, bf16>;
    // The dot product every row uses, chosen once (Q8_0 / Q4_0 on AVX-512 need VNNI, else they
    // take AVX2's), and the activation row prepared for it.
#if TESSERA_HAS_AVX512_KERNELS
    const KernelLevel level = !integer ? std::min(kernel_level(), KernelLevel::avx512)  // (no AMX dot)
                              : has_avx512_vnni() ? KernelLevel::avx512
                              : has_avx2()        ? KernelLevel::avx2
                                                  : KernelLevel::portable;
#else
    const KernelLevel level = KernelLevel::portable;
#endif
    thread_local QuantizedRow caller_row;  // grows once per calling thread
    QuantizedRow& xq = caller_row;          // (the workers read the caller's, not their own)
    if constexpr (integer) {
        xq.reserve(k);
#if TESSERA_HAS_AVX512_KERNELS
        if (level == KernelLevel::avx512) {
            avx512vnni::quantize_row(xq, x, k);
            if constexpr (!std::is_same_v<W, Q8_0>) xq.template prepare_for<W>(k);  // (Q8_0's one-row dot reads q and d alone)
        } else {
            xq.assign(x, k);
            if (level == KernelLevel::avx2) xq.template prepare_for_avx2<W>(k);
        }
#else
        xq.assign(x, k);  // (the portable dot reads q and d alone)
#endif
    }
    const std::size_t stored = stored_elements<W>(k);
#if TESSERA_HAS_AVX512_KERNELS
    // bf16 weights with vdpbf16ps: x rounded to bf16 once, in the caller's buffer (grows once
    // per calling thread; the workers read the caller's).
    thread_local AlignedBuffer<bf16> caller_xb;
    const bool bf16_x = !integer && level == KernelLevel::avx512 && has_avx512_bf16();
    if (bf16_x) {
        if (caller_xb.size() < k) caller_xb = AlignedBuffer<bf16>(k);
        for (std::size_t i = 0; i < k; ++i) caller_xb.data()[i] = bf16(x[i]);
    }
    const bf16* xb = caller_xb.data();
#endif
    pool.parallel_for(n, 16, [&](std::size_t begin, std::size_t end) {
        // Each row's bytes are prefetched while the one before it is multiplied.
        const std::size_t row_bytes = stored * sizeof(W), ahead = std::max<std::size_t>(1, (2048 + row_bytes - 1) / row_bytes);
        const auto rows = [&](auto dot) {
            for (std::size_t r = begin; r < end; ++r) {
                if (r + ahead < end) {
                    const char* next = reinterpret_cast<const char*>(w + (r + ahead) * stored);
                    for (std::size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(next + b);
                }
                y[r] = dot(w + r * stored, x, xq, k);
            }
        };
#if TESSERA_HAS_AVX512_KERNELS
        if (level == KernelLevel::avx512) {
            if constexpr (integer) {
                rows([](const W* row, const float* v, const QuantizedRow& q, std::size_t d) { return avx512vnni::dot(row, v, q, d); });
            } else if (bf16_x) {
                rows([xb](const W* row, const float*, const QuantizedRow&, std::size_t d) { return avx512vnni::dot_bf16(row, xb, d); });
            } else {
                rows([](const W* row, const float* v, const QuantizedRow&, std::size_t d) { return avx512::dot(row, v, d); });
            }
        } else if (level == KernelLevel::avx2) {
            rows([](const W* row, const float* v, const QuantizedRow& q, std::size_t d) { return avx2::dot(row, v, q, d); });
        } else
#endif
        {
            rows([](const W* row, const float* v, const QuantizedRow& q, std::size_t d) { return portable::dot(row, v, q, d); });
        }
        if (bias != nullptr)
            for (std::size_t r = begin; r < end; ++r) y[r] += bias[r];
    });
}

#if TESSERA_HAS_AVX512_KERNELS
// From 2 up to this many rows, Q8_0 and Q4_0 products use the few-row integer tiles; more
// rows the packed integer GEMM, whose packing of W costs about one pass over the weights
// (measured on the GPT-2 124M shapes, 2 threads: the tiles 3x faster at 2 rows, even at ~12,
// the packed GEMM 2.5x faster at 32). One row stays on gemv_weights, faster for decoding.
inline constexpr std::size_t integer_rows_max = 10;

// Without AVX-512 VNNI, from 2 up to this many rows Q8_0 and Q4_0 products use the AVX2 tiles
// (avx2::integer_columns); more rows dequantize W to float, which AVX2's float FMAs then
// multiply faster than its integer instructions do (vpmaddubsw, vpmaddwd, a conversion and an
// FMA per 32 products and row, against 4 FMAs once W is float). Measured on the 124M shapes
// built for Haswell, 2 threads, prompts of m tokens: the tiles 2.0-2.2x faster at 2 rows,
// 0.9-1.3x at 16; even at ~24 rows for Q8_0 and ~32 for Q4_0 (dearer to dequantize).
template <class W>
inline constexpr std::size_t avx2_integer_rows_max = std::is_same_v<W, Q4_0> ? 32 : 16;

// Up to this many rows, bf16 products keep float activations (the few-row tiles) where the
// CPU has vdpbf16ps; more go to the packed bf16 GEMM (measured even at ~64 rows, 1.6x at 512).
inline constexpr std::size_t bf16_few_rows_max = 64;
// From this many rows bf16 products run on AMX tiles where the CPU has them, below it on the
// few-row float tiles. Measured (124M, 2 threads, tokens/s AMX vs float tiles): 16 rows 400 vs
// 650, 32 rows 770 vs 900, 48 rows 1,000 vs 960, 64 rows 1,290 vs 1,000, 512 rows 2,370 vs 800
// (the packed vdpbf16ps GEMM). With few rows the tiles wait on cold weights: a tile load reads
// 16 rows at once, prefetching them ahead measured no better.
inline constexpr std::size_t amx_rows_min = 48;
#endif

// What a product of m rows with W weights multiplies the weights with: float activations,
// activations rounded to bf16 (bf16 weights with AVX-512 BF16: one row, or more than
// bf16_few_rows_max; on AMX from amx_rows_min rows), or 8-bit ones (Q8_0 and Q4_0: one row
// everywhere, any number with AVX-512 VNNI).
enum class ActivationPrecision { f32, bf16, int8 };
template <class W>
ActivationPrecision activation_precision(std::size_t m) noexcept {
    if constexpr (std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>) {
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512_vnni() || (m <= avx2_integer_rows_max<W> && has_avx2())) return ActivationPrecision::int8;
#endif
        return m == 1 ? ActivationPrecision::int8 : ActivationPrecision::f32;
    } else if constexpr (std::is_same_v<W, Q6_K>) {
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512_vnni()) return ActivationPrecision::int8;
#endif
        return m == 1 ? ActivationPrecision::int8 : ActivationPrecision::f32;
    } else if constexpr (std::is_same_v<W, bf16>) {
#if TESSERA_HAS_AVX512_KERNELS
        if ((m == 1 || m > bf16_few_rows_max) && has_avx512_bf16()) return ActivationPrecision::bf16;
#endif
#if TESSERA_HAS_AMX_KERNELS
        if (m >= amx_rows_min && has_amx()) return ActivationPrecision::bf16;
#endif
        return ActivationPrecision::f32;
    } else {
        return ActivationPrecision::f32;
    }
}

#if TESSERA_HAS_AVX512_KERNELS

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q8_0 / Q4_0 and a few rows: each row of A quantized
// once (as the one-row product does: the same bits with either instruction set), then the
// integer tiles over W as stored, AVX-512 VNNI's or (Avx2) AVX2's.
template <class W, bool Avx2 = false>
void few_rows_integer(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m, std::size_t n,
                      std::size_t k) {
    thread_local std::vector<QuantizedRow> caller_rows;  // grows once per calling thread
    std::vector<QuantizedRow>& rows = caller_rows;        // (the workers fill the caller's)
    if (rows.size() < m) rows.resize(m);
    for (std::size_t i = 0; i < m; ++i) rows[i].reserve(k);
    pool.parallel_for(m, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            if constexpr (Avx2) {
                rows[i].assign(a + i * k, k);
                rows[i].template prepare_for_avx2<W>(k);
            } else {
                avx512vnni::quantize_row(rows[i], a + i * k, k);
                rows[i].template prepare_for<W>(k);
            }
        }
    });
    pool.parallel_for(n, 16, [&](std::size_t begin, std::size_t end) {
        if constexpr (Avx2) avx2::integer_columns(rows.data(), w, c, m, k, n, begin, end);
        else avx512vnni::integer_columns(rows.data(), w, c, m, k, n, begin, end);
        add_bias_columns(c, bias, m, n, begin, end);
    });
}
#endif

// Calls tile.template operator()<T>() with T = min(Max, rows) (rows >= 1) as a compile-time
// constant.
template <std::size_t Max, class Tile>
inline void with_tile_rows(std::size_t rows, Tile&& tile) {
    const std::size_t t = std::min(Max, rows);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (void)((t == I + 1 ? (tile.template operator()<I + 1>(), true) : false) || ...);
    }(std::make_index_sequence<Max>{});
}

// The packed integer GEMM in two halves. First the activations: every row quantized (as the
// one-row product does) and packed 4 rows to a tile, into the caller's buffer. The last tile's
// rows past m are left as they are: the tiles read only rows < m (with_tile_rows; clearing
// them cost a decode step, one row, three rows' worth of byte stores per product).
template <class W>
avx512vnni::PackedActivations& pack_activations(ThreadPool& pool, const float* a, std::size_t m, std::size_t k) {
    using namespace avx512vnni;
    thread_local PackedActivations caller_packed;  // grows once per calling thread
    PackedActivations& packed = caller_packed;     // (the workers fill and read the caller's)
    packed.reserve(m, k, offsets_per_block<W>);
    const std::size_t tiles = (m + packed_rows - 1) / packed_rows, blocks = k / 32;
    pool.parallel_for(tiles, 1, [&](std::size_t begin, std::size_t end) {
        thread_local QuantizedRow row;
        row.reserve(k);
        for (std::size_t tile = begin; tile < end; ++tile) {
            for (std::size_t t = 0; t < packed_rows && tile * packed_rows + t < m; ++t) {
                quantize_row(row, a + (tile * packed_rows + t) * k, k);
                pack_activation_row<W>(row, t, blocks, packed.tile_q(tile), packed.tile_d(tile), packed.tile_offset(tile));
            }
        }
    });
    return packed;
}

// Then every panel of 32 weight rows times every tile: panel(col, cols), called on the thread
// that multiplies it, returns the weight rows [col, col + cols) as packed_tile reads them
// (BytePanels: packed into per-thread room, or a copy packed in advance; or Q4_0 arranged in
// place).
template <class Panel>
void packed_panels_gemm(ThreadPool& pool, avx512vnni::PackedActivations& packed, Panel&& panel, const float* bias, float* c,
                        std::size_t m, std::size_t n, std::size_t k) {
    using namespace avx512vnni;
    const std::size_t tiles = (m + packed_rows - 1) / packed_rows, blocks = k / 32;
    pool.parallel_for(n, 32, [&](std::size_t begin, std::size_t end) {
        for (std::size_t col = begin; col < end; col += 32) {
            const std::size_t cols = std::min<std::size_t>(32, end - col);
            const auto panels = panel(col, cols);
            for (std::size_t tile = 0; tile < tiles; ++tile) {
                float* out = c + tile * packed_rows * n + col;
                with_tile_rows<packed_rows>(m - tile * packed_rows, [&]<std::size_t T>() {
                    packed_tile<T>(packed.tile_q(tile), packed.tile_d(tile), packed.tile_offset(tile), panels, blocks, out, n, cols);
                });
            }
            add_bias_columns(c, bias, m, n, col, col + cols);
        }
    });
}

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q8_0 / Q4_0 and many rows: the packed integer GEMM,
// packing W as it goes (about one pass over the weights per call).
template <class W>
void packed_integer_gemm(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m, std::size_t n,
                         std::size_t k) {
    const std::size_t blocks = k / 32;
    auto& packed = pack_activations<W>(pool, a, m, k);
    packed_panels_gemm(pool, packed, [&](std::size_t col, std::size_t cols) {
        thread_local AlignedBuffer<std::uint8_t> wq;  // one panel's room, grown once per thread
        thread_local AlignedBuffer<float> ws;
        if (wq.size() < 32 * k) wq = AlignedBuffer<std::uint8_t>(32 * k);
        if (ws.size() < 32 * blocks) ws = AlignedBuffer<float>(32 * blocks);
        avx512vnni::pack_weight_panels(w + col * blocks, blocks, cols, wq.data(), ws.data());
        return avx512vnni::BytePanels{wq.data(), ws.data()};
    }, bias, c, m, n, k);
}

// A Q4_0 model's Q6_K head also kept packed (pack_q6_k_panels: 40 bytes per 32 weights instead
// of 26.25), for its products of several rows (a model reserved for batched steps): its tiles
// over the stored super-blocks unpack them again for every 4 activation rows, 2.2x slower than
// the packed GEMM at 16 rows. (A Q8_0 head is arranged in place instead, as a Linear's weights
// are: arranged_weights.hpp.) Empty where the CPU lacks AVX-512 VNNI.
struct PackedIntegerWeights {
    AlignedBuffer<std::uint8_t> q;  // per panel of 32 rows: 32 x k bytes
    AlignedBuffer<float> d;         // per panel: 32 x k / 16 scales
    bool empty() const noexcept { return q.size() == 0; }
};

inline PackedIntegerWeights pack_integer_weights(ThreadPool& pool, const Q6_K* w, std::size_t n, std::size_t k) {
    PackedIntegerWeights p;
    if (!has_avx512_vnni() || k % WeightFormat<Q6_K>::block != 0) return p;
    const std::size_t panels = (n + 31) / 32, stored = stored_elements<Q6_K>(k), scales = k / 32 * avx512vnni::offsets_per_block<Q6_K>;
    p.q = AlignedBuffer<std::uint8_t>(panels * 32 * k);
    p.d = AlignedBuffer<float>(panels * 32 * scales);
    pool.parallel_for(panels, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const std::size_t rows = std::min<std::size_t>(32, n - i * 32);
            avx512vnni::pack_q6_k_panels(w + i * 32 * stored, stored, rows, p.q.data() + i * 32 * k, p.d.data() + i * 32 * scales);
        }
    });
    return p;
}

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias over Q6_K W packed in advance (m >= 2).
inline void prepacked_q6_k_gemm(ThreadPool& pool, const float* a, const PackedIntegerWeights& w, const float* bias, float* c,
                                std::size_t m, std::size_t n, std::size_t k) {
    const std::size_t scales = k / 32 * avx512vnni::offsets_per_block<Q6_K>;
    auto& packed = pack_activations<Q6_K>(pool, a, m, k);
    packed_panels_gemm(pool, packed, [&](std::size_t col, std::size_t) {
        return avx512vnni::SixBitPanels{w.q.data() + col * k, w.d.data() + col * scales};
    }, bias, c, m, n, k);
}

// A(m, k) rounded to bf16 (to nearest, ties to even) and packed `rows_per_tile` rows at a time,
// [pair of k][row] as 32-bit words for `pairs` >= k/2 pairs, rows past m and columns past k
// zero: the activation operand of the vdpbf16ps and AMX products, in the caller's buffer
// (grows once per thread).
inline const AlignedBuffer<std::uint32_t>& pack_bf16_activations(ThreadPool& pool, const float* a, std::size_t m, std::size_t k,
                                                                 std::size_t rows_per_tile, std::size_t pairs) {
    const std::size_t tiles = (m + rows_per_tile - 1) / rows_per_tile;
    thread_local AlignedBuffer<std::uint32_t> caller_packed;  // (the workers fill the caller's)
    AlignedBuffer<std::uint32_t>& packed = caller_packed;
    if (packed.size() < tiles * rows_per_tile * pairs) packed = AlignedBuffer<std::uint32_t>(tiles * rows_per_tile * pairs);
    pool.parallel_for(tiles, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t tile = begin; tile < end; ++tile) {
            std::uint32_t* dst = packed.data() + tile * rows_per_tile * pairs;
            for (std::size_t t = 0; t < rows_per_tile; ++t) {
                const std::size_t i = tile * rows_per_tile + t;
                if (i >= m) {  // the tile's missing rows
                    for (std::size_t j = 0; j < pairs; ++j) dst[j * rows_per_tile + t] = 0;
                    continue;
                }
                // (The bounds tested once per row, not per element: with them in the loop this
                // packing took 6% of a bf16 512-token prompt, profiled.)
                const float* x = a + i * k;
                std::size_t j = 0;
                for (; j < k / 2; ++j)
                    dst[j * rows_per_tile + t] = std::uint32_t{bf16(x[2 * j]).bits} | std::uint32_t{bf16(x[2 * j + 1]).bits} << 16;
                if (k % 2 != 0) dst[j++ * rows_per_tile + t] = bf16(x[k - 1]).bits;
                // The pairs past k (AMX pads k to 32): zero, not what the buffer held before,
                // which the zero weights there would turn into NaN where it was NaN or infinite.
                for (; j < pairs; ++j) dst[j * rows_per_tile + t] = 0;
            }
        }
    });
    return packed;
}

// The vdpbf16ps GEMM over panels of 32 weight rows: panel(col, cols), called on the thread that
// multiplies it, returns rows [col, col + cols) as pack_bf16_panels lays them out, packed into
// per-thread room or arranged so in advance.
template <class Panel>
void bf16_panels_gemm(ThreadPool& pool, const float* a, Panel&& panel, const float* bias, float* c, std::size_t m,
                      std::size_t n, std::size_t k) {
    using namespace avx512vnni;
    constexpr std::size_t rows_per_tile = bf16_packed_rows;
    const std::size_t pairs = (k + 1) / 2, tiles = (m + rows_per_tile - 1) / rows_per_tile;
    const AlignedBuffer<std::uint32_t>& packed = pack_bf16_activations(pool, a, m, k, rows_per_tile, pairs);
    pool.parallel_for(n, 32, [&](std::size_t begin, std::size_t end) {
        for (std::size_t col = begin; col < end; col += 32) {
            const std::size_t cols = std::min<std::size_t>(32, end - col);
            const std::uint16_t* panels = panel(col, cols);
            for (std::size_t tile = 0; tile < tiles; ++tile) {
                with_tile_rows<rows_per_tile>(m - tile * rows_per_tile, [&]<std::size_t T>() {
                    bf16_tile<T>(packed.data() + tile * rows_per_tile * pairs, panels, pairs, c + tile * rows_per_tile * n + col, n, cols);
                });
            }
            add_bias_columns(c, bias, m, n, col, col + cols);
        }
    });
}

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for bf16 weights and many rows: the packed vdpbf16ps GEMM,
// packing W as it goes.
inline void packed_bf16_gemm(ThreadPool& pool, const float* a, const bf16* w, const float* bias, float* c, std::size_t m,
                             std::size_t n, std::size_t k) {
    bf16_panels_gemm(pool, a, [&](std::size_t col, std::size_t cols) -> const std::uint16_t* {
        thread_local AlignedBuffer<std::uint16_t> wp;  // one panel's room, grown once per thread
        const std::size_t pairs = (k + 1) / 2;
        if (wp.size() < 32 * 2 * pairs) wp = AlignedBuffer<std::uint16_t>(32 * 2 * pairs);
        avx512vnni::pack_bf16_panels(w + col * k, k, cols, wp.data());
        return wp.data();
    }, bias, c, m, n, k);
}

#if TESSERA_HAS_AMX_KERNELS
// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for bf16 weights on AMX tiles (products_amx.hpp). Each
// task takes 32 weight rows at a time, as stored, and runs them against every activation tile.
// A tile load reads 32 whole rows of 32-weight steps, so where fewer than 32 rows remain, or k
// is not a multiple of 32, the block is first copied with zeros around it (GPT-2's k, 768 and
// 3072, never needs it).
inline void amx_bf16_gemm(ThreadPool& pool, const float* a, const bf16* w, const float* bias, float* c, std::size_t m,
                          std::size_t n, std::size_t k) {
    using amx::block_rows, amx::tile_rows;
    const std::size_t depth = (k + 31) / 32 * 32, pairs = depth / 2, tiles = (m + tile_rows - 1) / tile_rows;
    const AlignedBuffer<std::uint32_t>& packed = pack_bf16_activations(pool, a, m, k, tile_rows, pairs);
    pool.parallel_for(n, block_rows, [&](std::size_t begin, std::size_t end) {
        thread_local AlignedBuffer<bf16> padded;
        alignas(64) float out[4][tile_rows][tile_rows];
        amx::configure();
        for (std::size_t r = begin; r < end; r += block_rows) {
            const std::size_t rows = std::min(block_rows, end - r);
            const bf16* wb = w + r * k;
            std::size_t stride = k;
            if (r + block_rows > n || depth != k) {
                if (padded.size() < block_rows * depth) padded = AlignedBuffer<bf16>(block_rows * depth);
                std::fill(padded.data(), padded.data() + block_rows * depth, bf16{});
                for (std::size_t i = 0; i < rows; ++i) std::copy(wb + i * k, wb + (i + 1) * k, padded.data() + i * depth);
                wb = padded.data();
                stride = depth;
            }
            for (std::size_t t = 0; t < tiles; t += 2) {
                const bool two = t + 1 < tiles;
                const std::uint32_t* act = packed.data() + t * tile_rows * pairs;
                if (two) amx::block<true>(wb, stride, depth, act, act + tile_rows * pairs, out);
                else amx::block<false>(wb, stride, depth, act, act, out);
                for (std::size_t j = 0; j < (two ? 2u : 1u); ++j)      // activation tiles
                    for (std::size_t i = 0; i * tile_rows < rows; ++i)  // weight tiles
                        amx::store_transposed(out[2 * i + j], c + (t + j) * tile_rows * n + r + i * tile_rows, n,
                                              std::min(tile_rows, m - (t + j) * tile_rows),
                                              std::min(tile_rows, rows - i * tile_rows));
            }
            add_bias_columns(c, bias, m, n, r, r + rows);
        }
        amx::release();
    });
}
#endif

// C(M,N) = A(M,K) · W(N,K)ᵀ + bias(N) for stored weights: one row is gemv_weights; more rows
// dequantize W panel by panel (64 rows) and use the float product.
template <class W>
[[gnu::noinline]] void gemm_weights(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m,
                                    std::size_t n, std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    // bf16: a few rows go through the float tiles, widened as they are loaded.
    if constexpr (std::is_same_v<W, bf16>) {
#if TESSERA_HAS_AMX_KERNELS
        if (m >= amx_rows_min && has_amx()) return amx_bf16_gemm(pool, a, w, bias, c, m, n, k);
#endif
        if (m > bf16_few_rows_max && has_avx512_bf16()) return packed_bf16_gemm(pool, a, w, bias, c, m, n, k);
        if (m > 1 && few_rows_product(pool, a, w, bias, c, m, n, k)) return;
    }
    if constexpr (std::is_same_v<W, Q6_K>) {
        if (m > 1 && has_avx512_vnni()) return few_rows_integer(pool, a, w, bias, c, m, n, k);  // (any m: no packed Q6_K GEMM)
    }
    if constexpr (std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>) {
        if (m > 1 && has_avx512_vnni()) {
            return m <= integer_rows_max ? few_rows_integer(pool, a, w, bias, c, m, n, k)
                                         : packed_integer_gemm(pool, a, w, bias, c, m, n, k);
        }
        if (m > 1 && m <= avx2_integer_rows_max<W> && has_avx2()) return few_rows_integer<W, true>(pool, a, w, bias, c, m, n, k);
    }
#endif
    if (m == 1) return gemv_weights(pool, w, a, bias, c, n, k);
    constexpr std::size_t panel = 64;
    const std::size_t stored = stored_elements<W>(k);
    const ConstMatrixMap A = matrix(a, m, k, k);
    pool.parallel_for(n, panel, [&](std::size_t begin, std::size_t end) {
        // Grows once per thread; aligned alike in every thread, so that no product's summation
        // order depends on which thread ran it.
        thread_local AlignedBuffer<float> dequantized;
        if (dequantized.size() < panel * k) dequantized = AlignedBuffer<float>(panel * k);
        for (std::size_t p = begin; p < end; p += panel) {
            const std::size_t rows = std::min(panel, end - p);
            for (std::size_t r = 0; r < rows; ++r) WeightFormat<W>::dequantize(w + (p + r) * stored, dequantized.data() + r * k, k);
#if TESSERA_HAS_AVX512_KERNELS
            if (m >= avx512::mr && k > 0 && has_avx512()) {
                avx512::gemm_columns(a, dequantized.data(), c + p, m, k, n, 0, rows);
            } else {
                matrix(c + p, m, rows, n).noalias() = A * matrix(dequantized.data(), rows, k, k).transpose();
            }
#else
            matrix(c + p, m, rows, n).noalias() = A * matrix(dequantized.data(), rows, k, k).transpose();
#endif
            add_bias_columns(c, bias, m, n, p, p + rows);
        }
    });
}

}  // namespace tessera::cpu
