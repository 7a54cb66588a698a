#pragma once
// Products that read each stored weight row once, as it lies in memory: one activation row (the
// decode step: gemv_weights) or, for the K-quants and Q5_0 / Q5_1, a few rows by the one-row dots
// (rows_by_dots). Q8_0 / Q4_0 / K-quant dots multiply integers over activations quantized per
// block, as llama.cpp does; bf16 is widened to float.
#include <algorithm>  // std::min
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint32_t
#include <type_traits>  // std::is_same_v
#include <utility>    // std::index_sequence
#include <vector>     // std::vector

#include <tessera/backend/cpu/eigen_maps.hpp>        // add_bias_columns
#include <tessera/backend/cpu/matrix_products_avx512.hpp>  // avx512::gemv_rows
#include <tessera/backend/cpu/product_paths.hpp>     // with_tile_rows, dot_rows_max
#include <tessera/backend/cpu/products_avx2.hpp>     // avx2::dot
#include <tessera/backend/cpu/products_k_quants.hpp>  // Q4_K, Q5_K, Q5_0, Q5_1's dots
#include <tessera/backend/cpu/products_q6_k.hpp>     // Q6_K's dots
#include <tessera/backend/cpu/products_vnni.hpp>     // avx512vnni::dot, dot_rows
#include <tessera/backend/cpu/quantized_row.hpp>     // QuantizedRow, portable::dot
#include <tessera/backend/cpu/thread_pool.hpp>       // ThreadPool
#include <tessera/core/weight_formats.hpp>           // WeightFormat, stored_elements

namespace tessera::cpu {

// f(row, r) for the weight rows [begin, end) of `stored` elements each, in order. Rows shorter
// than 2 KiB (Q4_0 and Q8_0 rows of 768) are prefetched 2 KiB ahead: the Xeon of issue #11's
// fourth part took Q4_0 decode from 123 to 177-196 tokens/s with it. Longer rows are left to
// the hardware prefetcher: a whole row prefetched at once measured 30-45% slower on rows of
// 8,192 weights (Q4_K, Q6_K and Q8_0 alike, 2 threads, AMD EPYC; bench/RESULTS.md, K-quants
// third part) and no faster on rows of 2,048.
template <class W, class F>
void each_weight_row(const W* w, std::size_t stored, std::size_t begin, std::size_t end, F&& f) {
    constexpr std::size_t distance = 2048;
    const std::size_t row_bytes = stored * sizeof(W), ahead = row_bytes < distance ? (distance + row_bytes - 1) / row_bytes : 0;
    for (std::size_t r = begin; r < end; ++r) {
        if (ahead != 0 && r + ahead < end) {
            const char* next = reinterpret_cast<const char*>(w + (r + ahead) * stored);
            for (std::size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(next + b);
        }
        f(w + r * stored, r);
    }
}

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
        } else if (level == KernelLevel::avx2) {
            avx2::quantize_row(xq, x, k);
            xq.template prepare_for_avx2<W>(k);
        } else {
            xq.assign(x, k);
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
        const auto rows = [&](auto dot) {
            each_weight_row(w, stored, begin, end, [&](const W* row, std::size_t r) { y[r] = dot(row, x, xq, k); });
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

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q4_K, Q5_K, Q5_0 or Q5_1 (and Q6_K without VNNI):
// each activation row quantized once (QuantizedRow with what the level's kernels read), then
// each weight row, read once, times every activation row by the dots of the CPU's level,
// unpacked once per four activation rows (VNNI: avx512vnni::dot_rows; AVX2: avx2::dot_rows), so
// that a row's result is the same bits whatever m (decoding's one row included).
template <class W>
    requires with_offsets<W> || std::is_same_v<W, Q6_K>
[[gnu::noinline]] void rows_by_dots(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m,
                                    std::size_t n, std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    const KernelLevel level = has_avx512_vnni() && with_offsets<W> ? KernelLevel::avx512
                              : has_avx2()                         ? KernelLevel::avx2
                                                                   : KernelLevel::portable;
#else
    const KernelLevel level = KernelLevel::portable;
#endif
    thread_local std::vector<QuantizedRow> caller_rows;  // grows once per calling thread
    std::vector<QuantizedRow>& rows = caller_rows;        // (the workers read the caller's)
    if (rows.size() < m) rows.resize(m);
    for (std::size_t i = 0; i < m; ++i) {
        rows[i].reserve(k);
#if TESSERA_HAS_AVX512_KERNELS
        if (level == KernelLevel::avx512) {
            avx512vnni::quantize_row(rows[i], a + i * k, k);
            rows[i].template prepare_for<W>(k);
        } else if (level == KernelLevel::avx2) {
            avx2::quantize_row(rows[i], a + i * k, k);
            rows[i].template prepare_for_avx2<W>(k);
        } else {
            rows[i].assign(a + i * k, k);
            rows[i].template prepare_for<W>(k);
        }
#else
        rows[i].assign(a + i * k, k);
        rows[i].template prepare_for<W>(k);
#endif
    }
    const std::size_t stored = stored_elements<W>(k);
    pool.parallel_for(n, 16, [&](std::size_t begin, std::size_t end) {
        const auto each_row = [&](auto multiply) {
            each_weight_row(w, stored, begin, end, [&](const W* row, std::size_t r) { multiply(row, c + r); });
        };
#if TESSERA_HAS_AVX512_KERNELS
        if (level == KernelLevel::avx512) {
            if constexpr (with_offsets<W>) {
                each_row([&](const W* row, float* out) {
                    for (std::size_t i = 0; i < m; i += 4) {
                        float four[4];
                        with_tile_rows<4>(m - i, [&]<std::size_t T>() { avx512vnni::dot_rows<W, T>(row, rows.data() + i, k, four); });
                        for (std::size_t t = 0; t < std::min<std::size_t>(4, m - i); ++t) out[(i + t) * n] = four[t];
                    }
                });
            }
        } else if (level == KernelLevel::avx2) {
            each_row([&](const W* row, float* out) {
                for (std::size_t i = 0; i < m; i += 4)
                    with_tile_rows<4>(m - i, [&]<std::size_t T>() { avx2::dot_rows<T>(row, rows.data() + i, k, out + i * n, n); });
            });
        } else
#endif
        {
            each_row([&](const W* row, float* out) {
                for (std::size_t i = 0; i < m; ++i) out[i * n] = portable::dot(row, nullptr, rows[i], k);
            });
        }
        add_bias_columns(c, bias, m, n, begin, end);
    });
}

}  // namespace tessera::cpu
