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
#include <tessera/backend/cpu/products_k_quants.hpp>       // Q4_K, Q5_K, Q5_0, Q5_1's dots
#include <tessera/backend/cpu/thread_pool.hpp>             // ThreadPool
#include <tessera/core/weight_formats.hpp>                 // WeightFormat, Q8_0, Q4_0


#include <tessera/backend/cpu/products_vnni.hpp>  // avx512vnni: the kernels, has_avx512_vnni, has_avx512_bf16


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

// Up to this many rows, Q4_K, Q5_K, Q5_0 and Q5_1 products run the one-row dot for each pair
// of weight row and activation row (rows_by_dots, weights unpacked once per 4 activation rows);
// more the packed integer GEMM with AVX-512 VNNI (packed_offset_gemm), which packs the weights
// on every call and is faster from 5 rows (bench/RESULTS.md, K-quants fourth part). Without
// VNNI the rows after the dots' are dequantized to float (gemm_weights): dots up to 8 rows.
inline constexpr std::size_t dot_rows_max = 4;
inline constexpr std::size_t dot_rows_max_without_vnni = 8;
inline std::size_t rows_by_dots_max() noexcept {
#if TESSERA_HAS_AVX512_KERNELS
    if (has_avx512_vnni()) return dot_rows_max;
#endif
    return dot_rows_max_without_vnni;
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
    } else if constexpr (std::is_same_v<W, Q6_K>) {
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512_vnni()) return ActivationPrecision::int8;
#endif
        return m == 1 ? ActivationPrecision::int8 : ActivationPrecision::f32;
    } else if constexpr (with_offsets<W>) {
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512_vnni()) return ActivationPrecision::int8;
#endif
        return m <= dot_rows_max_without_vnni ? ActivationPrecision::int8 : ActivationPrecision::f32;
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
// place); finish(col, cols) then adds what the tiles do not (packed_offset_gemm's mins).
struct NothingMore {
    void operator()(std::size_t, std::size_t) const noexcept {}
};
template <class Panel, class Finish = NothingMore>
void packed_panels_gemm(ThreadPool& pool, avx512vnni::PackedActivations& packed, Panel&& panel, const float* bias, float* c,
                        std::size_t m, std::size_t n, std::size_t k, Finish&& finish = {}) {
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
            finish(col, cols);
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

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q4_K / Q5_K / Q5_0 / Q5_1 and many rows: the packed
// integer GEMM over their unsigned quants (pack_offset_panels, per call), each block's sums
// scaled by the rows' d · scale; then, per panel, the mins (−dmin · min, Q5_1's m) times each
// activation block's sum xd · Σ q, summed from the packed activations.
template <class W>
    requires with_offsets<W>
void packed_offset_gemm(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m, std::size_t n,
                        std::size_t k) {
    const std::size_t blocks = k / 32, stored = stored_elements<W>(k), tiles = (m + avx512vnni::packed_rows - 1) / avx512vnni::packed_rows;
    auto& packed = pack_activations<W>(pool, a, m, k);
    thread_local AlignedBuffer<float> caller_sums;  // [row][block]: xd · Σ q (the workers read the caller's)
    AlignedBuffer<float>& sums = caller_sums;
    if (sums.size() < m * blocks) sums = AlignedBuffer<float>(m * blocks);
    pool.parallel_for(tiles, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t tile = begin; tile < end; ++tile) {
            const std::int8_t* q = packed.tile_q(tile);
            const float* d = packed.tile_d(tile);
            for (std::size_t t = 0; t < avx512vnni::packed_rows && tile * avx512vnni::packed_rows + t < m; ++t) {
                for (std::size_t b = 0; b < blocks; ++b) {
                    int sum = 0;
                    for (std::size_t g = 0; g < 8; ++g)
                        for (std::size_t e = 0; e < 4; ++e) sum += q[(b * 8 + g) * 16 + t * 4 + e];
                    sums.data()[(tile * avx512vnni::packed_rows + t) * blocks + b] = static_cast<float>(sum) * d[b * avx512vnni::packed_rows + t];
                }
            }
        }
    });
    // One panel's mins, [block][row of 32], on the thread that multiplies the panel: a
    // function's thread_local, initialized (and later freed) on each thread that calls it; a
    // thread_local of this function would be the workers' without ever being constructed there.
    const auto panel_mins = []() -> AlignedBuffer<float>& {
        thread_local AlignedBuffer<float> mins;
        return mins;
    };
    packed_panels_gemm(pool, packed, [&](std::size_t col, std::size_t cols) {
        AlignedBuffer<float>& mins = panel_mins();
        thread_local AlignedBuffer<std::uint8_t> wq;  // one panel's room, grown once per thread
        thread_local AlignedBuffer<float> ws;
        if (wq.size() < 32 * k) wq = AlignedBuffer<std::uint8_t>(32 * k);
        if (ws.size() < 32 * blocks) ws = AlignedBuffer<float>(32 * blocks);
        if (mins.size() < 32 * blocks) mins = AlignedBuffer<float>(32 * blocks);
        avx512vnni::pack_offset_panels(w + col * stored, stored, cols, wq.data(), ws.data(), mins.data());
        return avx512vnni::BytePanels{wq.data(), ws.data()};
    }, bias, c, m, n, k, [&](std::size_t col, std::size_t cols) {
        // (Q5_0's offset is the activations' integer shift.)
        if constexpr (!std::is_same_v<W, Q5_0>) avx512vnni::add_mins(sums.data(), panel_mins().data(), blocks, c + col, n, m, cols);
    });
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

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q4_K, Q5_K, Q5_0 or Q5_1: each activation row
// quantized once (QuantizedRow with its sums), then each weight row, read once, times every
// activation row by the one-row dot of the CPU's level (with VNNI, unpacked once per four
// activation rows: dot_rows), so that a row's result is the same bits whatever m (decoding's
// one row included).
template <class W>
    requires with_offsets<W>
