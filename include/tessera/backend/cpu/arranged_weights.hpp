#pragma once
// Weights arranged in place, once after loading, so that products of any number of rows, one
// row (decode) included, run the packed GEMMs' tiles over them as they lie: the same bytes in
// another order, the same size, no second copy: a Linear's weights, and the tied head's table,
// whose token rows are read back out of the order (arranged_block, arranged_element). Q8_0 and
// Q4_0 for AVX-512 VNNI's tiles, or else AVX2's (a layout of their own, below); bf16 for
// vdpbf16ps where the CPU has AVX-512 BF16 but no AMX (whose tiles read bf16 rows as stored), or
// for AVX2's float tiles where it has AVX2 but not AVX-512; float where it has AVX2
// (Arrangement::for_avx2 says which kernels the layout is for).
//
// Why: as stored, a product of several rows must first pack W into the order the tiles
// multiply 16 weight rows per instruction in, and packing per call cost about three times the
// arithmetic at 16 rows (a 16-token Q4_0 prompt: 0.99x llama.cpp's speed), while the few-row
// tiles that read W as stored multiply one row per vector. Q8_0 used to keep a second, packed
// copy for batched steps instead (96 MB for GPT-2 124M); arranged, it needs none.
//
// Every format per whole group of 32 rows (the last n % 32 rows stay as stored after them: the
// tied head's 50,257; fewer than 32 rows are not arranged). Q8_0 and Q4_0, per block b of
// K / 32: 32 blocks' bytes at group + b * 32 * sizeof(block), as
//   [rows 0-15: vectors j, 64 bytes each, lane r = row r's qs[4j .. 4j + 4)]  [rows 16-31: the same]
//   [rows 0-15: 16 f16 scales]  [rows 16-31: 16 f16 scales]
// Q8_0: j = 0..7, a vector is the vpdpbusd operand of group j once its sign bits are flipped
// (as the tiles over W as stored flip them: the bytes stay GGUF's). Q4_0: j = 0..3; a byte holds
// weights e and e + 16 of its block (its low and high nibble), so vector j is, after one AND
// and one shift, the operands of groups j and j + 4. One stream through memory per group.
//
// bf16: per group of 32 rows, per pair of columns, the two 16-row halves' [row][2 bf16]
// vectors: what pack_bf16_panels makes per call and bf16_tile reads (k must be even).
//
// float: per panel of 16 rows, [k][16]; bf16 for AVX2 per group of 32, [k][32] (arrange_panels,
// panel_width): each activation is broadcast and multiplies 16 weight rows per FMA (8 with
// AVX2), where the tiles over W as stored sum each dot product across the lanes of its own
// accumulator (about half the FMA rate at 8-64 rows). AVX2's tiles (avx2::panel_rows_tile)
// widen bf16 to float as they load it.
#include <algorithm>  // std::copy, std::min
#include <array>      // std::array
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint8_t
#include <cstring>    // std::memcpy
#include <type_traits>  // std::is_same_v
#include <utility>    // std::index_sequence
#include <vector>     // std::vector

#include <tessera/backend/cpu/thread_pool.hpp>      // ThreadPool
#include <tessera/backend/cpu/bf16_gemm.hpp>     // pack_bf16_activations, bf16_panels_gemm
#include <tessera/backend/cpu/integer_gemm.hpp>  // pack_activations, packed_panels_gemm
#include <tessera/core/dtype.hpp>                   // Q8_0, Q4_0

