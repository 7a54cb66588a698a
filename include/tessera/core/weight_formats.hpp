#pragma once
// The formats weights can be stored in, as types: float, bf16, Q8_0, Q4_0, and Q6_K for the
// head of a Q4_0 model. A model's weight type is a template parameter (GPT2<Config, Cpu, Q8_0>),
// so each format has its own kernels and no kernel branches on a format at run time.
//
// WeightFormat<W> says how many weights one W holds and converts rows of floats to W and
// back. Quantization is GGML's reference algorithm, bit for bit (tools/quantize_reference.py
// is the independent numpy version the tests compare with), so that files written here and by
// llama.cpp's tools hold the same bytes for the same weights:
//   Q8_0: d = max|x| / 127, q = round(x / d) (half away from zero)
//   Q4_0: m = the x of largest magnitude (the first such), d = m / -8,
//         q = min(15, trunc(x / d + 8.5)); dequantized as d * (q - 8)
// with d stored as f16 (round to nearest even) and the quotient taken with the unrounded d.
//   Q6_K: per 16 weights the scale of GGML's make_qx_quants (a search over 19 trial scales
//         for the least weighted error), the 16 scales quantized to int8 against one f16 d,
//         then each weight rounded against its group's d * scale.
//   Q4_K, Q5_K: per 32 weights a scale and a min from make_qkx2_quants (least-squares fits
//         for 21 or 16 trial scales), quantized to 6 bits against f16 d and dmin.
//   Q5_0, Q5_1: as Q4_0 with five bits (Q5_1: an f16 min, d = (max - min) / 31), the K-quants'
//         fallbacks where rows are not whole super-blocks of 256.
// The K-quants and Q5_0 / Q5_1 are written by the reference algorithm and run as a file stores
// them: KQuantMix, the model format of llama-quantize's K-quant files, keeps each matrix in its
// own format (nn/linear.hpp).
#include <algorithm>    // std::clamp, std::min
#include <cmath>        // std::fabs, std::round, std::nearbyint, std::sqrt
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int8_t, std::uint8_t
#include <cstring>      // std::memset, std::memcpy
#include <optional>     // std::optional
#include <stdexcept>    // std::invalid_argument
#include <string_view>  // std::string_view
#include <tuple>        // std::tuple
#include <type_traits>  // std::conditional_t
#include <utility>      // std::forward

#include <tessera/core/dtype.hpp>  // bf16, f16, Q8_0, Q4_0, Q6_K, Q4_K, Q5_K

namespace tessera {

// A format named at run time (flags, files); WeightFormat<W>::id is its W's. q6_k, q4_k, q5_k,
// q5_0 and q5_1 are stored formats only (a Q4_0 model's head; the tensors of a K-quant file),
// k_quant_mix a model format only (KQuantMix: each matrix as its file stores it).
enum class WeightFormatId { f32, bf16, q8_0, q4_0, q6_k, q4_k, q5_k, q5_0, q5_1, k_quant_mix };

// Whether a model can keep its matrices in `id` (with_weight_type gives its type).
constexpr bool is_model_format(WeightFormatId id) noexcept {
    return id == WeightFormatId::f32 || id == WeightFormatId::bf16 || id == WeightFormatId::q8_0 || id == WeightFormatId::q4_0 ||
           id == WeightFormatId::k_quant_mix;
}

// The model format for a file whose first matrix is stored as `stored`: that format where a
// model keeps it, KQuantMix for a K-quant file's types, else float (F16: widened).
constexpr WeightFormatId model_format_for(WeightFormatId stored) noexcept {
    switch (stored) {
        case WeightFormatId::q6_k:
        case WeightFormatId::q4_k:
        case WeightFormatId::q5_k:
        case WeightFormatId::q5_0:
        case WeightFormatId::q5_1: return WeightFormatId::k_quant_mix;
        default: return is_model_format(stored) ? stored : WeightFormatId::f32;
    }
}

template <class W>
struct WeightFormat;

template <>
struct WeightFormat<float> {
    static constexpr std::size_t block = 1;  // weights per stored element
    static constexpr std::string_view name = "f32";
    static constexpr WeightFormatId id = WeightFormatId::f32;
    static void quantize(const float* x, float* y, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) y[i] = x[i];
    }
    static void dequantize(const float* x, float* y, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) y[i] = x[i];
    }
};

