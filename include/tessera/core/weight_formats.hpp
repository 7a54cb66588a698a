#pragma once
// The formats weights can be stored in, as types: float, bf16, Q8_0, Q4_0. A model's weight
// type is a template parameter (GPT2<Config, Cpu, Q8_0>), so each format has its own kernels
// and no kernel branches on a format at run time.
//
// WeightFormat<W> says how many weights one W holds and converts rows of floats to W and
// back. Quantization is GGML's reference algorithm, bit for bit (tools/quantize_reference.py
// is the independent numpy version the tests compare with), so that files written here and by
// llama.cpp's tools hold the same bytes for the same weights:
//   Q8_0: d = max|x| / 127, q = round(x / d) (half away from zero)
//   Q4_0: m = the x of largest magnitude (the first such), d = m / -8,
//         q = min(15, trunc(x / d + 8.5)); dequantized as d * (q - 8)
// with d stored as f16 (round to nearest even) and the quotient taken with the unrounded d.
#include <cmath>        // std::fabs, std::round
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int8_t, std::uint8_t
#include <optional>     // std::optional
#include <string_view>  // std::string_view

#include <tessera/core/dtype.hpp>  // bf16, f16, Q8_0, Q4_0

namespace tessera {

// A format named at run time (flags, files); WeightFormat<W>::id is its W's.
enum class WeightFormatId { f32, bf16, q8_0, q4_0 };

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


// The format of the tied embedding / LM head of a model whose other matrices are W: W itself,
// except Q4_0, whose head stays Q8_0 (as llama.cpp keeps its Q4_0 files' output in Q6_K).
// Measured on the trained model (bench/RESULTS.md): a Q4_0 head makes 79% of the Q4_0 model's
// KL divergence from f32 (0.047 vs 0.010 with a Q8_0 head) and costs 9 points of top-1
// agreement, for 19 MB less to read per token at the 124M shape.
template <class W>
struct HeadFormat {
    using type = W;
};
template <>
struct HeadFormat<Q4_0> {
    using type = Q8_0;
};
template <class W>
using head_weight_t = typename HeadFormat<W>::type;

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
        case WeightFormatId::f32: break;
    }
    return f.template operator()<float>();
}

// The head's format for matrices in `id` (head_weight_t at run time).
inline WeightFormatId head_weight_format(WeightFormatId id) noexcept {
    WeightFormatId head = id;
    with_weight_type(id, [&head]<class W>() { head = WeightFormat<head_weight_t<W>>::id; });
    return head;
}

inline std::string_view weight_format_name(WeightFormatId id) noexcept {
    std::string_view name;  // (a capturing lambda: nvcc rejects a captureless template lambda here)
    with_weight_type(id, [&name]<class W>() { name = WeightFormat<W>::name; });
    return name;
}

}  // namespace tessera
