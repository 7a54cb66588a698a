#pragma once
// bf16 weights times many activation rows on AMX tiles (Intel Sapphire Rapids and later): one
// tdpbf16ps multiplies a 16 x 32 bf16 tile by a 32 x 16 one into 16 x 16 floats, 8,192
// multiply-adds, about ten times what the vector units do in the same time (measured here:
// 3.1 TFLOP/s on one core, against 0.31 for FMA; vdpbf16ps runs on one port on these CPUs, so
// the AVX-512 bf16 product is no faster than the float one). The weights are the tiles' first
// operand as stored, row-major bf16 (16 rows of 32 consecutive weights per tile, strided by k):
// nothing of W is packed or copied. The activations are the second operand, packed once per
// product as for vdpbf16ps: per 16 rows, [pair of k][row] as 32-bit words of two bf16. A tile
// result is Cᵀ (16 weight rows x 16 activation rows), written out transposed.
//
// Each output element is summed over k in the same order wherever its row sits in a tile, so
// a row's result has the same bits whatever else is in the product. Compiled for AMX by a target
// pragma like every kernel region here (kernel_level.hpp), and run only where amx_bf16_usable().
#include <tessera/backend/cpu/kernel_level.hpp>  // TESSERA_HAS_X86_KERNELS, has_amx

#if TESSERA_HAS_X86_KERNELS
#define TESSERA_HAS_AMX_KERNELS 1
#include <immintrin.h>  // AMX intrinsics

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("amx-tile,amx-bf16,avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16,avx512f")
#endif

#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t, std::uint16_t, std::uint32_t

#include <tessera/core/dtype.hpp>  // bf16

namespace tessera::cpu::amx {

inline constexpr std::size_t tile_rows = 16;  // rows of every tile; k goes 32 bf16 per step
inline constexpr std::size_t block_rows = 32;  // weight rows per block: two tiles

// Palette 1, eight tiles of 16 rows x 64 bytes: tmm0-3 results, tmm4-5 weights, tmm6-7
// activations. Loaded by each thread before its tiles run (the configuration is per thread).
inline void configure() noexcept {
    struct alignas(64) Config {
        std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
        std::uint16_t bytes_per_row[16] = {};
        std::uint8_t rows[16] = {};
    } config;
    for (int t = 0; t < 8; ++t) {
        config.bytes_per_row[t] = 64;
        config.rows[t] = tile_rows;
    }
    _tile_loadconfig(&config);
}
// Gives the tile state back, so the kernel no longer saves 8 KiB with this thread's context.
inline void release() noexcept { _tile_release(); }

// out[2·i + j] = Cᵀ of weight rows [16 i, 16 i + 16) of w (`stride` weights apart) times the
// activation tile act[j] (16 rows, packed), i, j < 2 (j < 1 when Two is false), over depth k,
// a multiple of 32.
template <bool Two>
inline void block(const bf16* w, std::size_t stride, std::size_t k, const std::uint32_t* act0, const std::uint32_t* act1,
                  float (*out)[tile_rows][tile_rows]) noexcept {
    _tile_zero(0);
    _tile_zero(2);
    if constexpr (Two) {
        _tile_zero(1);
        _tile_zero(3);
    }
    const std::size_t bytes = stride * sizeof(bf16);
    for (std::size_t e = 0; e < k; e += 32) {
        _tile_loadd(4, w + e, bytes);
        _tile_loadd(5, w + tile_rows * stride + e, bytes);
        _tile_loadd(6, act0 + e * 8, 64);  // pairs e/2 .. e/2 + 15, 16 words each
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(2, 5, 6);
        if constexpr (Two) {
            _tile_loadd(7, act1 + e * 8, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, out[0], 64);
    _tile_stored(2, out[2], 64);
    if constexpr (Two) {
        _tile_stored(1, out[1], 64);
        _tile_stored(3, out[3], 64);
    }
}

// c[row · ldc + col] = result[col][row] for the first `rows` activation rows and `cols` weight
// rows of one 16 x 16 result tile (Cᵀ).
inline void store_transposed(const float (&result)[tile_rows][tile_rows], float* c, std::size_t ldc, std::size_t rows,
                             std::size_t cols) noexcept {
    for (std::size_t row = 0; row < rows; ++row)
        for (std::size_t col = 0; col < cols; ++col) c[row * ldc + col] = result[col][row];
}

}  // namespace tessera::cpu::amx

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
