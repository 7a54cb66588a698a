#pragma once
// open_gpt2_cuda: GPT-2 on the CUDA backend for host-only code. GPT2<Config, Cuda> holds thrust
// device buffers, which exist only in nvcc-compiled code, so it is built in the tessera::cuda
// library (src/cuda/open_gpt2_cuda.cu) and handed over as a LanguageModel. Link tessera::cuda.
// A .cu file can instead use GPT2<Config, Cuda> directly (tessera/backend/cuda/cuda.cuh).
#include <filesystem>  // std::filesystem::path
#include <memory>      // std::unique_ptr

#include <tessera/models/language_model.hpp>  // LanguageModel

namespace tessera {

// Loads dir (config.json + model.safetensors, Hugging Face layout) onto CUDA device `device`.
// BackendError when there is no CUDA device, or when tessera::cuda was built without CUDA;
// FormatError for a bad model directory, as open_gpt2.
std::unique_ptr<LanguageModel> open_gpt2_cuda(const std::filesystem::path& dir, int device = 0);

// Number of CUDA devices visible (0 without a driver, a GPU, or a CUDA build).
int cuda_devices() noexcept;

}  // namespace tessera
