#pragma once
// An activation row quantized for the integer products with Q8_0 / Q4_0 / the K-quants' weights, and the
// portable products of one stored row with it (the reference every vector kernel must equal in
// its integer sums).
#include <algorithm>    // std::max
#include <cmath>        // std::fabs, std::nearbyint
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int8_t, std::int32_t
#include <cstring>      // std::memcpy
#include <type_traits>  // std::is_same_v
#include <vector>       // std::vector

#include <tessera/core/dtype.hpp>  // bf16, Q8_0, Q4_0, Q6_K

namespace tessera::cpu {

// The formats whose kernels read QuantizedRow::scaled_sums (weights with an offset or a min).
template <class W>
inline constexpr bool with_offsets =
    std::is_same_v<W, Q4_K> || std::is_same_v<W, Q5_K> || std::is_same_v<W, Q5_0> || std::is_same_v<W, Q5_1>;

// An activation row quantized for the integer products: k int8 values and k / 32 float scales.
struct QuantizedRow {
    std::vector<std::int8_t> q;
    std::vector<float> d;
    // For Q4_0's vector kernel: each pair of blocks b, b + 1 reordered as the nibbles unpack,
    // [b 0-15, b+1 0-15, b 16-31, b+1 16-31], and -8 times each group of four of those.
    std::vector<std::int8_t> q_pairs;
    std::vector<std::int32_t> minus_8x;
    // For Q8_0's few-row tiles, whose weights are made unsigned (w + 128): -128 times each
    // group of four of q.
    std::vector<std::int32_t> minus_128x;
    // For Q4_0's AVX2 kernel: per block, -8 times the sum of its q times its scale (the offset
    // of Q4_0's weights, whose nibbles are the unsigned operand).
    std::vector<float> minus_8_sum;
    // For Q6_K's kernels, whose six-bit quants 0-63 are the unsigned operand. AVX2: -32 times
    // each group of four of q, and of each group of 16 (minus_32_group). AVX-512 VNNI: per
    // super-block of 256, q as four vectors whose 32-bit lane i holds the first, second, third,
    // fourth four values of group i (16 values), and -32 times each group's sum.
    std::vector<std::int32_t> minus_32x;
    std::vector<std::int8_t> q_by_group;
    std::vector<std::int32_t> minus_32_group;
    // For the K-quants' and Q5_0 / Q5_1's kernels (products_k_quants.hpp): per block, its scale
    // times the sum of its q (what the weights' offsets multiply); for Q5_0's VNNI kernel, -16
    // times each group of four of q (its weights' offset, in the integer sums).
    std::vector<float> scaled_sums;
    std::vector<std::int32_t> minus_16x;
    // For Q4_K / Q5_K's VNNI kernel: per super-block of 256, q's groups of 32 in the order the
    // weights' 64-byte runs unpack (0, 2, 1, 3, 4, 6, 5, 7: low nibbles, then high), so that
    // each vpdpbusd reads its activations with one load.
    std::vector<std::int8_t> q_nibble_order;

    void reserve(std::size_t k) {
        if (q.size() < k) q.resize(k);
        if (d.size() < k / 32) d.resize(k / 32);
        if (q_pairs.size() < k) q_pairs.resize(k);
        if (minus_8x.size() < k / 4) minus_8x.resize(k / 4);
        if (minus_128x.size() < k / 4) minus_128x.resize(k / 4);
        if (minus_8_sum.size() < k / 32) minus_8_sum.resize(k / 32);
        if (minus_32x.size() < k / 4) minus_32x.resize(k / 4);
        if (q_by_group.size() < k) q_by_group.resize(k);
        if (minus_32_group.size() < k / 16) minus_32_group.resize(k / 16);
        if (scaled_sums.size() < k / 32) scaled_sums.resize(k / 32);
        if (minus_16x.size() < k / 4) minus_16x.resize(k / 4);
        if (q_nibble_order.size() < k) q_nibble_order.resize(k);
    }

