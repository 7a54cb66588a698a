// Must not compile: x has 768 columns, w (out 3072, in 512) expects 512.
#include <tessera/tessera.hpp>

using namespace tessera;

int main() {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, 768>, Cpu> x(4);
#ifdef TESSERA_EXPECT_OK
    Tensor<float, Extents<3072, 768>, Cpu> w;
#else
    Tensor<float, Extents<3072, 512>, Cpu> w;
#endif
    Tensor<float, Extents<dyn, 3072>, Cpu> y(4);
    gemm(cpu, x, w, y);
}
