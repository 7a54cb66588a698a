// Must not compile: w has 3072 rows, so c needs 3072 columns, not 768.
#include <tessera/tessera.hpp>

using namespace tessera;

int main() {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, 768>, Cpu> x(4);
    Tensor<float, Extents<3072, 768>, Cpu> w;
#ifdef TESSERA_EXPECT_OK
    Tensor<float, Extents<dyn, 3072>, Cpu> y(4);
#else
    Tensor<float, Extents<dyn, 768>, Cpu> y(4);
#endif
    gemm(cpu, x, w, y);
}
