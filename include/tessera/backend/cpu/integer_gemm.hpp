#pragma once
// The integer GEMMs of stored weights for several rows: Q8_0 / Q4_0's few-row tiles, the packed
// integer GEMM (activations quantized and packed 4 rows to a tile, weights packed in panels of
// 32 rows: per call, in advance for a Q4_0 model's Q6_K head, or arranged in place), and the
// K-quants' and Q5_0 / Q5_1's version with their mins added apart (packed_offset_gemm).
#include <algorithm>  // std::min
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint32_t
#include <type_traits>  // std::is_same_v
#include <utility>    // std::index_sequence
#include <vector>     // std::vector

#include <tessera/backend/cpu/aligned_buffer.hpp>   // AlignedBuffer
#include <tessera/backend/cpu/eigen_maps.hpp>       // add_bias_columns
#include <tessera/backend/cpu/product_paths.hpp>    // with_tile_rows
#include <tessera/backend/cpu/products_avx2.hpp>    // avx2::integer_columns
#include <tessera/backend/cpu/products_k_quants.hpp>  // pack_offset_panels
#include <tessera/backend/cpu/products_q6_k.hpp>    // avx512vnni::integer_columns
#include <tessera/backend/cpu/products_vnni.hpp>    // avx512vnni: tiles, packing
#include <tessera/backend/cpu/quantized_row.hpp>    // QuantizedRow
#include <tessera/backend/cpu/thread_pool.hpp>      // ThreadPool
#include <tessera/core/weight_formats.hpp>          // WeightFormat, Q8_0, Q4_0, Q6_K

namespace tessera::cpu {

#if TESSERA_HAS_AVX512_KERNELS

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q8_0 / Q4_0 and a few rows: each row of A quantized
// once (as the one-row product does: the same bits with either instruction set), then the
// integer tiles over W as stored, AVX-512 VNNI's or (Avx2) AVX2's.
// A(m, k)'s rows quantized for W's integer tiles (AVX-512 VNNI's, or with Avx2 AVX2's), into
// the calling thread's rows (grown once; the workers fill the caller's).
template <class W, bool Avx2>
std::vector<QuantizedRow>& quantized_rows(ThreadPool& pool, const float* a, std::size_t m, std::size_t k) {
    thread_local std::vector<QuantizedRow> caller_rows;
    std::vector<QuantizedRow>& rows = caller_rows;
    if (rows.size() < m) rows.resize(m);
    for (std::size_t i = 0; i < m; ++i) rows[i].reserve(k);
    pool.parallel_for(m, 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            if constexpr (Avx2) {
                avx2::quantize_row(rows[i], a + i * k, k);
                rows[i].template prepare_for_avx2<W>(k);
            } else {
                avx512vnni::quantize_row(rows[i], a + i * k, k);
                rows[i].template prepare_for<W>(k);
            }
        }
    });
    return rows;
}

template <class W, bool Avx2 = false>
void few_rows_integer(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m, std::size_t n,
                      std::size_t k) {
    const std::vector<QuantizedRow>& rows = quantized_rows<W, Avx2>(pool, a, m, k);
    pool.parallel_for(n, 16, [&](std::size_t begin, std::size_t end) {
        if constexpr (Avx2) avx2::integer_columns(rows.data(), w, c, m, k, n, begin, end);
        else avx512vnni::integer_columns(rows.data(), w, c, m, k, n, begin, end);
        add_bias_columns(c, bias, m, n, begin, end);
    });
}

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q4_K / Q5_K / Q5_0 / Q5_1 / Q6_K and several rows
// with AVX2: each row of A quantized once, then per 8 weight rows, packed as a panel on the
// thread that multiplies it (avx2::pack_offset_panel: 8 · k bytes, in the L1 cache), every
// activation row times the panel, 4 at a time (avx2::offset_panel_tile).
template <class W>
    requires avx2::in_offset_panels<W>
void avx2_offset_gemm(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m, std::size_t n,
                      std::size_t k) {
    const std::vector<QuantizedRow>& rows = quantized_rows<W, true>(pool, a, m, k);
    const std::size_t blocks = k / 32, stored = stored_elements<W>(k), scales = blocks * avx2::panel_groups<W>;
    pool.parallel_for(n, 8, [&](std::size_t begin, std::size_t end) {
        thread_local AlignedBuffer<std::uint8_t> wq;  // one panel's room, grown once per thread
        thread_local AlignedBuffer<float> ws, mins;
        if (wq.size() < 8 * k) wq = AlignedBuffer<std::uint8_t>(8 * k);
        if (ws.size() < 8 * scales) ws = AlignedBuffer<float>(8 * scales);
        if (mins.size() < 8 * blocks) mins = AlignedBuffer<float>(8 * blocks);
        for (std::size_t col = begin; col < end; col += 8) {
            const std::size_t cols = std::min<std::size_t>(8, end - col);
            avx2::pack_offset_panel(w + col * stored, stored, cols, wq.data(), ws.data(), mins.data());
            if (col + 8 < end) {  // the next panel's rows, fetched while this one is multiplied
                const char* next = reinterpret_cast<const char*>(w + (col + 8) * stored);
                for (std::size_t byte = 0; byte < std::min<std::size_t>(8, end - col - 8) * stored * sizeof(W); byte += 64) __builtin_prefetch(next + byte);
            }
            for (std::size_t t = 0; t < m; t += 4) {
                with_tile_rows<4>(m - t, [&]<std::size_t T>() {
                    if (cols == 8) {
                        avx2::offset_panel_tile<T, W>(wq.data(), ws.data(), mins.data(), rows.data() + t, blocks, c + t * n + col, n);
                    } else {  // the last rows of W: through a whole panel's room
                        float tile[T * 8];
                        avx2::offset_panel_tile<T, W>(wq.data(), ws.data(), mins.data(), rows.data() + t, blocks, tile, 8);
                        for (std::size_t i = 0; i < T; ++i) std::copy(tile + i * 8, tile + i * 8 + cols, c + (t + i) * n + col);
                    }
                });
            }
        }
        add_bias_columns(c, bias, m, n, begin, end);
    });
}
#endif

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

template <class Deferred = void>
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
template <class Deferred = void>
inline void prepacked_q6_k_gemm(ThreadPool& pool, const float* a, const PackedIntegerWeights& w, const float* bias, float* c,
                                std::size_t m, std::size_t n, std::size_t k) {
    const std::size_t scales = k / 32 * avx512vnni::offsets_per_block<Q6_K>;
    auto& packed = pack_activations<Q6_K>(pool, a, m, k);
    packed_panels_gemm(pool, packed, [&](std::size_t col, std::size_t) {
        return avx512vnni::SixBitPanels{w.q.data() + col * k, w.d.data() + col * scales};
    }, bias, c, m, n, k);
}

}  // namespace tessera::cpu
