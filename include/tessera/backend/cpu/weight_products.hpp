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
//
// These are the products over W as stored. A Linear's weights and a tied head's table are
// arranged in place once loaded where the CPU allows (arranged_weights.hpp: with AVX2 or
// AVX-512), and their products, of any number of rows, run the tiles over that order instead.
//
// This header is the dispatch (gemm_weights); the paths live by concern in product_paths.hpp
// (which path for how many rows), stored_row_products.hpp (one row, and few-row dots),
// integer_gemm.hpp (Q8_0 / Q4_0 / K-quant integer GEMMs), bf16_gemm.hpp (vdpbf16ps and AMX).
#include <algorithm>  // std::min
#include <cstddef>    // std::size_t
#include <type_traits>  // std::is_same_v

#include <tessera/backend/cpu/aligned_buffer.hpp>       // AlignedBuffer
#include <tessera/backend/cpu/bf16_gemm.hpp>            // packed_bf16_gemm, amx_bf16_gemm
#include <tessera/backend/cpu/eigen_maps.hpp>           // matrix, add_bias_columns
#include <tessera/backend/cpu/integer_gemm.hpp>         // few_rows_integer, packed_integer_gemm, packed_offset_gemm
#include <tessera/backend/cpu/matrix_products.hpp>      // few_rows_product
#include <tessera/backend/cpu/matrix_products_avx512.hpp>  // avx512::gemm_columns
#include <tessera/backend/cpu/product_paths.hpp>        // the row counts
#include <tessera/backend/cpu/stored_row_products.hpp>  // gemv_weights, rows_by_dots
#include <tessera/backend/cpu/thread_pool.hpp>          // ThreadPool
#include <tessera/core/weight_formats.hpp>              // WeightFormat

namespace tessera::cpu {

// C(M,N) = A(M,K) · W(N,K)ᵀ + bias(N) for stored weights: one row is gemv_weights (or for the
// K-quants and Q5_0 / Q5_1, up to rows_by_dots_max<W>() rows rows_by_dots, more packed_offset_gemm
// with VNNI); otherwise more rows dequantize W panel by panel (64 rows) and use the float product.
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
    if constexpr (std::is_same_v<W, Q6_K>) {
        if (m > 1 && m <= rows_by_dots_max<W>()) return rows_by_dots(pool, a, w, bias, c, m, n, k);
#if TESSERA_HAS_AVX512_KERNELS
        if (m > 1 && has_avx2()) return avx2_offset_gemm(pool, a, w, bias, c, m, n, k);  // (without VNNI: above)
#endif
    }
    if constexpr (with_offsets<W>) {
        if (m <= rows_by_dots_max<W>()) return rows_by_dots(pool, a, w, bias, c, m, n, k);
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512_vnni()) return packed_offset_gemm(pool, a, w, bias, c, m, n, k);
        if (has_avx2()) return avx2_offset_gemm(pool, a, w, bias, c, m, n, k);
#endif
    } else {
        if (m == 1) return gemv_weights(pool, w, a, bias, c, n, k);
    }
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
