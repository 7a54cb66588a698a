// The umbrella header compiled by nvcc (host pass and device pass), then used on the CPU: a .cu
// file of a user's program may include tessera.hpp next to the CUDA backend.
#include <tessera/tessera.hpp>

#include <cstdio>

int main() {
    tessera::Cpu cpu(2);
    tessera::Tensor<float, tessera::Extents<tessera::dyn, 4>, tessera::Cpu> x(3), y(3);
    tessera::Tensor<float, tessera::Extents<4, 4>, tessera::Cpu> w;
    for (int i = 0; i < 4; ++i) w(i, i) = 2.0f;
    x(2, 3) = 1.5f;
    tessera::gemm(cpu, x, w, y);
    const bool ok = y(2, 3) == 3.0f && static_cast<float>(tessera::bf16(y(2, 3))) == 3.0f;
    std::printf("tessera.hpp under nvcc: %s\n", ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
