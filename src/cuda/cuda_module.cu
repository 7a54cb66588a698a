// libtessera_cuda_gpt2.so, the CUDA backend's module: GPT-2 on the CUDA backend behind the
// LanguageModel interface, with the CUDA runtime and cuBLAS it needs. tessera::cuda
// (cuda_module_loader.cpp) loads it on first use, so a program that links tessera::cuda for a
// --backend flag maps none of it while it runs on the CPU. Instantiates GPT2<GPT2Dynamic, Cuda>,
// which runs every GPT-2 shape.
#include <filesystem>
#include <memory>

#include <tessera/backend/cuda/cuda.cuh>
#include <tessera/models/load_gpt2.hpp>

#include "cuda_module.hpp"

extern "C" {

const char* tessera_cuda_module_build_id() noexcept { return tessera::cuda_module::build_id; }

int tessera_cuda_module_device_count() noexcept { return tessera::cuda_device_count(); }

// Throws as open_gpt2 and Cuda's constructor do (the module shares the caller's C++ runtime).
tessera::LanguageModel* tessera_cuda_module_open_gpt2(const std::filesystem::path* dir, int device) {
    auto backend = std::make_shared<tessera::Cuda>(device);
    return tessera::open_gpt2(*backend, *dir, backend).release();
}

}  // extern "C"