template <>
struct WeightFormat<bf16> {
    static constexpr std::size_t block = 1;
    static constexpr std::string_view name = "bf16";
    static constexpr WeightFormatId id = WeightFormatId::bf16;
    static void quantize(const float* x, bf16* y, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) y[i] = bf16(x[i]);
    }
    static void dequantize(const bf16* x, float* y, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
    }
};

template <>
struct WeightFormat<Q8_0> {
    static constexpr std::size_t block = 32;
    static constexpr std::string_view name = "q8_0";
    static constexpr WeightFormatId id = WeightFormatId::q8_0;
    // n weights (a multiple of 32) into n / 32 blocks.
    static void quantize(const float* x, Q8_0* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, x += block) {
            float amax = 0.0f;
            for (std::size_t j = 0; j < block; ++j) amax = std::fmax(amax, std::fabs(x[j]));
            const float d = amax / 127.0f;
            const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
            y[b].d = f16(d);
            for (std::size_t j = 0; j < block; ++j) y[b].qs[j] = static_cast<std::int8_t>(std::round(x[j] * inverse));
        }
    }
    static void dequantize(const Q8_0* x, float* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b) {
            const float d = static_cast<float>(x[b].d);
            for (std::size_t j = 0; j < block; ++j) y[b * block + j] = static_cast<float>(x[b].qs[j]) * d;
        }
    }
};

namespace detail {
// Q4_0 and Q5_0's quants of one block of 32 (Half 8 or 16): m = the x of largest magnitude (the
// first such), d = m / -Half, q = min(2 Half - 1, trunc(x / d + Half + 0.5)). Returns d.
template <int Half>
float symmetric_block_quants(const float* x, std::uint8_t* q) noexcept {
    float amax = 0.0f, max = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    const float d = max / static_cast<float>(-Half);
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    for (std::size_t j = 0; j < 32; ++j) {
        // The product rounded to float before the addition, whatever -ffp-contract says (a fused
        // multiply-add can land on the other side of an integer).
        volatile float scaled = x[j] * inverse;
        const int t = static_cast<std::int8_t>(scaled + (static_cast<float>(Half) + 0.5f));  // truncation, as GGML's (int8_t) cast
        q[j] = static_cast<std::uint8_t>(t < 2 * Half - 1 ? t : 2 * Half - 1);
    }
    return d;
}
}  // namespace detail

template <>
struct WeightFormat<Q4_0> {
    static constexpr std::size_t block = 32;
    static constexpr std::string_view name = "q4_0";
    static constexpr WeightFormatId id = WeightFormatId::q4_0;
    static void quantize(const float* x, Q4_0* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, x += block) {
            std::uint8_t q[block];
            y[b].d = f16(detail::symmetric_block_quants<8>(x, q));
            for (std::size_t j = 0; j < block / 2; ++j) y[b].qs[j] = static_cast<std::uint8_t>(q[j] | (q[j + block / 2] << 4));
        }
    }
    static void dequantize(const Q4_0* x, float* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b) {
            const float d = static_cast<float>(x[b].d);
            for (std::size_t j = 0; j < block / 2; ++j) {
                y[b * block + j] = static_cast<float>((x[b].qs[j] & 15) - 8) * d;
                y[b * block + j + block / 2] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
            }
        }
    }
};

namespace detail {
// Q5_0 / Q5_1's 32 five-bit quants: the low four bits of j and j + 16 in the nibbles of qs[j],
// the fifth of quant j in bit j of qh (little-endian).
inline void pack_five_bits(const std::uint8_t* q, std::uint8_t* qs, std::uint8_t* qh) noexcept {
    std::uint32_t high = 0;
    for (std::size_t j = 0; j < 16; ++j) {
        qs[j] = static_cast<std::uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
        high |= static_cast<std::uint32_t>((q[j] >> 4) & 1) << j;
        high |= static_cast<std::uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
    }
    for (std::size_t b = 0; b < 4; ++b) qh[b] = static_cast<std::uint8_t>(high >> (8 * b));
}
inline void unpack_five_bits(const std::uint8_t* qs, const std::uint8_t* qh, int* q) noexcept {
    const std::uint32_t high = qh[0] | (qh[1] << 8) | (qh[2] << 16) | (static_cast<std::uint32_t>(qh[3]) << 24);
    for (std::size_t j = 0; j < 16; ++j) {
        q[j] = static_cast<int>((qs[j] & 15) | (((high >> j) & 1) << 4));
        q[j + 16] = static_cast<int>((qs[j] >> 4) | (((high >> (j + 16)) & 1) << 4));
    }
}
}  // namespace detail

