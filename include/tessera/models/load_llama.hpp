#pragma once
// From a Llama-family GGUF file or Hugging Face directory (config.json + model.safetensors) to
// a Llama model: LlamaFiles opens and checks them; open_llama(backend, path) returns the model
// as a LanguageModel with its matrices in the format the file stores them (f32 for
// safetensors, whose F16/BF16 load as float) or the one asked for.
#include <filesystem>  // std::filesystem::path
#include <memory>      // std::unique_ptr, std::make_unique, std::shared_ptr
#include <optional>    // std::optional
#include <string>      // std::string
#include <vector>      // std::vector

#include <tessera/backend/backend.hpp>           // RunsWeightsAs
#include <tessera/config.hpp>                    // TESSERA_PARSER_INLINE
#include <tessera/core/error.hpp>                // FormatError, ArgumentError
#include <tessera/core/weight_formats.hpp>       // WeightFormatId, with_weight_type
#include <tessera/io/gguf.hpp>                   // GgufFile
#include <tessera/io/json.hpp>                   // parse_json
#include <tessera/io/read_only_file.hpp>         // read_whole_file
#include <tessera/io/safetensors_shards.hpp>     // SafetensorsShards
#include <tessera/models/gpt2_checkpoints.hpp>   // detail::blocks_held, check_blocks_held
#include <tessera/models/language_model.hpp>     // LanguageModel, LanguageModelFor
#include <tessera/models/llama.hpp>              // Llama, LlamaShape
#include <tessera/models/compiled_models.hpp>  // (with tessera::models: the models it holds compiled)
#include <tessera/models/llama_checkpoints.hpp>  // GgufLlamaCheckpoint, SafetensorsLlamaCheckpoint
#include <tessera/models/model_files.hpp>        // model_path_kind, model_files

namespace tessera {

class LlamaFiles {
public:
    explicit LlamaFiles(const std::filesystem::path& path);
    LlamaFiles(const LlamaFiles&) = delete;  // the checkpoint refers to the file
    LlamaFiles& operator=(const LlamaFiles&) = delete;

    const LlamaShape& shape() const noexcept { return shape_; }
    const Checkpoint& checkpoint() const noexcept { return *checkpoint_; }
    WeightFormatId stored_format() const noexcept { return stored_; }
    const std::vector<std::filesystem::path>& paths() const noexcept { return paths_; }
    // The GGUF file, or nullptr for a Hugging Face directory.
    const io::GgufFile* gguf() const noexcept { return gguf_ ? &*gguf_ : nullptr; }

private:
    std::vector<std::filesystem::path> paths_;
    LlamaShape shape_;
    std::optional<io::SafetensorsShards> safetensors_;
    std::optional<io::GgufFile> gguf_;
    std::unique_ptr<Checkpoint> checkpoint_;
    WeightFormatId stored_ = WeightFormatId::f32;
};

#if TESSERA_PARSER_DEFINITIONS  // (config.hpp: compiled in tessera::models where a program links it)
TESSERA_PARSER_INLINE LlamaFiles::LlamaFiles(const std::filesystem::path& path) : paths_(model_files(path)) {
    std::vector<std::string> names;
    double held = 0;
    std::string block_prefix;
    if (model_path_kind(path) == ModelPathKind::gguf_file) {
        gguf_.emplace(path);
        shape_ = gguf_llama_shape(*gguf_);
        checkpoint_ = std::make_unique<GgufLlamaCheckpoint>(*gguf_, shape_.architecture);
        const auto format = weight_format_of(gguf_->tensor("blk.0.attn_q.weight").type);
        stored_ = format ? model_format_for(*format) : WeightFormatId::f32;
        for (const io::GgufTensorInfo& t : gguf_->tensors()) {
            names.push_back(t.name);
            held += static_cast<double>(t.elements());
        }
        block_prefix = "blk.";
    } else {
        const std::filesystem::path config = path / "config.json";
        shape_ = hf_llama_shape(io::parse_json(io::read_whole_file(config, 16 << 20), config.string()), config.string());
        safetensors_.emplace(path);  // model.safetensors, or the shards of model.safetensors.index.json
        checkpoint_ = std::make_unique<SafetensorsLlamaCheckpoint>(*safetensors_);
        names = safetensors_->names();
        for (const std::string& name : names) held += static_cast<double>(safetensors_->info(name).elements());
        block_prefix = "model.layers.";
    }
    const std::string file = checkpoint_->path();
    LlamaArchitecture::check(shape_);
    // A shape that implies more weights than the file holds is refused before it asks for
    // hundreds of gigabytes.
    if (shape_.parameters() > held) {
        throw FormatError(file + ": the shape its metadata gives (" + shape_.describe() + ") has " +
                          std::to_string(shape_.parameters()) + " weights, but the file holds only " + std::to_string(held));
    }
    detail::check_blocks_held(file, "the block count is", shape_.n_layer, detail::blocks_held(names, block_prefix));
}
#endif

// Llama<B, W, HeadW> of the files' shape with their weights, W as asked (none: as the file
// stores it; the head as with_head_type chooses), over `context` positions when given (at most
// the model's: a 128K-position Llama 3.2 keeps 4 GB of f32 keys and values per sequence at its
// full context).
template <class B>
std::unique_ptr<LanguageModel> open_llama(B& backend, const std::filesystem::path& path, std::shared_ptr<void> keep_alive = nullptr,
                                          std::optional<WeightFormatId> weights = std::nullopt,
                                          std::optional<std::size_t> context = std::nullopt) {
    const LlamaFiles files(path);
    LlamaShape shape = files.shape();
    if (context) {
        if (*context == 0 || *context > shape.n_ctx) {
            throw ArgumentError("a context of " + std::to_string(*context) + " positions: the model " + path.string() + " has " +
                                std::to_string(shape.n_ctx) + " (give 1 to " + std::to_string(shape.n_ctx) + ")");
        }
        shape.n_ctx = *context;
    }
    std::unique_ptr<LanguageModel> result;
    with_weight_type(weights.value_or(files.stored_format()), [&]<class W>() {
        if constexpr (RunsWeightsAs<B, W> && LlamaArchitecture::runs_on<B>) {
            with_head_type<W, B>(shape.n_embd, [&]<class HeadW>() {
                auto model = std::make_unique<Llama<B, W, HeadW>>(backend, shape);
                model->load(files.checkpoint());
                std::string description = model->description() + " on " + B::name;
                result = std::make_unique<LanguageModelFor<Llama<B, W, HeadW>>>(std::move(model), std::move(description), keep_alive);
            });
        } else {
            throw ArgumentError(std::string("the ") + B::name + " backend has no kernels for Llama-family models with " +
                                std::string(WeightFormat<W>::name) + " weights");
        }
    });
    return result;
}

#if defined(TESSERA_COMPILED_MODELS)
// Compiled in tessera::models (src/models/open_model.cpp) for the CPU: a program that opens a
// model there does not compile every weight format's model again (compiled_models.hpp).
extern template std::unique_ptr<LanguageModel> open_llama(Cpu&, const std::filesystem::path&, std::shared_ptr<void>,
                                                          std::optional<WeightFormatId>, std::optional<std::size_t>);
#endif

}  // namespace tessera
