#pragma once
// open_gpt2_on("cpu" | "cuda", path, threads): GPT-2 on a backend named at run time, as a
// LanguageModel that owns its backend (a --backend flag's whole job). "cuda" needs tessera::cuda
// linked (open_gpt2_cuda) and runs on CUDA device `cuda_device`; the CPU backend is created
// with `cpu_threads` threads.
#include <filesystem>   // std::filesystem::path
#include <memory>       // std::unique_ptr, std::make_shared
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

#include <tessera/backend/cpu.hpp>             // Cpu
#include <tessera/core/error.hpp>              // ArgumentError
#include <tessera/models/load_gpt2.hpp>        // open_gpt2
#include <tessera/models/open_gpt2_cuda.hpp>   // open_gpt2_cuda

namespace tessera {

inline std::unique_ptr<LanguageModel> open_gpt2_on(std::string_view backend, const std::filesystem::path& dir,
                                                   unsigned cpu_threads, std::optional<WeightFormatId> weights = std::nullopt,
                                                   int cuda_device = 0) {
    if (backend == "cuda") {
        if (weights && *weights != WeightFormatId::f32) {
            throw ArgumentError("the CUDA backend runs f32 weights only (bf16, q8_0 and q4_0 run on the CPU backend)");
        }
        return open_gpt2_cuda(dir, cuda_device);
    }
    if (backend == "cpu") {
        auto cpu = std::make_shared<Cpu>(cpu_threads);
        return open_gpt2(*cpu, dir, cpu, weights);
    }
    throw ArgumentError("unknown backend '" + std::string(backend) + "': cpu or cuda");
}

}  // namespace tessera