// Q5_0 as GGML's quantize_row_q5_0_ref writes it (m = the x of largest magnitude, d = m / -16,
// q = min(31, trunc(x / d + 16.5))) and dequantize_row_q5_0 reads it: d * (q - 16).
template <>
struct WeightFormat<Q5_0> {
    static constexpr std::size_t block = 32;
    static constexpr std::string_view name = "q5_0";
    static constexpr WeightFormatId id = WeightFormatId::q5_0;
    static void quantize(const float* x, Q5_0* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, x += block) {
            std::uint8_t q[block];
            y[b].d = f16(detail::symmetric_block_quants<16>(x, q));
            detail::pack_five_bits(q, y[b].qs, y[b].qh);
        }
    }
    static void dequantize(const Q5_0* x, float* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, y += block) {
            int q[block];
            detail::unpack_five_bits(x[b].qs, x[b].qh, q);
            const float d = static_cast<float>(x[b].d);
            for (std::size_t j = 0; j < block; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
        }
    }
};

// Q5_1 as GGML's quantize_row_q5_1_ref writes it (d = (max - min) / 31, m = min, q = trunc((x -
// min) / d + 0.5)) and dequantize_row_q5_1 reads it: d * q + m.
template <>
struct WeightFormat<Q5_1> {
    static constexpr std::size_t block = 32;
    static constexpr std::string_view name = "q5_1";
    static constexpr WeightFormatId id = WeightFormatId::q5_1;
    static void quantize(const float* x, Q5_1* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, x += block) {
            float min = x[0], max = x[0];
            for (std::size_t j = 1; j < block; ++j) {
                min = std::min(min, x[j]);
                max = std::max(max, x[j]);
            }
            const float d = (max - min) / 31.0f;
            const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
            y[b].d = f16(d);
            y[b].m = f16(min);
            std::uint8_t q[block];
            for (std::size_t j = 0; j < block; ++j) {
                volatile float scaled = (x[j] - min) * inverse;
                q[j] = static_cast<std::uint8_t>(scaled + 0.5f);
            }
            detail::pack_five_bits(q, y[b].qs, y[b].qh);
        }
    }
    static void dequantize(const Q5_1* x, float* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, y += block) {
            int q[block];
            detail::unpack_five_bits(x[b].qs, x[b].qh, q);
            const float d = static_cast<float>(x[b].d), m = static_cast<float>(x[b].m);
            for (std::size_t j = 0; j < block; ++j) y[j] = static_cast<float>(q[j]) * d + m;
        }
    }
};