namespace tessera::cpu {

inline constexpr std::size_t arranged_rows = 32;  // rows per group, every format

// The arranged integer layout's sizes for blocks W (Q8_0 or Q4_0): a block of the group (its 32
// rows' blocks b), the quantized bytes of one panel of 16 rows in it (the scales follow both).
template <class W>
inline constexpr std::size_t group_block_bytes = arranged_rows * sizeof(W);  // Q8_0 1088, Q4_0 576
template <class W>
inline constexpr std::size_t panel_quant_bytes = 16 * sizeof(W::qs);  // Q8_0 512, Q4_0 256

// What a Linear keeps to say its weights were arranged (Cpu::arrange_weights): false where the
// CPU lacks the instructions or the shape does not fit, when the products read W as stored.
struct Arrangement {
    bool arranged = false;
    bool for_avx2 = false;  // for the AVX2 kernels (a CPU without AVX-512 VNNI or without AVX-512)
    bool empty() const noexcept { return !arranged; }
};

// A group's 32 rows x `blocks` blocks (contiguous as stored) rearranged into `out`.
template <class W>
void arrange_integer_group(const W* rows, std::size_t blocks, std::uint8_t* out) noexcept {
    constexpr std::size_t vectors = sizeof(W::qs) / 4, panel_bytes = panel_quant_bytes<W>;
    for (std::size_t b = 0; b < blocks; ++b) {
        std::uint8_t* dst = out + b * group_block_bytes<W>;
        for (std::size_t r = 0; r < arranged_rows; ++r) {
            const W& block = rows[r * blocks + b];
            const std::size_t panel = r / 16, lane = r % 16;
            for (std::size_t j = 0; j < vectors; ++j) std::memcpy(dst + panel * panel_bytes + j * 64 + lane * 4, block.qs + 4 * j, 4);
            std::memcpy(dst + 2 * panel_bytes + panel * 32 + lane * 2, &block.d.bits, 2);
        }
    }
}

// AVX2's layout (CPUs without AVX-512 VNNI): a group's 32 rows as four panels of 8, each
// panel's blocks one after another, per block b at panel + b * 8 * sizeof(block):
//   [vectors j, 32 bytes each, lane r = row r's qs[4j .. 4j + 4)]  [8 f16 scales]
// (Q8_0: j = 0..7; Q4_0: j = 0..3, whose low nibbles are weights 4j.. and high ones 16 + 4j..).
// avx2::panel_tile multiplies one such vector with 4 activations broadcast to all 8 rows.
inline constexpr std::size_t avx2_panel_rows = 8;

template <class W>
void arrange_avx2_panels(const W* rows, std::size_t blocks, std::uint8_t* out) noexcept {
    constexpr std::size_t vectors = sizeof(W::qs) / 4;
    for (std::size_t r = 0; r < arranged_rows; ++r) {
        const std::size_t panel = r / avx2_panel_rows, lane = r % avx2_panel_rows;
        for (std::size_t b = 0; b < blocks; ++b) {
            const W& block = rows[r * blocks + b];
            std::uint8_t* dst = out + (panel * blocks + b) * avx2_panel_rows * sizeof(W);
            for (std::size_t j = 0; j < vectors; ++j) std::memcpy(dst + j * 32 + lane * 4, block.qs + 4 * j, 4);
            std::memcpy(dst + vectors * 32 + lane * 2, &block.d.bits, 2);
        }
    }
}

// Rewrites each group of 32 rows of W (n rows of `row_elements` stored elements) in place:
// the group is copied out and arrange(copy, group) writes it back in the new order. The groups
// are independent, so the pool shares them.
template <class T, class Arrange>
void arrange_groups(ThreadPool& pool, T* w, std::size_t n, std::size_t row_elements, Arrange&& arrange) {
    const std::size_t group_elements = arranged_rows * row_elements;
    pool.parallel_for(n / arranged_rows, 1, [&](std::size_t begin, std::size_t end) {
        thread_local std::vector<T> copy;
        copy.resize(group_elements);
        for (std::size_t g = begin; g < end; ++g) {
            T* group = w + g * group_elements;
            std::copy(group, group + group_elements, copy.data());
            arrange(copy.data(), group);
        }
    });
}

// Block b of row `row` of an arranged W (n rows, `blocks` per row) as stored: the inverse of
// arrange_integer_group, for gathering rows of an arranged table (the tied head's embedding).
template <class W>
W arranged_block(const W* w, std::size_t n, std::size_t blocks, const Arrangement& arrangement, std::size_t row, std::size_t b) noexcept {
    if (row >= n / arranged_rows * arranged_rows) return w[row * blocks + b];  // (the rows after the whole groups)
    constexpr std::size_t vectors = sizeof(W::qs) / 4, panel_bytes = panel_quant_bytes<W>;
    W block;
    if (arrangement.for_avx2) {
        const auto* src = reinterpret_cast<const std::uint8_t*>(w + (row / avx2_panel_rows * avx2_panel_rows * blocks + b * avx2_panel_rows));
        const std::size_t lane = row % avx2_panel_rows;
        for (std::size_t j = 0; j < vectors; ++j) std::memcpy(block.qs + 4 * j, src + j * 32 + lane * 4, 4);
        std::memcpy(&block.d.bits, src + vectors * 32 + lane * 2, 2);
        return block;
    }
    const auto* src = reinterpret_cast<const std::uint8_t*>(w + row / arranged_rows * arranged_rows * blocks) + b * group_block_bytes<W>;
    const std::size_t panel = row % arranged_rows / 16, lane = row % 16;
    for (std::size_t j = 0; j < vectors; ++j) std::memcpy(block.qs + 4 * j, src + panel * panel_bytes + j * 64 + lane * 4, 4);
    std::memcpy(&block.d.bits, src + 2 * panel_bytes + panel * 32 + lane * 2, 2);
    return block;
}

// Arranges the whole groups of Q8_0 or Q4_0 W(n, k) in place (k a multiple of 32, n at least
// 32): for AVX-512 VNNI's tiles where the CPU has them, else for AVX2's.
template <class W>
    requires std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>
Arrangement arrange_integer(ThreadPool& pool, W* w, std::size_t n, std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    if (!has_avx2() || n < arranged_rows || k % 32 != 0 || k == 0) return {};
    const std::size_t blocks = k / 32;
    const bool vnni = has_avx512_vnni();
    arrange_groups(pool, w, n, blocks, [blocks, vnni](const W* rows, W* group) {
        if (vnni) arrange_integer_group(rows, blocks, reinterpret_cast<std::uint8_t*>(group));
        else arrange_avx2_panels(rows, blocks, reinterpret_cast<std::uint8_t*>(group));
    });
    return {true, !vnni};
#else
    (void)pool, (void)w, (void)n, (void)k;
    return {};
#endif
}

// Rows of W (row stride k) into panels of R rows, [k][R]: float's layout (R = 16, two panels a
// group) and bf16's for AVX2 (R = 32: a group one panel, one stream for decode, where two
// streams of bf16 half a line per k each left decode at 0.8x the stored rows' rate).
template <class E>
inline constexpr std::size_t panel_width = std::is_same_v<E, bf16> ? 32 : 16;
template <class E>
void arrange_panels(const E* rows, std::size_t k, E* group) noexcept {
    constexpr std::size_t R = panel_width<E>;
    for (std::size_t p = 0; p < arranged_rows; p += R)
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t i = 0; i < k; ++i) group[p * k + i * R + r] = rows[(p + r) * k + i];
}
// Element e of row `row` of W(n, k) so arranged (the rows after the whole groups as stored).
template <class E>
E panel_element(const E* w, std::size_t n, std::size_t k, std::size_t row, std::size_t e) noexcept {
    constexpr std::size_t R = panel_width<E>;
    if (row >= n / arranged_rows * arranged_rows) return w[row * k + e];
    return w[row / R * R * k + e * R + row % R];
}

