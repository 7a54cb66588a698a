#pragma once
// Storage types narrower than float: bf16 (bfloat16) and f16 (IEEE binary16). They hold bits
// only; arithmetic happens in float after an explicit widening. Conversions round to nearest,
// ties to even, keep infinities, turn NaN into a quiet NaN, and handle f16 subnormals, on the
// host and in CUDA device code alike (no dependency on cuda_fp16.h).
#include <cstdint>  // std::uint16_t, std::uint32_t
#include <type_traits>

#include <tessera/config.hpp>  // TESSERA_HOST_DEVICE

namespace tessera {

namespace detail {
// The builtin behind std::bit_cast: std::bit_cast itself is a host-only function to nvcc.
TESSERA_HOST_DEVICE constexpr std::uint32_t float_bits(float f) noexcept { return __builtin_bit_cast(std::uint32_t, f); }
TESSERA_HOST_DEVICE constexpr float bits_float(std::uint32_t u) noexcept { return __builtin_bit_cast(float, u); }
}  // namespace detail

struct bf16 {
    std::uint16_t bits = 0;

    constexpr bf16() = default;
    TESSERA_HOST_DEVICE constexpr explicit bf16(float f) noexcept : bits(round(f)) {}
    TESSERA_HOST_DEVICE static constexpr bf16 from_bits(std::uint16_t b) noexcept {
        bf16 h;
        h.bits = b;
        return h;
    }
    TESSERA_HOST_DEVICE constexpr explicit operator float() const noexcept {
        return detail::bits_float(std::uint32_t{bits} << 16);
    }

private:
    TESSERA_HOST_DEVICE static constexpr std::uint16_t round(float f) noexcept {
        const std::uint32_t u = detail::float_bits(f);
        // Round to nearest even on the 16 discarded bits; a carry may roll into the exponent,
        // which is exactly right (up to infinity). A NaN stays a NaN, quiet. (Both computed and
        // one chosen, without a branch, so that loops of conversions vectorise.)
        const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet_nan = (u >> 16) | 0x0040u;
        return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
    }
};

struct f16 {
    std::uint16_t bits = 0;

