// The second translation unit of the ODR test (see test_odr_a.cpp), built without AVX-512: it
// holds the test cases, which run only on a CPU with AVX-512 and report themselves skipped
// elsewhere: test_odr_a.cpp's own code may use AVX-512 anywhere, and the linker may keep its
// copy of a template over Eigen for this unit too (Eigen follows the unit's flags: cpu::gemm<void>
// crashed this unit's product on an AVX2-only Zen 3; docs/architecture.md, "Known limit").
#include <catch2/catch.hpp>

#include <tessera/tessera.hpp>

#include "odr_products.hpp"
#include "skip.hpp"

float odr_sum_a();
double odr_product_error_a();

namespace {
float odr_sum_b() {
    tessera::Cpu cpu(1);
    tessera::Tensor<float, tessera::Extents<4>, tessera::Cpu> a, b, out;
    a(1) = 2.0f;
    b(1) = 3.0f;
    tessera::add(cpu, a, b, out);
    return out(1);
}

// Whether test_odr_a.cpp's code can run here (it is built with -mavx512f on x86-64).
bool unit_a_runs() {
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx512f");
#else
    return true;
#endif
}
}  // namespace

constexpr const char* without_avx512 =
    "test_odr_a.cpp is built for AVX-512, which this CPU lacks (its code, and its copies of templates over Eigen, may use it)";

TEST_CASE("Two translation units include every header and link", "[odr]") {
    if (!unit_a_runs()) return tessera::test::skip(without_avx512);
    CHECK(odr_sum_a() == 3.0f);
    CHECK(odr_sum_b() == 5.0f);
}

TEST_CASE("Units built for different instruction sets both compute correct products", "[odr]") {
    if (!unit_a_runs()) return tessera::test::skip(without_avx512);
    CHECK(odr_product_error_a() < 1e-5);               // the other unit: AVX-512 enabled
    CHECK(tessera::test::odr_product_error() < 1e-5);  // this unit: AVX-512 disabled
}