// Whether bf16 weights are arranged for AVX-512 BF16's vdpbf16ps on this CPU (any shape aside):
// its products round the activations to bf16. (Without AVX-512, AVX2 arranges them in groups
// of 32 rows, [k][32], and multiplies them widened to float.)
inline bool arranges_bf16() noexcept {
#if TESSERA_HAS_AVX512_KERNELS
    return has_avx512_bf16() && !has_amx();
#else
    return false;
#endif
}

// Element e of row `row` of a bf16 W(n, k) arranged by arrange_bf16 (the rows after the whole
// groups as stored): for gathering rows of an arranged table.
inline bf16 arranged_element(const bf16* w, std::size_t n, std::size_t k, const Arrangement& arrangement, std::size_t row,
                             std::size_t e) noexcept {
    if (arrangement.for_avx2 || row >= n / arranged_rows * arranged_rows) return panel_element(w, n, k, row, e);
    const std::size_t panel = row % arranged_rows / 16, lane = row % 16;
    return w[row / arranged_rows * arranged_rows * k + (e / 2 * 2 + panel) * 32 + lane * 2 + e % 2];
}

// What a product of m rows over W arranged in place rounds its activations to (a Linear's
// weights, a tied table: 32 rows or more), where activation_precision<W>(m) says it for W as
// stored: 8 bits for Q8_0 / Q4_0 with AVX2 or AVX-512 VNNI, bf16 where arranges_bf16(), float
// for float (and bf16 arranged for AVX2).
template <class W>
ActivationPrecision arranged_activation_precision(std::size_t m) noexcept {
    if constexpr (std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>) {
        if (has_avx2()) return ActivationPrecision::int8;
    } else if constexpr (std::is_same_v<W, bf16>) {
        if (arranges_bf16()) return ActivationPrecision::bf16;
        if (!has_avx512() && has_avx2()) return ActivationPrecision::f32;
    }
    return activation_precision<W>(m);
}

