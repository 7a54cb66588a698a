// One of two translation units that include every header: a non-inline function defined in a
// header makes the link fail with a duplicate symbol.
#include <catch2/catch.hpp>

#include <tessera/tessera.hpp>

float odr_sum_b();

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
