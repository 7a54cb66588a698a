// The second translation unit of the ODR test (see test_odr_a.cpp), built without AVX-512.
#include <tessera/tessera.hpp>

#include "odr_products.hpp"

float odr_sum_b() {
    tessera::Cpu cpu(1);
    tessera::Tensor<float, tessera::Extents<4>, tessera::Cpu> a, b, out;
    a(1) = 2.0f;
    b(1) = 3.0f;
    tessera::add(cpu, a, b, out);
    return out(1);
}

double odr_product_error_b() { return tessera::test::odr_product_error(); }
