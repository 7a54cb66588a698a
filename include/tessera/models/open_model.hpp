#pragma once
// open_model_on("cpu" | "cuda", path, threads): whatever decoder a model file holds, on a
// backend named at run time, as a LanguageModel that owns its backend: GPT-2
// (models/load_gpt2.hpp) or a Llama-family model (llama, qwen2, qwen3: models/load_llama.hpp),
// chosen by the file's general.architecture (GGUF) or config.json's model_type (a directory).
// Llama-family models run on the CPU backend; the CUDA backend runs GPT-2.
#include <filesystem>   // std::filesystem::path
#include <cstddef>      // std::size_t
#include <memory>       // std::unique_ptr
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

#include <tessera/core/error.hpp>                // FormatError
#include <tessera/core/weight_formats.hpp>       // WeightFormatId
#include <tessera/io/gguf.hpp>                   // GgufFile
#include <tessera/io/json.hpp>                   // parse_json
#include <tessera/io/read_only_file.hpp>         // read_whole_file
#include <tessera/models/language_model.hpp>     // LanguageModel
#include <tessera/models/model_files.hpp>        // model_path_kind

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

// `context`: positions to keep keys and values for (at most the model's; none: all of them).
// A GPT-2 keeps its own (its position table's), so for it a context is refused unless it is that.
// Compiled once in the tessera::models library (src/models/open_model.cpp): it instantiates the
// model for every architecture and weight format, which in each program that includes it cost
// 43 s and 1.3 GB of compiler memory (-O2). Link tessera::models; header-only code can call
// open_gpt2 / open_llama (models/load_gpt2.hpp, models/load_llama.hpp) instead.
std::unique_ptr<LanguageModel> open_model_on(std::string_view backend, const std::filesystem::path& path, unsigned cpu_threads,
                                             std::optional<WeightFormatId> weights = std::nullopt, int cuda_device = 0,
                                             std::optional<std::size_t> context = std::nullopt);

}  // namespace tessera