    constexpr f16() = default;
    TESSERA_HOST_DEVICE constexpr explicit f16(float f) noexcept : bits(round(f)) {}
    TESSERA_HOST_DEVICE static constexpr f16 from_bits(std::uint16_t b) noexcept {
        f16 h;
        h.bits = b;
        return h;
    }
    TESSERA_HOST_DEVICE constexpr explicit operator float() const noexcept {
        const std::uint32_t sign = std::uint32_t{bits & 0x8000u} << 16;
        const std::uint32_t exp = (bits >> 10) & 0x1fu;
        const std::uint32_t man = bits & 0x3ffu;
        if (exp == 0x1fu) return detail::bits_float(sign | 0x7f800000u | (man << 13));  // inf / NaN
        if (exp != 0) return detail::bits_float(sign | ((exp + 112u) << 23) | (man << 13));
        // Zero or subnormal: man * 2^-24, exact in float.
        const float magnitude = static_cast<float>(man) * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    }

private:
    TESSERA_HOST_DEVICE static constexpr std::uint16_t round(float f) noexcept {
        const std::uint32_t u = detail::float_bits(f);
        const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
        const std::uint32_t a = u & 0x7fffffffu;
        if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
        if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
        if (a >= 0x38800000u) {
            // Normal in f16: rebias the exponent (127 -> 15) and round the 13 dropped bits.
            const std::uint32_t rebased = a - 0x38000000u;
            const std::uint32_t rounding = 0xfffu + ((rebased >> 13) & 1u);
            return static_cast<std::uint16_t>(sign | ((rebased + rounding) >> 13));
        }
        if (a < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
        // Subnormal in f16: shift the full significand right and round to nearest even.
        const std::uint32_t exp = a >> 23;
        const std::uint32_t man = (a & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126u - exp;  // 14..24 for exponents 2^-15 .. 2^-25
        const std::uint32_t kept = man >> shift;
        const std::uint32_t rest = man & ((1u << shift) - 1u);
        const std::uint32_t half = 1u << (shift - 1u);
        const std::uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
        return static_cast<std::uint16_t>(sign | rounded);
    }
};

// Block-quantized weights, laid out exactly as GGUF's Q8_0 and Q4_0 (so a GGUF file's tensors
// are these arrays): 32 weights share one f16 scale d. Q8_0 holds weight j as d * qs[j];
// Q4_0 holds weight j as d * ((qs[j] & 15) - 8) and weight j + 16 as d * ((qs[j] >> 4) - 8).
// How they are made and used: core/weight_formats.hpp.
struct Q8_0 {
    f16 d;
    std::int8_t qs[32];
};
struct Q4_0 {
    f16 d;
    std::uint8_t qs[16];
};
// Q6_K super-blocks: 256 weights as 16 groups of 16 with an int8 scale each and one f16 d over
// them: weight = d * scales[g] * (q - 32), q six bits, its low four in ql, its high two in qh
// (llama-quantize's format for the tied embedding / head of its Q4_0 files).
struct Q6_K {
    std::uint8_t ql[128];
    std::uint8_t qh[64];
    std::int8_t scales[16];
    f16 d;
};
// Q4_K and Q5_K super-blocks: 256 weights as 8 groups of 32, each with a 6-bit scale and a
// 6-bit min (packed in `scales`: groups 0-3 in the low 6 bits of bytes 0-3 and 4-7, groups 4-7
// in the nibbles of bytes 8-11 with their top 2 bits in the top bits of bytes 0-7), against
// the f16 d and dmin: weight = d * scale * q - dmin * min, q four bits (Q5_K: plus a fifth in
// qh). The quants of groups 2i and 2i + 1 share qs[32 i, 32 i + 32): low and high nibbles.
struct Q4_K {
    f16 d, dmin;
    std::uint8_t scales[12];
    std::uint8_t qs[128];
};
struct Q5_K {
    f16 d, dmin;
    std::uint8_t scales[12];
    std::uint8_t qh[32];  // bit 2i of qh[l]: the fifth bit of weight l of group 2i; bit 2i + 1: of group 2i + 1
    std::uint8_t qs[128];
};
// Q5_0 and Q5_1: 32 weights with five bits each, the low four in qs (weight j's in the low
// nibble of qs[j], weight j + 16's in the high one), the fifth in bit j of the 32 bits of qh.
// Q5_0: weight = d * (q - 16); Q5_1: weight = d * q + m. (llama-quantize's fallbacks for Q4_K and
// Q5_K where a row is not whole super-blocks of 256: read widened to float.)
struct Q5_0 {
    f16 d;
    std::uint8_t qh[4];
    std::uint8_t qs[16];
};
struct Q5_1 {
    f16 d, m;
    std::uint8_t qh[4];
    std::uint8_t qs[16];
};
static_assert(sizeof(Q8_0) == 34 && sizeof(Q4_0) == 18 && sizeof(Q6_K) == 210 && sizeof(Q4_K) == 144 && sizeof(Q5_K) == 176 &&
                  sizeof(Q5_0) == 22 && sizeof(Q5_1) == 24,
              "GGUF's block sizes");

// The element types a Tensor may hold.
template <class T>
concept StorageType = std::is_same_v<std::remove_const_t<T>, float> || std::is_same_v<std::remove_const_t<T>, bf16> ||
                      std::is_same_v<std::remove_const_t<T>, f16> || std::is_same_v<std::remove_const_t<T>, std::int32_t> ||
                      std::is_same_v<std::remove_const_t<T>, Q8_0> || std::is_same_v<std::remove_const_t<T>, Q4_0> ||
                      std::is_same_v<std::remove_const_t<T>, Q6_K> || std::is_same_v<std::remove_const_t<T>, Q4_K> ||
                      std::is_same_v<std::remove_const_t<T>, Q5_K> || std::is_same_v<std::remove_const_t<T>, Q5_0> ||
                      std::is_same_v<std::remove_const_t<T>, Q5_1>;

// Widen any storage type to float (the compute type).
template <class T>
TESSERA_HOST_DEVICE constexpr float to_float(T v) noexcept {
    return static_cast<float>(v);
}

// Narrow float to a storage type with round-to-nearest-even.
template <class T>
TESSERA_HOST_DEVICE constexpr T from_float(float v) noexcept {
    return T(v);
}

}  // namespace tessera