[[gnu::noinline]] void rows_by_dots(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m,
                                    std::size_t n, std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    const KernelLevel level = has_avx512_vnni() ? KernelLevel::avx512 : has_avx2() ? KernelLevel::avx2 : KernelLevel::portable;
#else
    const KernelLevel level = KernelLevel::portable;
#endif
    thread_local std::vector<QuantizedRow> caller_rows;  // grows once per calling thread
    std::vector<QuantizedRow>& rows = caller_rows;        // (the workers read the caller's)
    if (rows.size() < m) rows.resize(m);
    for (std::size_t i = 0; i < m; ++i) {
#if TESSERA_HAS_AVX512_KERNELS
        if (level == KernelLevel::avx512) {
            rows[i].reserve(k);
            avx512vnni::quantize_row(rows[i], a + i * k, k);
        } else {
            rows[i].assign(a + i * k, k);
        }
#else
        rows[i].assign(a + i * k, k);
#endif
        rows[i].template prepare_for<W>(k);
    }
    const std::size_t stored = stored_elements<W>(k);
    pool.parallel_for(n, 16, [&](std::size_t begin, std::size_t end) {
        const auto each_row = [&](auto multiply) {
            each_weight_row(w, stored, begin, end, [&](const W* row, std::size_t r) { multiply(row, c + r); });
        };
#if TESSERA_HAS_AVX512_KERNELS
        if (level == KernelLevel::avx512) {  // each weight row unpacked once per 4 activation rows
            each_row([&](const W* row, float* out) {
                for (std::size_t i = 0; i < m; i += 4) {
                    float four[4];
                    with_tile_rows<4>(m - i, [&]<std::size_t T>() { avx512vnni::dot_rows<W, T>(row, rows.data() + i, k, four); });
                    for (std::size_t t = 0; t < std::min<std::size_t>(4, m - i); ++t) out[(i + t) * n] = four[t];
                }
            });
        } else if (level == KernelLevel::avx2) {
            each_row([&](const W* row, float* out) {
                for (std::size_t i = 0; i < m; ++i) out[i * n] = avx2::dot(row, nullptr, rows[i], k);
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

// C(M,N) = A(M,K) · W(N,K)ᵀ + bias(N) for stored weights: one row is gemv_weights (or for the
// K-quants and Q5_0 / Q5_1, up to rows_by_dots_max() rows rows_by_dots, more packed_offset_gemm with
// VNNI); otherwise more rows dequantize W panel by panel (64 rows) and use the float product.
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
    if constexpr (with_offsets<W>) {
        if (m <= rows_by_dots_max()) return rows_by_dots(pool, a, w, bias, c, m, n, k);
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512_vnni()) return packed_offset_gemm(pool, a, w, bias, c, m, n, k);
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
