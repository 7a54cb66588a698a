// Must not compile: a (4, 8) tensor cannot be added to a (4, 9) one.
#include <tessera/tessera.hpp>

using namespace tessera;

int main() {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, 8>, Cpu> a(4);
#ifdef TESSERA_EXPECT_OK
    Tensor<float, Extents<4, 8>, Cpu> b;
#else
    Tensor<float, Extents<4, 9>, Cpu> b;
#endif
    add(cpu, a, b, a);
}