    // x(k), k a multiple of 32: each block scaled so that its largest magnitude becomes 127,
    // rounded to nearest, ties to even (what the vector kernels' conversion does; the same
    // bits either way).
    void assign(const float* x, std::size_t k) {
        reserve(k);
        for (std::size_t b = 0; b < k / 32; ++b) {
            float amax = 0.0f;
            for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
            d[b] = amax / 127.0f;
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            for (std::size_t j = 0; j < 32; ++j) q[b * 32 + j] = static_cast<std::int8_t>(std::nearbyint(x[b * 32 + j] * id));
        }
    }
    // q_pairs and minus_8x from q, for the whole pairs of blocks of a row of k.
    void pair_for_nibbles(std::size_t k) {
        const std::size_t paired = k / 64 * 64;
        for (std::size_t b = 0; b < paired; b += 64) {
            for (std::size_t j = 0; j < 16; ++j) {
                q_pairs[b + j] = q[b + j];
                q_pairs[b + 16 + j] = q[b + 32 + j];
                q_pairs[b + 32 + j] = q[b + 16 + j];
                q_pairs[b + 48 + j] = q[b + 48 + j];
            }
        }
        for (std::size_t i = 0; i < paired / 4; ++i)
            minus_8x[i] = -8 * (q_pairs[4 * i] + q_pairs[4 * i + 1] + q_pairs[4 * i + 2] + q_pairs[4 * i + 3]);
    }
    void prepare_sums(std::size_t k) {
        for (std::size_t b = 0; b < k / 32; ++b) {
            int sum = 0;
            for (std::size_t j = 0; j < 32; ++j) sum += q[b * 32 + j];
            scaled_sums[b] = static_cast<float>(sum) * d[b];
        }
    }
    // What the AVX2 kernels of W's format read besides q and d (Q8_0's: nothing).
    template <class W>
    void prepare_for_avx2(std::size_t k) {
        if constexpr (with_offsets<W>) {
            prepare_sums(k);
        } else if constexpr (std::is_same_v<W, Q6_K>) {
            for (std::size_t i = 0; i < k / 4; ++i) minus_32x[i] = -32 * (q[4 * i] + q[4 * i + 1] + q[4 * i + 2] + q[4 * i + 3]);
            for (std::size_t g = 0; g < k / 16; ++g) {  // (the panels': per group of 16)
                int sum = 0;
                for (std::size_t i = 0; i < 4; ++i) sum += minus_32x[4 * g + i];
                minus_32_group[g] = sum;
            }
        } else if constexpr (std::is_same_v<W, Q4_0>) {
            for (std::size_t b = 0; b < k / 32; ++b) {
                int sum = 0;
                for (std::size_t j = 0; j < 32; ++j) sum += q[b * 32 + j];
                minus_8_sum[b] = static_cast<float>(-8 * sum) * d[b];
            }
        }
    }
    // What the few-row tiles of W's format (and Q6_K's VNNI kernel, for any number of rows) read
    // besides q and d.
    template <class W>
    void prepare_for(std::size_t k) {
        if constexpr (with_offsets<W>) {
            prepare_sums(k);
            if constexpr (std::is_same_v<W, Q5_0>)
                for (std::size_t i = 0; i < k / 4; ++i) minus_16x[i] = -16 * (q[4 * i] + q[4 * i + 1] + q[4 * i + 2] + q[4 * i + 3]);
            if constexpr (std::is_same_v<W, Q4_K> || std::is_same_v<W, Q5_K>) {
                constexpr std::size_t order[8] = {0, 2, 1, 3, 4, 6, 5, 7};
                for (std::size_t b = 0; b < k / 256; ++b)
                    for (std::size_t g = 0; g < 8; ++g) std::memcpy(&q_nibble_order[256 * b + 32 * g], &q[256 * b + 32 * order[g]], 32);
            }
        } else if constexpr (std::is_same_v<W, Q4_0>) {
            pair_for_nibbles(k);
        } else if constexpr (std::is_same_v<W, Q6_K>) {
            for (std::size_t b = 0; b < k / 256; ++b) {
                for (std::size_t group = 0; group < 16; ++group) {
                    int sum = 0;
                    for (std::size_t r = 0; r < 16; ++r) {
                        const std::int8_t v = q[b * 256 + 16 * group + r];
                        q_by_group[b * 256 + 64 * (r / 4) + 4 * group + r % 4] = v;
                        sum += v;
                    }
                    minus_32_group[b * 16 + group] = -32 * sum;
                }
            }
        } else {
            for (std::size_t i = 0; i < k / 4; ++i) minus_128x[i] = -128 * (q[4 * i] + q[4 * i + 1] + q[4 * i + 2] + q[4 * i + 3]);
        }
    }
};

namespace portable {

inline float dot(const bf16* w, const float* x, const QuantizedRow&, std::size_t k) noexcept {
    float s = 0.0f;
    for (std::size_t i = 0; i < k; ++i) s += static_cast<float>(w[i]) * x[i];
    return s;
}

// One block's integer dot product with 32 quantized activations.
inline int block_dot(const Q8_0& w, const std::int8_t* q) noexcept {
    int sum = 0;
    for (std::size_t j = 0; j < 32; ++j) sum += w.qs[j] * q[j];
    return sum;
}
inline int block_dot(const Q4_0& w, const std::int8_t* q) noexcept {
    int sum = 0;
    for (std::size_t j = 0; j < 16; ++j) sum += ((w.qs[j] & 15) - 8) * q[j] + ((w.qs[j] >> 4) - 8) * q[j + 16];
    return sum;
}

// Blocks [first, k / 32) of a Q8_0 or Q4_0 row times x.
template <class W>
    requires std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>
inline float dot(const W* w, const float*, const QuantizedRow& x, std::size_t k, std::size_t first = 0) noexcept {
    float s = 0.0f;
    for (std::size_t b = first; b < k / 32; ++b)
        s += static_cast<float>(block_dot(w[b], x.q.data() + b * 32)) * static_cast<float>(w[b].d) * x.d[b];
    return s;
}

}  // namespace portable
}  // namespace tessera::cpu
