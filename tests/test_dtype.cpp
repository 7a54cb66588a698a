// bf16 and f16 storage types. References: GCC's _Float16 (the compiler's own IEEE binary16
// conversions) for f16, and a closed-form nearest-even choice computed in double for bf16.
#include <catch2/catch.hpp>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <tessera/core/dtype.hpp>

using tessera::bf16;
using tessera::f16;

namespace {

// Floats that stress rounding: random bit patterns plus every boundary we know of.
std::vector<float> probe_floats() {
    std::vector<float> xs;
    std::mt19937 rng(12345);
    for (int i = 0; i < 200000; ++i) xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
    // Dense sweep of the f16 range, including its subnormals and the overflow threshold.
    for (std::uint32_t u = 0x33000000u - 4; u < 0x47800000u; u += 97) {
        xs.push_back(std::bit_cast<float>(u));
        xs.push_back(-std::bit_cast<float>(u));
    }
    const float specials[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f, 5.96e-8f, 2.98e-8f,
                              2.9802322e-08f, 6.1035156e-05f, 3.4028235e38f, std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                              1.0f + 1.0f / 256.0f, 1.0f + 3.0f / 256.0f, 1.0f + 1.0f / 2048.0f};
    for (const float s : specials) {
        xs.push_back(s);
        xs.push_back(-s);
    }
    return xs;
}

// Nearest bf16 by exhaustive comparison in double, ties to an even significand.
std::uint16_t reference_bf16(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t lo = u & 0xffff0000u;  // toward zero
    const std::uint32_t hi = lo + 0x10000u;    // away from zero (may become inf)
    const double dx = std::fabs(static_cast<double>(x));
    const double dlo = std::fabs(static_cast<double>(std::bit_cast<float>(lo)));
    const bool hi_is_inf = (hi & 0x7fffffffu) == 0x7f800000u;
    const double dhi = hi_is_inf ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(std::bit_cast<float>(hi)));
    const double to_lo = dx - dlo;
    const double to_hi = dhi - dx;
    if (to_lo < to_hi) return static_cast<std::uint16_t>(lo >> 16);
    if (to_hi < to_lo) return static_cast<std::uint16_t>(hi >> 16);
    return static_cast<std::uint16_t>(((lo >> 16) & 1u) ? hi >> 16 : lo >> 16);
}

}  // namespace

TEST_CASE("f16 widening matches _Float16 for all 65536 patterns", "[dtype]") {
    for (std::uint32_t b = 0; b < 0x10000u; ++b) {
        const auto h = f16::from_bits(static_cast<std::uint16_t>(b));
        const float mine = static_cast<float>(h);
        const float ref = static_cast<float>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(b)));
        if (std::isnan(ref)) {
            REQUIRE(std::isnan(mine));
        } else {
            REQUIRE(std::bit_cast<std::uint32_t>(mine) == std::bit_cast<std::uint32_t>(ref));
            REQUIRE(f16(mine).bits == b);  // widening then narrowing is exact
        }
    }
}

TEST_CASE("f16 narrowing rounds like _Float16", "[dtype]") {
    for (const float x : probe_floats()) {
        const auto ref = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
        const auto mine = f16(x).bits;
        if (std::isnan(x)) {
            REQUIRE(std::isnan(static_cast<float>(f16(x))));
        } else {
            INFO("x = " << x << " bits 0x" << std::hex << std::bit_cast<std::uint32_t>(x));
            REQUIRE(mine == ref);
        }
    }
}

TEST_CASE("bf16 widening is exact and round-trips", "[dtype]") {
    for (std::uint32_t b = 0; b < 0x10000u; ++b) {
        const auto h = bf16::from_bits(static_cast<std::uint16_t>(b));
        const float f = static_cast<float>(h);
        REQUIRE(std::bit_cast<std::uint32_t>(f) == b << 16);
        if (!std::isnan(f)) REQUIRE(bf16(f).bits == b);
    }
}

TEST_CASE("bf16 narrowing rounds to nearest even", "[dtype]") {
    for (const float x : probe_floats()) {
        if (std::isnan(x)) {
            REQUIRE(std::isnan(static_cast<float>(bf16(x))));
            continue;
        }
        INFO("x = " << x << " bits 0x" << std::hex << std::bit_cast<std::uint32_t>(x));
        REQUIRE(bf16(x).bits == reference_bf16(x));
    }
}

TEST_CASE("NaN stays NaN, even when its payload sits in the dropped bits", "[dtype]") {
    const float nan_low_payload = std::bit_cast<float>(0x7f800001u);  // signalling NaN, payload only in low bits
    CHECK(std::isnan(static_cast<float>(bf16(nan_low_payload))));
    CHECK(std::isnan(static_cast<float>(f16(nan_low_payload))));
    CHECK(std::isinf(static_cast<float>(bf16(3.4028235e38f))));  // max float rounds up to inf in bf16
}

TEST_CASE("Conversions are usable in constant expressions", "[dtype]") {
    STATIC_REQUIRE(static_cast<float>(bf16(1.5f)) == 1.5f);
    STATIC_REQUIRE(f16(65520.0f).bits == 0x7c00);
    STATIC_REQUIRE(f16(1.0f).bits == 0x3c00);
}
