// A program outside tessera's tree that uses it as a dependency.
#include <tessera/models/open_gpt2_cuda.hpp>
#include <tessera/models/open_model.hpp>
#include <tessera/tessera.hpp>

#include <cstdio>
#include <exception>

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
    bool refused = false;  // tessera::models links: open_model_on names a missing model
    try {
        tessera::open_model_on("cpu", "/nonexistent/model.gguf", 1);
    } catch (const std::exception&) {
        refused = true;
    }
    const bool ok = y(1, 0) == 1.0f && y(1, 1) == 2.0f && y(1, 2) == 3.0f && refused;
    // tessera::cuda links from a C++-only project, with or without CUDA in it.
    std::printf("tessera %d.%d consumer: %s; %d CUDA devices\n", tessera::version_major, tessera::version_minor,
                ok ? "ok" : "WRONG", tessera::cuda_devices());
    return ok ? 0 : 1;
}
