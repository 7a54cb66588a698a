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
#include <algorithm>    // std::clamp, std::min
#include <cmath>        // std::fabs, std::round, std::nearbyint
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int8_t, std::uint8_t
#include <cstring>      // std::memset
#include <optional>     // std::optional
#include <string_view>  // std::string_view
#include <type_traits>  // std::conditional_t
#include <utility>      // std::forward

#include <tessera/core/dtype.hpp>  // bf16, f16, Q8_0, Q4_0, Q6_K

namespace tessera {

// A format named at run time (flags, files); WeightFormat<W>::id is its W's.
// (q6_k only ever holds a head: no model has its matrices in it.)
enum class WeightFormatId { f32, bf16, q8_0, q4_0, q6_k };

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

template <>
struct WeightFormat<Q4_0> {
    static constexpr std::size_t block = 32;
    static constexpr std::string_view name = "q4_0";
    static constexpr WeightFormatId id = WeightFormatId::q4_0;
    static void quantize(const float* x, Q4_0* y, std::size_t n) noexcept {
        for (std::size_t b = 0; b < n / block; ++b, x += block) {
            float amax = 0.0f, max = 0.0f;
            for (std::size_t j = 0; j < block; ++j) {
                if (amax < std::fabs(x[j])) {
                    amax = std::fabs(x[j]);
                    max = x[j];
                }
            }
            const float d = max / -8.0f;
            const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
            y[b].d = f16(d);
            const auto q = [&](float v) {
                // The product rounded to float before the addition, whatever -ffp-contract says
                // (a fused multiply-add can land on the other side of an integer).
                volatile float scaled = v * inverse;
                const int t = static_cast<std::int8_t>(scaled + 8.5f);  // truncation, as GGML's (int8_t) cast
                return static_cast<std::uint8_t>(t < 15 ? t : 15);
            };
            for (std::size_t j = 0; j < block / 2; ++j)
                y[b].qs[j] = static_cast<std::uint8_t>(q(x[j]) | (q(x[j + block / 2]) << 4));
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
        case WeightFormatId::f32:
        case WeightFormatId::q6_k: break;  // (never a model's matrices: no flag or file gives it here)
    }
    return f.template operator()<float>();
}

// with_weight_type for a tensor's format, which may be a head's too (Q6_K).
template <class F>
decltype(auto) with_stored_type(WeightFormatId id, F&& f) {
    if (id == WeightFormatId::q6_k) return f.template operator()<Q6_K>();
    return with_weight_type(id, std::forward<F>(f));
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
    std::string_view name;  // (a capturing lambda: nvcc rejects a captureless template lambda here)
    with_stored_type(id, [&name]<class W>() { name = WeightFormat<W>::name; });
    return name;
}

}  // namespace tessera