// Arranges the whole groups of bf16 W(n, k) in place (n at least 32): for vdpbf16ps (k even)
// where arranges_bf16(), as [k][32] where the CPU has AVX2 but not AVX-512.
template <class Deferred = void>
inline Arrangement arrange_bf16(ThreadPool& pool, bf16* w, std::size_t n, std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    if (!has_avx512() && has_avx2() && n >= arranged_rows && k != 0) {
        arrange_groups(pool, w, n, k, [k](const bf16* rows, bf16* group) { arrange_panels(rows, k, group); });
        return {true, true};
    }
    if (!arranges_bf16() || n < arranged_rows || k % 2 != 0 || k == 0) return {};
    arrange_groups(pool, w, n, k, [k](const bf16* rows, bf16* group) {
        avx512vnni::pack_bf16_panels(rows, k, arranged_rows, reinterpret_cast<std::uint16_t*>(group));
    });
    return {true};
#else
    (void)pool, (void)w, (void)n, (void)k;
    return {};
#endif
}

// The same for a float W(n, k) arranged by arrange_float.
inline float arranged_element(const float* w, std::size_t n, std::size_t k, const Arrangement&, std::size_t row, std::size_t i) noexcept {
    return panel_element(w, n, k, row, i);
}

// Arranges the whole groups of float W(n, k) in place (n at least 32) in panels of 16 rows where
// the CPU has AVX2 (for AVX-512's tiles where it has them).
template <class Deferred = void>
inline Arrangement arrange_float(ThreadPool& pool, float* w, std::size_t n, std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    if (!has_avx2() || n < arranged_rows || k == 0) return {};
    arrange_groups(pool, w, n, k, [k](const float* rows, float* group) { arrange_panels(rows, k, group); });
    return {true, !has_avx512()};
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
template <class W>
struct ArrangedPanels {
    const std::uint8_t* group;
    GroupPair groups(std::size_t b, std::size_t panel, std::size_t j) const noexcept {
        const std::uint8_t* v = group + b * group_block_bytes<W> + panel * panel_quant_bytes<W> + j * 64;
        if constexpr (std::is_same_v<W, Q8_0>) {
            const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
            return {_mm512_xor_si512(_mm512_loadu_si512(v), sign), _mm512_xor_si512(_mm512_loadu_si512(v + 4 * 64), sign)};
        } else {
            const __m512i both = _mm512_loadu_si512(v), low_nibbles = _mm512_set1_epi8(15);
            return {_mm512_and_si512(both, low_nibbles), _mm512_and_si512(_mm512_srli_epi16(both, 4), low_nibbles)};
        }
    }
    __m512 scales(std::size_t b, std::size_t panel) const noexcept {
        const std::uint8_t* s = group + b * group_block_bytes<W> + 2 * panel_quant_bytes<W> + panel * 32;
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
    }
};

}  // namespace tessera::cpu::avx512vnni

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace tessera::cpu {

// The rows after the whole groups of an arranged W (n % 32 of them, as stored) arranged as a
// group of their own, zero rows after them, in the calling thread's room (grown once): the
// tiles read the last columns as they read the others, the zero rows' scales 0 as the packed
// GEMM over W as stored gives its missing rows.
template <class W>
const std::uint8_t* arranged_last_group(const W* w, std::size_t n, std::size_t blocks) {
    thread_local std::vector<W> rows;
    thread_local AlignedBuffer<std::uint8_t> group;
    rows.assign(arranged_rows * blocks, W{});
    std::copy(w + n / arranged_rows * arranged_rows * blocks, w + n * blocks, rows.begin());
    if (group.size() < rows.size() * sizeof(W)) group = AlignedBuffer<std::uint8_t>(rows.size() * sizeof(W));
    arrange_integer_group(rows.data(), blocks, group.data());
    return group.data();
}

// Groups of 32 rows that one activation row (decode) multiplies in the same pass (packed_row):
// Q8_0 4. Q4_0 1 (its tiles): on Zen 4, 2-4 groups of Q4_0 read 0.8-0.9x one group's rate for
// k = 768 and 1.05-1.1x for k = 3,072 (medians of 12-16 rounds), while Q8_0 gained at every shape.
template <class W>
inline constexpr std::size_t decode_groups = std::is_same_v<W, Q8_0> ? 4 : 1;

// A decode step's product over arranged groups, C(1, n) + bias: G groups of 32 rows per pass,
// then single groups, then the rows after the whole groups (into room of 32, then copied).
// row(col, std::index_sequence<g...>, out) multiplies the groups at col + 32 g into out[0, 32 G).
template <std::size_t G, class Row>
void arranged_one_row(ThreadPool& pool, std::size_t n, const float* bias, float* c, Row&& row) {
    constexpr std::size_t together = G * arranged_rows;
    const std::size_t whole = n / arranged_rows * arranged_rows;
    pool.parallel_for(n, together, [&](std::size_t begin, std::size_t end) {
        std::size_t col = begin;
        for (; col + together <= std::min(end, whole); col += together) row(col, std::make_index_sequence<G>{}, c + col);
        for (; col + arranged_rows <= std::min(end, whole); col += arranged_rows) row(col, std::make_index_sequence<1>{}, c + col);
        if (col < end) {  // the last rows, after the whole groups
            float last[arranged_rows];
            row(col, std::make_index_sequence<1>{}, last);
            std::copy(last, last + (end - col), c + col);
        }
        add_bias_columns(c, bias, 1, n, begin, end);
    });
}

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q8_0 or Q4_0 weights arranged by arrange_integer,
// any m >= 1: the packed integer GEMM's activations and tiles, the weights read as they lie. A
// row's result is the same bits for every m (one row is a tile of one, or packed_row's sums of
// the same integers), so a sequence decodes alike alone and in a batch.
template <class W>
void arranged_integer_gemm(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m,
                           std::size_t n, std::size_t k) {
    const std::size_t blocks = k / 32, whole = n / arranged_rows * arranged_rows;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(w);
    const auto panels_at = [&](std::size_t col) {
        return avx512vnni::ArrangedPanels<W>{col < whole ? bytes + col * blocks * sizeof(W) : arranged_last_group(w, n, blocks)};
    };
    auto& packed = pack_activations<W>(pool, a, m, k);
    if (m > 1 || decode_groups<W> == 1) {
        return packed_panels_gemm(pool, packed, [&](std::size_t col, std::size_t) { return panels_at(col); }, bias, c, m, n, k);
    }
    arranged_one_row<decode_groups<W>>(pool, n, bias, c, [&]<std::size_t... g>(std::size_t col, std::index_sequence<g...>, float* out) {
        avx512vnni::packed_row(packed.tile_q(0), packed.tile_d(0), packed.tile_offset(0), std::array{panels_at(col + g * arranged_rows)...},
                               blocks, out);
    });
}

// Activation rows per pass over a panel's weights in avx2_arranged_integer_gemm: their
// quantized bytes (k each) stay in the L2 cache while every panel of the task's columns meets
// them, and each panel (8 rows: 6.9 KB of Q4_0 at k = 1,536) stays in the L1 or L2 cache
// while they all meet it.
inline constexpr std::size_t avx2_rows_per_pass = 64;

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for Q8_0 or Q4_0 weights arranged in AVX2's panels, any
// m >= 1: 8 weight rows by 4 activation rows per tile (avx2::panel_tile), the rows after the
// whole groups by the tiles over W as stored. A row's result is the same bits for every m.
template <class W>
void avx2_arranged_integer_gemm(ThreadPool& pool, const float* a, const W* w, const float* bias, float* c, std::size_t m,
                                std::size_t n, std::size_t k) {
    const std::vector<QuantizedRow>& rows = quantized_rows<W, true>(pool, a, m, k);
    const std::size_t blocks = k / 32, whole = n / arranged_rows * arranged_rows;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(w);
    pool.parallel_for(n, arranged_rows, [&](std::size_t begin, std::size_t end) {
        const std::size_t arranged_end = std::min(end, whole);
        for (std::size_t first = 0; first < m; first += avx2_rows_per_pass) {
            const std::size_t last = std::min(m, first + avx2_rows_per_pass);
            for (std::size_t col = begin; col < arranged_end; col += avx2_panel_rows) {
                const std::uint8_t* panel = bytes + col * blocks * sizeof(W);
                std::size_t t = first;
                for (; t + 4 <= last; t += 4) avx2::panel_tile<4, W>(panel, rows.data() + t, blocks, c + t * n + col, n);
                if (t < last) {
                    with_tile_rows<3>(last - t, [&]<std::size_t T>() { avx2::panel_tile<T, W>(panel, rows.data() + t, blocks, c + t * n + col, n); });
                }
            }
        }
        if (arranged_end < end) avx2::integer_columns(rows.data(), w, c, m, k, n, std::max(begin, whole), end);
        add_bias_columns(c, bias, m, n, begin, end);
    });
}

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for bf16 weights arranged by arrange_bf16, any m >= 1:
// the packed vdpbf16ps GEMM over W as it lies (activations rounded to bf16, as that GEMM and
// the one-row bf16 dot round them); a row's result has the same bits for every m.
inline void arranged_bf16_gemm(ThreadPool& pool, const float* a, const bf16* w, const float* bias, float* c, std::size_t m,
                               std::size_t n, std::size_t k) {
    const auto* halves = reinterpret_cast<const std::uint16_t*>(w);
    const std::size_t whole = n / arranged_rows * arranged_rows, pairs = (k + 1) / 2;
    // Rows [col, col + 32) as the tiles read them: the last rows (after the whole groups, as
    // stored) packed per call, zero rows after them, into the calling thread's room.
    const auto group_at = [&](std::size_t col) -> const std::uint16_t* {
        if (col < whole) return halves + col * k;
        thread_local AlignedBuffer<std::uint16_t> last;
        if (last.size() < arranged_rows * 2 * pairs) last = AlignedBuffer<std::uint16_t>(arranged_rows * 2 * pairs);
        avx512vnni::pack_bf16_panels(w + whole * k, k, n - whole, last.data());
        return last.data();
    };
    if (m > 1) return bf16_panels_gemm(pool, a, [&](std::size_t col, std::size_t) { return group_at(col); }, bias, c, m, n, k);
    // Decode: four groups per pass (bf16_row), the same bits as a tile of one.
    const std::uint32_t* packed = pack_bf16_activations(pool, a, 1, k, 1, pairs).data();  // (the row alone)
    arranged_one_row<4>(pool, n, bias, c, [&]<std::size_t... g>(std::size_t col, std::index_sequence<g...>, float* out) {
        avx512vnni::bf16_row(packed, std::array{group_at(col + g * arranged_rows)...}, pairs, out);
    });
}

// C(m, n) = A(m, k) · W(n, k)ᵀ + bias for float weights arranged by arrange_float, any m >= 1
// (avx512::arranged_float_columns: a row's result has the same bits for every m). The rows
// after the whole groups (the tied head's last V % 32) are arranged per call as panels of
// their own, zero rows after them, on the calling thread: every column the same arithmetic.
// columns(a, w, bias, c, m, k, ldc, begin, end) over the whole groups, shared by the pool, then
// over the rows after them arranged per call as panels of their own, zero rows after them.
template <class E, class Columns>
void panel_rows_gemm(ThreadPool& pool, const float* a, const E* w, const float* bias, float* c, std::size_t m, std::size_t n,
                     std::size_t k, std::size_t grain, Columns&& columns) {
    const std::size_t whole = n / arranged_rows * arranged_rows;
    pool.parallel_for(whole, grain, [&](std::size_t begin, std::size_t end) { columns(a, w, bias, c, m, k, n, begin, end); });
    if (whole == n) return;
    thread_local std::vector<E> rows;  // the last rows and zero ones (grown once)
    thread_local std::vector<float> products;
    thread_local AlignedBuffer<E> panels;
    rows.assign(arranged_rows * k, E{});
    products.assign(m * arranged_rows, 0.0f);
    std::copy(w + whole * k, w + n * k, rows.begin());
    if (panels.size() < arranged_rows * k) panels = AlignedBuffer<E>(arranged_rows * k);
    arrange_panels(rows.data(), k, panels.data());
    columns(a, panels.data(), nullptr, products.data(), m, k, arranged_rows, 0, arranged_rows);
    for (std::size_t t = 0; t < m; ++t)
        std::copy(products.data() + t * arranged_rows, products.data() + t * arranged_rows + (n - whole), c + t * n + whole);
    add_bias_columns(c, bias, m, n, whole, n);
}

inline void arranged_float_gemm(ThreadPool& pool, const float* a, const float* w, const float* bias, float* c, std::size_t m,
                                std::size_t n, std::size_t k) {
    panel_rows_gemm(pool, a, w, bias, c, m, n, k, 4 * avx512::float_panel_rows, [](auto... args) { avx512::arranged_float_columns(args...); });
}

// The same for float or bf16 weights arranged for AVX2 (avx2::panel_rows_columns: bf16 widened
// to float as loaded, the activations float).
template <class E>
void avx2_arranged_float_gemm(ThreadPool& pool, const float* a, const E* w, const float* bias, float* c, std::size_t m,
                              std::size_t n, std::size_t k) {
    panel_rows_gemm(pool, a, w, bias, c, m, n, k, arranged_rows,
                    [](auto... args) { avx2::panel_rows_columns<panel_width<E>>(args...); });
}

}  // namespace tessera::cpu
#endif
