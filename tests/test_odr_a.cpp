// One of two translation units that include every header, built with different instruction
// sets (this one with AVX-512 enabled, test_odr_b.cpp with it disabled) and linked into one
// program. A non-inline function defined in a header makes the link fail with a duplicate
// symbol; a kernel whose body depended on the -march flags would leave one of the two bodies
// running for both (the AVX-512 one would crash a CPU without it). The kernels pick their
// instruction set at run time instead, so both units compute the same, correct products.
#include <tessera/tessera.hpp>

#include "odr_products.hpp"

// Called from test_odr_b.cpp's test cases (built without AVX-512) only where the CPU has
// AVX-512: this unit's own code may use it anywhere.
float odr_sum_a() {
    tessera::Cpu cpu(2);
    tessera::Tensor<float, tessera::Extents<4>, tessera::Cpu> a, b, out;
    a(1) = 1.0f;
    b(1) = 2.0f;
    tessera::add(cpu, a, b, out);
    return out(1);
}

double odr_product_error_a() { return tessera::test::odr_product_error(); }
