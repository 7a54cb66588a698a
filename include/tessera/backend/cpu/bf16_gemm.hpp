#pragma once
// The bf16 GEMMs for many rows: activations rounded to bf16 and packed in pairs, then the packed
// vdpbf16ps GEMM (AVX-512 BF16) or AMX tiles.
#include <algorithm>  // std::min
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint32_t
#include <type_traits>  // std::is_same_v
#include <utility>    // std::index_sequence
#include <vector>     // std::vector

#include <tessera/backend/cpu/aligned_buffer.hpp>  // AlignedBuffer
#include <tessera/backend/cpu/eigen_maps.hpp>      // add_bias_columns
#include <tessera/backend/cpu/product_paths.hpp>   // with_tile_rows
#include <tessera/backend/cpu/products_amx.hpp>    // amx::block
#include <tessera/backend/cpu/products_vnni.hpp>   // avx512bf16: the kernels and packing
#include <tessera/backend/cpu/thread_pool.hpp>     // ThreadPool
#include <tessera/core/dtype.hpp>                  // bf16

namespace tessera::cpu {

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

}  // namespace tessera::cpu
