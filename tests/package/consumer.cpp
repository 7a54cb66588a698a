// A program outside tessera's tree that uses it as a dependency.
#include <tessera/models/open_gpt2_cuda.hpp>
#include <tessera/tessera.hpp>

#include <cstdio>

int main() {
    tessera::Cpu cpu(2);
    tessera::Tensor<float, tessera::Extents<tessera::dyn, 3>, tessera::Cpu> x(2);
    tessera::Tensor<float, tessera::Extents<3, 3>, tessera::Cpu> identity;
    tessera::Tensor<float, tessera::Extents<tessera::dyn, 3>, tessera::Cpu> y(2);
    for (int i = 0; i < 3; ++i) {
        identity(i, i) = 1.0f;
        x(1, i) = static_cast<float>(i + 1);
    }
    tessera::gemm(cpu, x, identity, y);
    const bool ok = y(1, 0) == 1.0f && y(1, 1) == 2.0f && y(1, 2) == 3.0f;
    // tessera::cuda links from a C++-only project, with or without CUDA in it.
    std::printf("tessera %d.%d consumer: %s; %d CUDA devices\n", tessera::version_major, tessera::version_minor,
                ok ? "ok" : "WRONG", tessera::cuda_devices());
    return ok ? 0 : 1;
}
