#pragma once
// Q4_0 weights arranged in place, once after loading, so that products of any number of rows,
// one row (decode) included, run vpdpbusd over them as they lie: the same bytes in another
// order, the same size, no second copy (where the CPU has AVX-512 VNNI).
//
// Why: as stored, a Q4_0 row's nibbles must be spread into one unsigned byte per weight before
// a product of several rows can multiply 16 weight rows per instruction, and packing them per
// call cost about three times the products' arithmetic at 16 rows (a 16-token prompt: 0.99x
// llama.cpp's speed). Arranged, the packed integer GEMM's tile reads the nibbles directly: a
// vector of 64 bytes holds the bytes qs[4j .. 4j + 4) of 16 rows, whose low nibbles are those
// rows' weights 4j .. 4j + 3 and whose high nibbles are their weights 16 + 4j .. (Q4_0 keeps
// weights e and e + 16 in byte e), so one AND and one shift make two vpdpbusd operands.
//
// The layout, for each group of 32 rows (n must be a multiple of 32, as every GPT-2 layer's
// is; otherwise nothing is arranged), per block b of K / 32: 576 bytes at group + b * 576:
//   [rows 0-15: vectors j = 0..3, 64 bytes each, lane r = row r's qs[4j .. 4j + 4)]
//   [rows 16-31: the same]  [rows 0-15: 16 f16 scales]  [rows 16-31: 16 f16 scales]
// 32 blocks of 18 bytes, as before, and one stream through memory per group.
#include <algorithm>  // std::min
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint8_t
#include <cstring>    // std::memcpy
#include <vector>     // std::vector

#include <tessera/backend/cpu/thread_pool.hpp>      // ThreadPool
#include <tessera/backend/cpu/weight_products.hpp>  // packed_tile, pack_activations, packed_panels_gemm
#include <tessera/core/dtype.hpp>                   // Q4_0

namespace tessera::cpu {

inline constexpr std::size_t q4_0_group_rows = 32;
inline constexpr std::size_t q4_0_group_block_bytes = q4_0_group_rows * sizeof(Q4_0);  // 576

// What a Linear keeps to say its Q4_0 weights were arranged (Cpu::arrange_weights): false
// without AVX-512 VNNI or for a row count that is not a multiple of 32, when the products read
// the weights as stored.
struct ArrangedQ4_0 {
    bool arranged = false;
    bool empty() const noexcept { return !arranged; }
};

// Group g's 32 rows x `blocks` blocks (contiguous as stored) rearranged into `out`.
inline void arrange_q4_0_group(const Q4_0* rows, std::size_t blocks, std::uint8_t* out) noexcept {
    for (std::size_t b = 0; b < blocks; ++b) {
        std::uint8_t* dst = out + b * q4_0_group_block_bytes;
        for (std::size_t r = 0; r < q4_0_group_rows; ++r) {
            const Q4_0& block = rows[r * blocks + b];
            const std::size_t panel = r / 16, lane = r % 16;
            for (std::size_t j = 0; j < 4; ++j) std::memcpy(dst + panel * 256 + j * 64 + lane * 4, block.qs + 4 * j, 4);
            std::memcpy(dst + 512 + panel * 32 + lane * 2, &block.d.bits, 2);
        }
    }
}

// Arranges W(n, k) in place (k a multiple of 32). Each group of 32 rows is copied out and
// written back in the new order; the groups are independent, so the pool shares them.
inline ArrangedQ4_0 arrange_q4_0(ThreadPool& pool, Q4_0* w, std::size_t n, std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    if (!has_avx512_vnni() || n % q4_0_group_rows != 0 || k % 32 != 0 || n == 0 || k == 0) return {};
    const std::size_t blocks = k / 32, groups = n / q4_0_group_rows;
    pool.parallel_for(groups, 1, [&](std::size_t begin, std::size_t end) {
        thread_local std::vector<Q4_0> copy;
        copy.resize(q4_0_group_rows * blocks);
        for (std::size_t g = begin; g < end; ++g) {
            Q4_0* group = w + g * q4_0_group_rows * blocks;
            std::copy(group, group + q4_0_group_rows * blocks, copy.data());
            arrange_q4_0_group(copy.data(), blocks, reinterpret_cast<std::uint8_t*>(group));
        }
    });
    return {true};
#else
    (void)pool, (void)w, (void)n, (void)k;
    return {};
#endif
}

}  // namespace tessera::cpu

#if TESSERA_HAS_AVX512_KERNELS
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
#endif

namespace tessera::cpu::avx512vnni {

// One arranged group of 32 rows as packed_tile reads it (the two panels of 16 are its halves).
struct Q4_0Panels {
    const std::uint8_t* group;
    GroupPair groups(std::size_t b, std::size_t panel, std::size_t j) const noexcept {
        const __m512i v = _mm512_loadu_si512(group + b * q4_0_group_block_bytes + panel * 256 + j * 64);
        const __m512i low_nibbles = _mm512_set1_epi8(15);
        return {_mm512_and_si512(v, low_nibbles), _mm512_and_si512(_mm512_srli_epi16(v, 4), low_nibbles)};
    }
    __m512 scales(std::size_t b, std::size_t panel) const noexcept {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + b * q4_0_group_block_bytes + 512 + panel * 32)));
    }
};

}  // namespace tessera::cpu::avx512vnni

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace tessera::cpu {

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q4_0 weights arranged by arrange_q4_0, any m >= 1:
// the packed integer GEMM's activations and tiles, the weights read as they lie. A row's result
// is the same bits for every m (one row is a tile of one), so a sequence decodes alike alone
// and in a batch.
inline void arranged_q4_0_gemm(ThreadPool& pool, const float* a, const Q4_0* w, const float* bias, float* c, std::size_t m,
                               std::size_t n, std::size_t k) {
    const std::size_t blocks = k / 32;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(w);
    auto& packed = pack_activations<Q4_0>(pool, a, m, k);
    packed_panels_gemm(pool, packed, [&](std::size_t col, std::size_t, std::uint8_t*, float*) {
        return avx512vnni::Q4_0Panels{bytes + col * blocks * sizeof(Q4_0)};
    }, bias, c, m, n, k);
}

}  // namespace tessera::cpu
#endif
