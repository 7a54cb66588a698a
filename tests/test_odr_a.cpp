// One of two translation units that include every header, built with different instruction
// sets (this one with AVX-512 enabled, test_odr_b.cpp with it disabled) and linked into one
// program. A non-inline function defined in a header makes the link fail with a duplicate
// symbol; a kernel whose body depended on the -march flags would leave one of the two bodies
// running for both (the AVX-512 one would crash a CPU without it). The kernels pick their
// instruction set at run time instead, so both units compute the same, correct products.
#include <catch2/catch.hpp>

#include <tessera/tessera.hpp>

#include "odr_products.hpp"

float odr_sum_b();
double odr_product_error_b();

namespace {
float odr_sum_a() {
    tessera::Cpu cpu(2);
    tessera::Tensor<float, tessera::Extents<4>, tessera::Cpu> a, b, out;
    a(1) = 1.0f;
    b(1) = 2.0f;
    tessera::add(cpu, a, b, out);
    return out(1);
}
}  // namespace

TEST_CASE("Two translation units include every header and link", "[odr]") {
    CHECK(odr_sum_a() == 3.0f);
    CHECK(odr_sum_b() == 5.0f);
}

TEST_CASE("Units built for different instruction sets both compute correct products", "[odr]") {
    CHECK(tessera::test::odr_product_error() < 1e-5);  // this unit: AVX-512 enabled
    CHECK(odr_product_error_b() < 1e-5);               // the other: AVX-512 disabled
}
