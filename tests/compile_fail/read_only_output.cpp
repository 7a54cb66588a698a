// Must not compile: the output of gelu is a const tensor.
#include <tessera/tessera.hpp>

using namespace tessera;

int main() {
    Cpu cpu(1);
    Tensor<float, Extents<16>, Cpu> x;
#ifdef TESSERA_EXPECT_OK
    Tensor<float, Extents<16>, Cpu> y;
#else
    const Tensor<float, Extents<16>, Cpu> y;
#endif
    gelu(cpu, x, y);
}
