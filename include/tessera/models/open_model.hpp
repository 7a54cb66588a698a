#pragma once
// open_model_on("cpu" | "cuda", path, threads): whatever decoder a model file holds, on a
// backend named at run time, as a LanguageModel that owns its backend: GPT-2
// (models/load_gpt2.hpp) or a Llama-family model (llama, qwen2, qwen3: models/load_llama.hpp),
// chosen by the file's general.architecture (GGUF) or config.json's model_type (a directory).
// Llama-family models run on the CPU backend; the CUDA backend runs GPT-2.
#include <filesystem>   // std::filesystem::path
#include <memory>       // std::unique_ptr, std::make_shared
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

#include <tessera/backend/cpu.hpp>               // Cpu
#include <tessera/core/error.hpp>                // ArgumentError, FormatError
#include <tessera/io/gguf.hpp>                   // GgufFile
#include <tessera/io/json.hpp>                   // parse_json
#include <tessera/io/read_only_file.hpp>         // read_whole_file
#include <tessera/models/llama_checkpoints.hpp>  // is_llama_family
#include <tessera/models/load_llama.hpp>         // open_llama
#include <tessera/models/model_files.hpp>        // model_path_kind
#include <tessera/models/open_gpt2_on.hpp>       // open_gpt2_on

namespace tessera {

// The architecture a model file holds: GGUF's general.architecture, or config.json's
// model_type ("gpt2" when a directory's config.json names none, as GPT-2's older ones do).
inline std::string model_architecture(const std::filesystem::path& path) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) return io::GgufFile(path).string_value("general.architecture");
    const std::filesystem::path config = path / "config.json";
    const io::JsonValue j = io::parse_json(io::read_whole_file(config, 16 << 20), config.string());
    const io::JsonValue* type = j.is_object() ? j.find("model_type") : nullptr;
    if (type == nullptr || type->is_null()) return "gpt2";
    if (!type->is_string()) throw FormatError(config.string() + ": 'model_type' must be a string, got " + type->describe());
    return type->as_string();
}

inline std::unique_ptr<LanguageModel> open_model_on(std::string_view backend, const std::filesystem::path& path, unsigned cpu_threads,
                                                    std::optional<WeightFormatId> weights = std::nullopt, int cuda_device = 0) {
    const std::string architecture = model_architecture(path);
    if (architecture == "gpt2") return open_gpt2_on(backend, path, cpu_threads, weights, cuda_device);
    if (!is_llama_family(architecture)) {
        throw FormatError(path.string() + ": the architecture '" + architecture + "' is not supported (gpt2, llama, mistral, qwen2, qwen3 are)");
    }
    if (backend == "cuda") throw ArgumentError("the CUDA backend runs GPT-2 only: run " + architecture + " models with --backend cpu");
    if (backend != "cpu") throw ArgumentError("unknown backend '" + std::string(backend) + "': cpu or cuda");
    auto cpu = std::make_shared<Cpu>(cpu_threads);
    return open_llama(*cpu, path, cpu, weights);
}

}  // namespace tessera
