#pragma once
// Which kernel a product with stored weights takes for how many rows: the row counts where the
// paths change (measured: bench/RESULTS.md), what the activations are rounded to on each path,
// and with_tile_rows, which turns a run-time row count into a tile's compile-time one.
#include <algorithm>  // std::min
#include <cstddef>    // std::size_t
#include <type_traits>  // std::is_same_v
#include <utility>    // std::index_sequence

#include <tessera/backend/cpu/kernel_level.hpp>   // has_avx2
#include <tessera/backend/cpu/products_amx.hpp>   // has_amx
#include <tessera/backend/cpu/products_vnni.hpp>  // has_avx512_vnni, has_avx512_bf16
#include <tessera/core/weight_formats.hpp>        // Q8_0, Q4_0, Q6_K, with_offsets

namespace tessera::cpu {

#if TESSERA_HAS_AVX512_KERNELS
// From 2 up to this many rows, Q8_0 and Q4_0 products use the few-row integer tiles; more
// rows the packed integer GEMM, whose packing of W costs about one pass over the weights
// (measured on the GPT-2 124M shapes, 2 threads: the tiles 3x faster at 2 rows, even at ~12,
// the packed GEMM 2.5x faster at 32). One row stays on gemv_weights, faster for decoding.
inline constexpr std::size_t integer_rows_max = 10;

// Without AVX-512 VNNI, for Q8_0 and Q4_0 weights as stored (a Linear's are arranged in panels
// of 8 rows where it has 32 or more: arranged_weights.hpp; these are the others), from 2 up to
// this many rows the products use the AVX2 tiles
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

// Up to rows_by_dots_max<W>() rows, Q4_K, Q5_K, Q5_0 and Q5_1 products (and Q6_K's without
// VNNI, from 2 rows) run the dots for each pair of weight row and activation row (rows_by_dots,
// each weight row unpacked once per 4 activation rows). More rows: with AVX-512 VNNI the packed
// integer GEMM (packed_offset_gemm, which packs the weights on every call and is faster from 5
// rows: bench/RESULTS.md, K-quants fourth part; Q6_K has its own few-row tiles); with AVX2
// panels of 8 weight rows packed per call (avx2_offset_gemm, faster than the dots from 4 rows:
// bench/RESULTS.md, issue #34 sixth part); otherwise W dequantized to float (gemm_weights).
inline constexpr std::size_t dot_rows_max = 4;
inline constexpr std::size_t avx2_dot_rows_max = 3;
inline constexpr std::size_t dot_rows_max_without_vnni = 8;  // the portable dots
template <class W>
inline std::size_t rows_by_dots_max() noexcept {
#if TESSERA_HAS_AVX512_KERNELS
    if (has_avx512_vnni()) return std::is_same_v<W, Q6_K> ? 0 : dot_rows_max;
    if (has_avx2()) return avx2_dot_rows_max;
#endif
    return std::is_same_v<W, Q6_K> ? 0 : dot_rows_max_without_vnni;
}

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
    } else if constexpr (std::is_same_v<W, Q6_K> || with_offsets<W>) {
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512_vnni() || has_avx2()) return ActivationPrecision::int8;
#endif
        return m == 1 || m <= rows_by_dots_max<W>() ? ActivationPrecision::int8 : ActivationPrecision::f32;
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

// Calls tile.template operator()<T>() with T = min(Max, rows) (rows >= 1) as a compile-time
// constant.
template <std::size_t Max, class Tile>
inline void with_tile_rows(std::size_t rows, Tile&& tile) {
    const std::size_t t = std::min(Max, rows);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (void)((t == I + 1 ? (tile.template operator()<I + 1>(), true) : false) || ...);
    }(std::make_index_sequence<Max>{});
}

}  // namespace tessera::cpu