namespace detail {
// GGML's nearest_int: the product rounded to float first (no fused multiply-add, whatever
// -ffp-contract says), then to the nearest integer, ties to even.
inline int nearest_int_of_product(float a, float b) noexcept {
    volatile float product = a * b;
    return static_cast<int>(std::nearbyint(product));
}

// GGML's make_qx_quants(16, 32, x, L, rmse_type 1, no importance weights): the scale of 16
// weights with the least error weighted by x², and their quants L (0-63) for it.
inline float q6_k_group_scale(const float* x, std::int8_t* L) noexcept {
    constexpr int n = 16, nmax = 32;
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (amax < 1e-15f) {  // GGML's GROUP_MAX_EPS: all zero
        std::memset(L, 0, n);
        return 0.0f;
    }
    // Sums over the group of x² · x · l and x² · l², each term rounded to float before it is
    // added (volatile: as GGML's C, not contracted into a fused multiply-add).
    const auto sums = [&](float iscale, float& sumlx, float& suml2) {
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int_of_product(iscale, x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            volatile float lx = w * x[i] * static_cast<float>(l), l2 = w * static_cast<float>(l) * static_cast<float>(l);
            sumlx += lx;
            suml2 += l2;
        }
    };
    const auto assign = [&](float iscale) {
        for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(nmax + std::clamp(nearest_int_of_product(iscale, x[i]), -nmax, nmax - 1));
    };
    float sumlx, suml2;
    sums(-nmax / max, sumlx, suml2);
    assign(-nmax / max);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    volatile float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sums(iscale, sumlx, suml2);
        volatile float lhs = sumlx * sumlx, rhs = best * suml2;
        if (suml2 > 0.0f && lhs > rhs) {
            assign(iscale);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}
}  // namespace detail

// Q6_K (256 weights per block) as GGML's quantize_row_q6_K_ref writes it, and read as its
// dequantize_row_q6_K: weight = d * scale * (q - 32).
template <>
struct WeightFormat<Q6_K> {
    static constexpr std::size_t block = 256;
    static constexpr std::string_view name = "q6_k";
    static constexpr WeightFormatId id = WeightFormatId::q6_k;
    static void quantize(const float* x, Q6_K* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, x += block) {
            std::int8_t L[block];
            float scales[16], max_scale = 0.0f, max_abs_scale = 0.0f;
            for (std::size_t g = 0; g < 16; ++g) {
                scales[g] = detail::q6_k_group_scale(x + 16 * g, L + 16 * g);
                if (std::fabs(scales[g]) > max_abs_scale) {
                    max_abs_scale = std::fabs(scales[g]);
                    max_scale = scales[g];
                }
            }
            Q6_K& out = y[b];
            if (max_abs_scale < 1e-15f) {
                out = Q6_K{};
                continue;
            }
            const float iscale = -128.0f / max_scale;
            out.d = f16(1.0f / iscale);
            for (std::size_t g = 0; g < 16; ++g)
                out.scales[g] = static_cast<std::int8_t>(std::min(127, detail::nearest_int_of_product(iscale, scales[g])));
            for (std::size_t g = 0; g < 16; ++g) {
                const float d = static_cast<float>(out.d) * static_cast<float>(out.scales[g]);
                if (d == 0.0f) continue;  // (the group keeps make_qx_quants' quants, as GGML's does)
                for (std::size_t i = 0; i < 16; ++i)
                    L[16 * g + i] = static_cast<std::int8_t>(32 + std::clamp(static_cast<int>(std::nearbyint(x[16 * g + i] / d)), -32, 31));
            }
            // Per half of 128: ql[l] holds weights l (low nibble) and l + 64 (high), ql[l + 32]
            // weights l + 32 and l + 96; qh[l] the high two bits of l, l + 32, l + 64, l + 96.
            for (std::size_t half = 0; half < 2; ++half) {
                const std::int8_t* q = L + 128 * half;
                std::uint8_t* ql = out.ql + 64 * half;
                std::uint8_t* qh = out.qh + 32 * half;
                for (std::size_t l = 0; l < 32; ++l) {
                    ql[l] = static_cast<std::uint8_t>((q[l] & 15) | ((q[l + 64] & 15) << 4));
                    ql[l + 32] = static_cast<std::uint8_t>((q[l + 32] & 15) | ((q[l + 96] & 15) << 4));
                    qh[l] = static_cast<std::uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
                }
            }
        }
    }
    // A super-block's 256 six-bit quants (0-63) in order. Per half of 128: ql[l] holds weights
    // l (low nibble) and l + 64 (high), ql[l + 32] weights l + 32 and l + 96; qh[l] the high two
    // bits of l, l + 32, l + 64, l + 96.
    static void quants(const Q6_K& x, std::uint8_t* q) noexcept {
        for (std::size_t half = 0; half < 2; ++half, q += 128) {
            const std::uint8_t* ql = x.ql + 64 * half;
            const std::uint8_t* qh = x.qh + 32 * half;
            for (std::size_t l = 0; l < 32; ++l) {
                q[l] = static_cast<std::uint8_t>((ql[l] & 15) | ((qh[l] & 3) << 4));
                q[l + 32] = static_cast<std::uint8_t>((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
                q[l + 64] = static_cast<std::uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
                q[l + 96] = static_cast<std::uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
            }
        }
    }
    static void dequantize(const Q6_K* x, float* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, y += block) {
            const float d = static_cast<float>(x[b].d);
            std::uint8_t q[block];
            quants(x[b], q);
            for (std::size_t i = 0; i < block; ++i)
                y[i] = d * static_cast<float>(x[b].scales[i / 16]) * static_cast<float>(static_cast<int>(q[i]) - 32);
        }
    }
};

namespace detail {
// The product a · b rounded to float (volatile: never fused into a following addition, as
// GGML's reference C computes it without FMA).
inline float product(float a, float b) noexcept {
    volatile float p = a * b;
    return p;
}

// GGML's make_qkx2_quants(32, nmax, x, weights, L, &the_min, Laux, rmin, rdelta, nstep, false):
// for 32 weights, the scale and min (returned, and *the_min = -min >= 0) with the least
// weighted squared error among the plain fit to [min(x, 0), max(x)] and the least-squares fits
// for the trial scales (rmin + rdelta i + nmax) / (max - min), i = 0..nstep; L gets the quants
// (0..nmax). Every sum runs left to right in float, each product rounded first.
inline float k_quant_group(int nmax, const float* x, const float* weights, std::uint8_t* L, float* the_min, float rmin,
                           float rdelta, int nstep) noexcept {
    constexpr int n = 32;
    float min = x[0], max = x[0], sum_w = weights[0], sum_x = product(sum_w, x[0]);
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += weights[i];
        sum_x += product(weights[i], x[i]);
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::memset(L, 0, n);
        *the_min = -min;
        return 0.0f;
    }
    const auto quant = [&](float iscale, float v) { return std::clamp(nearest_int_of_product(iscale, v - min), 0, nmax); };
    const auto squared_error = [&](float scale, float offset, const std::uint8_t* q) {
        float error = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = product(scale, static_cast<float>(q[i])) + offset - x[i];
            error += product(weights[i], product(diff, diff));
        }
        return error;
    };
    float iscale = static_cast<float>(nmax) / (max - min), scale = 1 / iscale;
    for (int i = 0; i < n; ++i) L[i] = static_cast<std::uint8_t>(quant(iscale, x[i]));
    float best = squared_error(scale, min, L);
    std::uint8_t trial[n];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + product(rdelta, static_cast<float>(is)) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            trial[i] = static_cast<std::uint8_t>(quant(iscale, x[i]));
            const float l = trial[i], wl = product(weights[i], l);
            sum_l += wl;
            sum_l2 += product(wl, l);
            sum_xl += product(wl, x[i]);
        }
        const float D = product(sum_w, sum_l2) - product(sum_l, sum_l);
        if (D > 0) {
            float this_scale = (product(sum_w, sum_xl) - product(sum_x, sum_l)) / D;
            float this_min = (product(sum_l2, sum_x) - product(sum_l, sum_xl)) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            const float error = squared_error(this_scale, this_min, trial);
            if (error < best) {
                std::memcpy(L, trial, n);
                best = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// Group g's 6-bit scale and min from a Q4_K / Q5_K `scales` field (GGML's get_scale_min_k4).
inline void k_scale_min(const std::uint8_t* scales, int g, std::uint8_t& scale, std::uint8_t& min) noexcept {
    if (g < 4) {
        scale = scales[g] & 63;
        min = scales[g + 4] & 63;
    } else {
        scale = static_cast<std::uint8_t>((scales[g + 4] & 15) | ((scales[g - 4] >> 6) << 4));
        min = static_cast<std::uint8_t>((scales[g + 4] >> 4) | ((scales[g] >> 6) << 4));
    }
}

// GGML's quantize_row_q4_K_ref / quantize_row_q5_K_ref for one super-block of 256 weights:
// each group of 32 fitted by k_quant_group (weights: the group's RMS plus |x|), the 8 scales
// and 8 mins quantized to 6 bits against d = max scale / 63 and dmin = max min / 63 (f16),
// then each weight requantized against its group's d · scale and dmin · min. L: the quants.
template <int Nmax>
void k_quant_super_block(const float* x, f16& d, f16& dmin, std::uint8_t* scales, std::uint8_t* L, float rmin, float rdelta,
                         int nstep) noexcept {
    float group_scales[8], group_mins[8], max_scale = 0, max_min = 0, weights[32];
    for (int g = 0; g < 8; ++g) {
        const float* xg = x + 32 * g;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += product(xg[l], xg[l]);
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xg[l]);
        group_scales[g] = k_quant_group(Nmax, xg, weights, L + 32 * g, &group_mins[g], rmin, rdelta, nstep);
        if (group_scales[g] > max_scale) max_scale = group_scales[g];
        if (group_mins[g] > max_min) max_min = group_mins[g];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    std::memset(scales, 0, 12);
    for (int g = 0; g < 8; ++g) {
        // (GGML stores nearest_int in a uint8_t before its MIN(63, ·): the same for these values.)
        const auto ls = static_cast<std::uint8_t>(std::min(63, nearest_int_of_product(inv_scale, group_scales[g]) & 255));
        const auto lm = static_cast<std::uint8_t>(std::min(63, nearest_int_of_product(inv_min, group_mins[g]) & 255));
        if (g < 4) {
            scales[g] = ls;
            scales[g + 4] = lm;
        } else {
            scales[g + 4] = static_cast<std::uint8_t>((ls & 15) | ((lm & 15) << 4));
            scales[g - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
            scales[g] |= static_cast<std::uint8_t>((lm >> 4) << 6);
        }
    }
    d = f16(max_scale / 63.0f);
    dmin = f16(max_min / 63.0f);
    for (int g = 0; g < 8; ++g) {
        std::uint8_t sc, m;
        k_scale_min(scales, g, sc, m);
        const float step = product(static_cast<float>(d), static_cast<float>(sc));
        if (step == 0.0f) continue;  // (the group keeps k_quant_group's quants, as GGML's does)
        const float offset = product(static_cast<float>(dmin), static_cast<float>(m));
        for (int i = 0; i < 32; ++i)
            L[32 * g + i] = static_cast<std::uint8_t>(std::clamp(static_cast<int>(std::nearbyint((x[32 * g + i] + offset) / step)), 0, Nmax));
    }
}

// What Q4_K and Q5_K share: super-blocks of 256 quantized by k_quant_super_block with
// WeightFormat<W>'s nmax and search (rmin, rdelta, nstep), the quants packed by its pack(),
// and read as d · scale · q − dmin · min from the 256 quants its quants() gives.
template <class W>
struct KQuantFormat {
    static constexpr std::size_t block = 256;
    static void quantize(const float* x, W* y, std::size_t n) noexcept {
        using F = WeightFormat<W>;
        for (std::size_t b = 0; b < n / block; ++b, x += block) {
            std::uint8_t L[block];
            k_quant_super_block<F::nmax>(x, y[b].d, y[b].dmin, y[b].scales, L, F::rmin, F::rdelta, F::nstep);
            F::pack(L, y[b]);
        }
    }
    static void dequantize(const W* x, float* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, y += block) {
            std::uint8_t q[block];
            WeightFormat<W>::quants(x[b], q);
            const float d = static_cast<float>(x[b].d), dmin = static_cast<float>(x[b].dmin);
            for (int g = 0; g < 8; ++g) {
                std::uint8_t sc, m;
                k_scale_min(x[b].scales, g, sc, m);
                const float step = product(d, static_cast<float>(sc)), offset = product(dmin, static_cast<float>(m));
                for (int i = 0; i < 32; ++i) y[32 * g + i] = product(step, static_cast<float>(q[32 * g + i])) - offset;
            }
        }
    }
};
}  // namespace detail

// Q4_K (256 weights per block) as GGML's quantize_row_q4_K_ref writes it (make_qkx2_quants with
// rmin -1, rdelta 0.1, 20 steps) and its dequantize_row_q4_K reads it.
template <>
struct WeightFormat<Q4_K> : detail::KQuantFormat<Q4_K> {
    static constexpr std::string_view name = "q4_k";
    static constexpr WeightFormatId id = WeightFormatId::q4_k;
    static constexpr int nmax = 15, nstep = 20;
    static constexpr float rmin = -1.0f, rdelta = 0.1f;
    // Groups 2h and 2h + 1 in the low and high nibbles of qs[32 h, 32 h + 32).
    static void pack(const std::uint8_t* L, Q4_K& y) noexcept {
        for (std::size_t half = 0; half < 4; ++half)
            for (std::size_t l = 0; l < 32; ++l)
                y.qs[32 * half + l] = static_cast<std::uint8_t>(L[64 * half + l] | (L[64 * half + l + 32] << 4));
    }
    static void quants(const Q4_K& x, std::uint8_t* q) noexcept {
        for (std::size_t half = 0; half < 4; ++half)
            for (std::size_t l = 0; l < 32; ++l) {
                q[64 * half + l] = x.qs[32 * half + l] & 15;
                q[64 * half + l + 32] = x.qs[32 * half + l] >> 4;
            }
    }
};

// Q5_K (256 weights per block) as GGML's quantize_row_q5_K_ref writes it (make_qkx2_quants with
// rmin -0.5, rdelta 0.1, 15 steps) and its dequantize_row_q5_K reads it.
template <>
struct WeightFormat<Q5_K> : detail::KQuantFormat<Q5_K> {
    static constexpr std::string_view name = "q5_k";
    static constexpr WeightFormatId id = WeightFormatId::q5_k;
    static constexpr int nmax = 31, nstep = 15;
    static constexpr float rmin = -0.5f, rdelta = 0.1f;
    // The low four bits as Q4_K's; the fifth of weight l of group g in bit g of qh[l].
    static void pack(const std::uint8_t* L, Q5_K& y) noexcept {
        std::memset(y.qh, 0, sizeof y.qh);
        for (std::size_t half = 0; half < 4; ++half)
            for (std::size_t l = 0; l < 32; ++l) {
                const int low = L[64 * half + l], high = L[64 * half + l + 32];
                y.qs[32 * half + l] = static_cast<std::uint8_t>((low & 15) | ((high & 15) << 4));
                y.qh[l] |= static_cast<std::uint8_t>(((low >> 4) << (2 * half)) | ((high >> 4) << (2 * half + 1)));
            }
    }
    static void quants(const Q5_K& x, std::uint8_t* q) noexcept {
        for (std::size_t half = 0; half < 4; ++half)
            for (std::size_t l = 0; l < 32; ++l) {
                q[64 * half + l] = static_cast<std::uint8_t>((x.qs[32 * half + l] & 15) | (((x.qh[l] >> (2 * half)) & 1) << 4));
                q[64 * half + l + 32] = static_cast<std::uint8_t>((x.qs[32 * half + l] >> 4) | (((x.qh[l] >> (2 * half + 1)) & 1) << 4));
            }
    }
};

// The model format of llama-quantize's K-quant files (Q4_K_M, Q5_K_M, Q6_K): not a stored
// format but a choice per matrix among these, made when it loads (whatever its file stores it
// in; any format not listed here as float). The layers keep which in a std::variant.
struct KQuantMix {
    using formats = std::tuple<Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, Q5_1, float>;
};
template <>
struct WeightFormat<KQuantMix> {
    static constexpr std::size_t block = 1;  // (each matrix its own: the variant's)
    static constexpr std::string_view name = "k-quant mix";
    static constexpr WeightFormatId id = WeightFormatId::k_quant_mix;
};

// A type weights can be stored as.
template <class W>
concept WeightType = requires {
    { WeightFormat<W>::block } -> std::convertible_to<std::size_t>;
    { WeightFormat<W>::name } -> std::convertible_to<std::string_view>;
};

// Stored elements for a row of `weights` weights (a multiple of the block, checked by callers).
template <WeightType W>
constexpr std::size_t stored_elements(std::size_t weights) noexcept {
    return weights / WeightFormat<W>::block;
}


// The format of the tied embedding / LM head of a model whose other matrices are W and whose
// rows hold `width` weights: W itself, except Q4_0, whose head stays wider, as llama.cpp keeps
// its Q4_0 files' output: Q6_K where the rows are whole super-blocks of 256 (every published
// GPT-2 but XL's 1600), else Q8_0 (llama-quantize's fallback too).
// Measured on the trained model (bench/RESULTS.md): a Q4_0 head makes 79% of the Q4_0 model's
// KL divergence from f32 (0.047 vs 0.010 with a Q8_0 head) and costs 9 points of top-1
// agreement, for 19 MB less to read per token at the 124M shape. Q6_K reads 9 MB less than
// Q8_0 there (31.7 MB); on a model trained 256 wide it raised the Q4_0 model's KL divergence
// from 0.0024 (Q8_0 head) to 0.0026, a Q4_0 head to 0.0093 (bench/RESULTS.md, eighth part).
template <class W>
struct HeadFormat {
    using wide = W;    // rows of whole super-blocks
    using narrow = W;  // any other width
};
template <>
struct HeadFormat<Q4_0> {
    using wide = Q6_K;
    using narrow = Q8_0;
};
// A K-quant file's head: Q6_K in all three mixes, Q8_0 where its rows are not whole super-blocks.
template <>
struct HeadFormat<KQuantMix> {
    using wide = Q6_K;
    using narrow = Q8_0;
};
template <class W>
constexpr bool wide_head_fits(std::size_t width) noexcept {
    return width % WeightFormat<typename HeadFormat<W>::wide>::block == 0;
}
// For a width known at compile time (Width = std::dynamic_extent: not known, the narrow one;
// the loader then chooses by the file's width, models/load_gpt2.hpp).
template <class W, std::size_t Width>
using head_weight_t = std::conditional_t<Width != static_cast<std::size_t>(-1) && wide_head_fits<W>(Width),
                                         typename HeadFormat<W>::wide, typename HeadFormat<W>::narrow>;

// "f32", "bf16", "q8_0", "q4_0" (the names of flags and files).
inline std::optional<WeightFormatId> weight_format_named(std::string_view name) noexcept {
    if (name == "f32") return WeightFormatId::f32;
    if (name == "bf16") return WeightFormatId::bf16;
    if (name == "q8_0") return WeightFormatId::q8_0;
    if (name == "q4_0") return WeightFormatId::q4_0;
    return std::nullopt;
}

// Calls f.template operator()<W>() with the type of `id`: the one place a run-time choice
// becomes a type.
template <class F>
decltype(auto) with_weight_type(WeightFormatId id, F&& f) {
    switch (id) {
        case WeightFormatId::bf16: return f.template operator()<bf16>();
        case WeightFormatId::q8_0: return f.template operator()<Q8_0>();
        case WeightFormatId::q4_0: return f.template operator()<Q4_0>();
        case WeightFormatId::k_quant_mix: return f.template operator()<KQuantMix>();
        case WeightFormatId::f32:
        case WeightFormatId::q6_k:  // (never a model's matrices: no flag or file gives them here)
        case WeightFormatId::q4_k:
        case WeightFormatId::q5_k:
        case WeightFormatId::q5_0:
        case WeightFormatId::q5_1: break;
    }
    return f.template operator()<float>();
}

// with_weight_type for a tensor's format, which may be a stored format only (Q6_K, Q4_K, Q5_K,
// Q5_0, Q5_1).
template <class F>
decltype(auto) with_stored_type(WeightFormatId id, F&& f) {
    switch (id) {
        case WeightFormatId::bf16: return f.template operator()<bf16>();
        case WeightFormatId::q8_0: return f.template operator()<Q8_0>();
        case WeightFormatId::q4_0: return f.template operator()<Q4_0>();
        case WeightFormatId::q6_k: return f.template operator()<Q6_K>();
        case WeightFormatId::q4_k: return f.template operator()<Q4_K>();
        case WeightFormatId::q5_k: return f.template operator()<Q5_K>();
        case WeightFormatId::q5_0: return f.template operator()<Q5_0>();
        case WeightFormatId::q5_1: return f.template operator()<Q5_1>();
        case WeightFormatId::k_quant_mix: throw std::invalid_argument("with_stored_type: the k-quant mix is no stored format");
        case WeightFormatId::f32: break;
    }
    return f.template operator()<float>();
}

// The head's format for matrices in `id` and rows of `width` weights (head_weight_t at run time).
inline WeightFormatId head_weight_format(WeightFormatId id, std::size_t width) noexcept {
    WeightFormatId head = id;
    with_weight_type(id, [&head, width]<class W>() {
        head = wide_head_fits<W>(width) ? WeightFormat<typename HeadFormat<W>::wide>::id : WeightFormat<typename HeadFormat<W>::narrow>::id;
    });
    return head;
}

inline std::string_view weight_format_name(WeightFormatId id) noexcept {
    if (id == WeightFormatId::k_quant_mix) return WeightFormat<KQuantMix>::name;
    std::string_view name;  // (a capturing lambda: nvcc rejects a captureless template lambda here)
    with_stored_type(id, [&name]<class W>() { name = WeightFormat<W>::name; });
    return name;
}

}  // namespace tessera
