#pragma once
// From a Hugging Face model directory (config.json + model.safetensors) or a GGUF file to a
// GPT2 model: load_gpt2(backend, path, visitor) builds the model and calls visitor(model);
// open_gpt2(backend, path) returns it as a LanguageModel instead. Any GPT-2 shape loads, as
// GPT2<GPT2Dynamic, B>; a caller that wants static types for some shapes names them,
// load_gpt2<GPT2Small>(...), and gets GPT2<GPT2Small, B> for that shape (each named shape is one
// more instantiation to compile).
#include <cmath>       // std::isfinite
#include <cstddef>     // std::size_t
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <memory>      // std::unique_ptr
#include <optional>    // std::optional
#include <string>      // std::string
#include <type_traits> // std::is_same_v
#include <utility>     // std::move
#include <vector>      // std::vector

#include <tessera/config.hpp>                 // TESSERA_PARSER_INLINE
#include <tessera/core/error.hpp>              // FormatError
#include <tessera/io/json.hpp>                 // parse_json, JsonValue
#include <tessera/io/read_only_file.hpp>       // read_whole_file
#include <tessera/io/gguf.hpp>                 // GgufFile
#include <tessera/io/safetensors_shards.hpp>   // SafetensorsShards
#include <tessera/models/gpt2_checkpoints.hpp> // SafetensorsGpt2Checkpoint, GgufGpt2Checkpoint
#include <tessera/models/gpt2.hpp>             // GPT2
#include <tessera/models/compiled_models.hpp>  // (with tessera::models: the models it holds compiled)
#include <tessera/models/gpt2_config.hpp>      // GPT2Shape, GPT2Dynamic
#include <tessera/models/language_model.hpp>   // LanguageModel, LanguageModelFor
#include <tessera/models/model_files.hpp>      // model_path_kind, model_files
#include <tessera/core/weight_formats.hpp>     // WeightType, WeightFormatId, with_weight_type
#include <tessera/backend/backend.hpp>         // RunsWeightsAs

namespace tessera {

// What config.json says about a GPT-2. Every field that changes the computation is read and
// either supported or refused with an error naming the field and its value: a checkpoint that
// is not the network this code computes must not run as if it were.
struct HfGpt2Config : Gpt2Hyperparameters {
    static constexpr std::size_t max_bytes = 16 << 20;  // a real config.json is about 1 KB

    static HfGpt2Config read(const std::filesystem::path& path) {
        const std::string text = io::read_whole_file(path, max_bytes);
        return from_json(io::parse_json(text, path.string()), path.string());
    }

    static HfGpt2Config from_json(const io::JsonValue& j, const std::string& where) {
        const auto fail = [&](const std::string& what) -> void { throw FormatError(where + ": " + what); };
        if (!j.is_object()) fail("not a JSON object");
        const auto has = [&](const char* key) { return j.find(key) != nullptr && !j.find(key)->is_null(); };
        const auto positive = [&](const char* key) -> std::size_t {
            const auto v = has(key) ? j.find(key)->as_unsigned() : std::nullopt;
            if (!v || *v == 0 || *v > (std::uint64_t{1} << 32)) {
                fail("missing or invalid '" + std::string(key) + "' (a positive integer), got " +
                     (j.find(key) ? j.find(key)->describe() : std::string("nothing")));
            }
            return static_cast<std::size_t>(*v);
        };
        const auto flag = [&](const char* key, bool fallback) {
            if (!has(key)) return fallback;
            if (!j.find(key)->is_bool()) fail("'" + std::string(key) + "' must be true or false, got " + j.find(key)->describe());
            return j.find(key)->as_bool();
        };
        const auto text = [&](const char* key, const char* fallback) {
            if (!has(key)) return std::string(fallback);
            if (!j.find(key)->is_string()) fail("'" + std::string(key) + "' must be a string, got " + j.find(key)->describe());
            return j.find(key)->as_string();
        };

        if (const std::string type = text("model_type", "gpt2"); type != "gpt2") {
            fail("model_type '" + type + "' is not GPT-2 (only \"gpt2\" checkpoints run here)");
        }
        HfGpt2Config c;
        c.shape.n_layer = positive("n_layer");
        c.shape.n_head = positive("n_head");
        c.shape.n_embd = positive("n_embd");
        c.shape.n_ctx = positive(has("n_positions") ? "n_positions" : "n_ctx");
        c.shape.vocab_size = positive("vocab_size");
        c.shape.n_inner = has("n_inner") ? positive("n_inner") : 4 * c.shape.n_embd;
        if (c.shape.n_embd % c.shape.n_head != 0) {
            fail("n_embd " + std::to_string(c.shape.n_embd) + " is not a multiple of n_head " +
                 std::to_string(c.shape.n_head));
        }
        // GELU in its tanh form under each of its Hugging Face names; erf GELU, ReLU etc. are
        // other networks.
        if (const std::string act = text("activation_function", "gelu_new");
            act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu_fast") {
            fail("activation_function '" + act +
                 "' is not supported (the tanh GELU is: gelu_new, gelu_pytorch_tanh, gelu_fast)");
        }
        if (!flag("scale_attn_weights", true)) fail("scale_attn_weights false (unscaled attention) is not supported");
        if (flag("scale_attn_by_inverse_layer_idx", false)) {
            fail("scale_attn_by_inverse_layer_idx true is not supported");
        }
        if (flag("add_cross_attention", false)) fail("add_cross_attention true (an encoder-decoder) is not supported");
        // reorder_and_upcast_attn only changes the precision of fp16 training; this computes
        // attention in float32 either way, so both values give the same network.
        flag("reorder_and_upcast_attn", false);
        c.tie_word_embeddings = flag("tie_word_embeddings", true);
        if (has("layer_norm_epsilon")) {
            const io::JsonValue& e = *j.find("layer_norm_epsilon");
            const float eps = e.is_number() ? static_cast<float>(e.as_double()) : 0.0f;
            if (!(std::isfinite(eps) && eps > 0.0f)) {
                fail("'layer_norm_epsilon' must be a positive number that a float can hold, got " + e.describe());
            }
            c.layer_norm_epsilon = eps;
        }
        return c;
    }
};

// A GPT-2's files opened and checked before anything is allocated: what the network is, a
// Checkpoint over its weights, and the format its matrices are stored in. `path` is a Hugging
// Face directory (config.json, model.safetensors) or a GGUF file.
class Gpt2Files {
public:
    explicit Gpt2Files(const std::filesystem::path& path);
    Gpt2Files(const Gpt2Files&) = delete;  // the checkpoint refers to the file
    Gpt2Files& operator=(const Gpt2Files&) = delete;

    const Gpt2Hyperparameters& hyperparameters() const noexcept { return hyper_; }
    const Checkpoint& checkpoint() const noexcept { return *checkpoint_; }
    // The format of the matrices as stored (f32 for safetensors, whose F16/BF16 load as float).
    WeightFormatId stored_format() const noexcept { return stored_; }
    // The files the model consists of (model_files): what a program writing must not replace.
    const std::vector<std::filesystem::path>& paths() const noexcept { return paths_; }

private:
    // A shape that implies more weights than the file holds (n_layer 1200 instead of 12) is
    // refused before it asks for hundreds of gigabytes.
    void check_weight_count(const std::string& shape_from, const std::string& file, double held) const {
        if (hyper_.shape.parameters() > held) {
            throw FormatError(shape_from + ": the shape it gives (" + hyper_.shape.describe() + ") has " +
                              std::to_string(hyper_.shape.parameters()) + " weights, but " + file + " holds only " +
                              std::to_string(held));
        }
    }

    std::vector<std::filesystem::path> paths_;
    Gpt2Hyperparameters hyper_;
    std::optional<io::SafetensorsShards> safetensors_;
    std::optional<io::GgufFile> gguf_;
    std::unique_ptr<Checkpoint> checkpoint_;
    WeightFormatId stored_ = WeightFormatId::f32;
};

#if TESSERA_PARSER_DEFINITIONS  // (config.hpp: compiled in tessera::models where a program links it)
TESSERA_PARSER_INLINE Gpt2Files::Gpt2Files(const std::filesystem::path& path) : paths_(model_files(path)) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) {
        gguf_.emplace(path);
        hyper_ = gguf_gpt2_hyperparameters(*gguf_);
        checkpoint_ = std::make_unique<GgufGpt2Checkpoint>(*gguf_);
        const auto format = weight_format_of(gguf_->tensor("blk.0.attn_qkv.weight").type);
        // F16 matrices: widened to float; a K-quant file's: each in its own format (KQuantMix).
        stored_ = format ? model_format_for(*format) : WeightFormatId::f32;
        check_weight_count(path.string() + "'s metadata", gguf_->path(), [&] {
            double held = 0;
            for (const io::GgufTensorInfo& t : gguf_->tensors()) held += static_cast<double>(t.elements());
            return held;
        }());
        std::vector<std::string> names;
        for (const io::GgufTensorInfo& t : gguf_->tensors()) names.push_back(t.name);
        detail::check_blocks_held(gguf_->path(), "gpt2.block_count is", hyper_.shape.n_layer, detail::blocks_held(names, "blk."));
    } else {
        hyper_ = HfGpt2Config::read(path / "config.json");
        safetensors_.emplace(path);  // model.safetensors, or the shards of model.safetensors.index.json
        auto checkpoint = std::make_unique<SafetensorsGpt2Checkpoint>(*safetensors_);
        check_weight_count((path / "config.json").string(), safetensors_->path(), [&] {
            double held = 0;
            for (const std::string& name : safetensors_->names()) held += static_cast<double>(safetensors_->info(name).elements());
            return held;
        }());
        detail::check_blocks_held(safetensors_->path(), "config.json's n_layer is", hyper_.shape.n_layer,
                                  detail::blocks_held(safetensors_->names(), checkpoint->prefix() + "h."));
        checkpoint_ = std::move(checkpoint);
    }
}
#endif

namespace detail {
// Builds GPT2<Config, B, W> for the first of Static... whose shape is the files', else
// GPT2<GPT2Dynamic, B, W> with the head format for the files' width (HeadFormat: Q4_0's Q6_K
// head needs rows of whole super-blocks); loads the weights and hands it over:
// take(std::unique_ptr<GPT2<...>>).
template <class W, class... Static, class B, class Take>
void build_gpt2(B& backend, const Gpt2Files& files, Take&& take) {
    static_assert((Static::is_static && ...), "load_gpt2<Configs...>: name fully static configs such as GPT2Small.");
    const Gpt2Hyperparameters& h = files.hyperparameters();
    bool done = false;
    const auto load = [&](auto model) {
        model->load(files.checkpoint(), h.layer_norm_epsilon, h.tie_word_embeddings);
        take(std::move(model));
        done = true;
    };
    const auto try_static = [&]<class Config>() {
        if (!done && Config::shape() == h.shape) load(std::make_unique<GPT2<Config, B, W>>(backend));
    };
    (try_static.template operator()<Static>(), ...);
    static_cast<void>(try_static);  // unused when no static shape is named
    if (!done) {
        with_head_type<W, B>(h.shape.n_embd, [&]<class HeadW>() {
            load(std::make_unique<GPT2<GPT2Dynamic, B, W, LearnedPositions, HeadW>>(backend, h.shape));
        });
    }
}
}  // namespace detail

// Opens `path` (a Hugging Face directory: config.json + model.safetensors; or a GPT-2 GGUF
// file), builds the GPT2 of its shape (a static type among Static... when one matches) with
// float matrices, loads the weights and calls visitor(model). Missing files, a corrupt
// checkpoint or an unsupported config: FormatError naming the file and the field or tensor.
template <class... Static, class B, class Visitor>
void load_gpt2(B& backend, const std::filesystem::path& path, Visitor&& visitor) {
    detail::build_gpt2<float, Static...>(backend, Gpt2Files(path), [&visitor](auto model) { visitor(*model); });
}

// The same with the matrices stored as W (bf16, Q8_0, Q4_0: core/weight_formats.hpp):
// GPT2<..., B, W>, quantized as they load, or copied as they are from a GGUF file that stores
// them as W. Q8_0 and Q4_0 need widths that are whole blocks of 32 (every published GPT-2);
// otherwise ArgumentError naming the layer.
template <WeightType W, class... Static, class B, class Visitor>
void load_gpt2_as(B& backend, const std::filesystem::path& path, Visitor&& visitor) {
    detail::build_gpt2<W, Static...>(backend, Gpt2Files(path), [&visitor](auto model) { visitor(*model); });
}

// The same as a LanguageModel with the weight format chosen at run time (each format one more
// instantiation of the model; none: as the file stores them, f32 for safetensors), which keeps
// `keep_alive` (the backend, say) alive as long as it lives; otherwise the caller keeps
// `backend` alive.
template <class... Static, class B>
std::unique_ptr<LanguageModel> open_gpt2(B& backend, const std::filesystem::path& path,
                                         std::shared_ptr<void> keep_alive = nullptr,
                                         std::optional<WeightFormatId> weights = std::nullopt) {
    const Gpt2Files files(path);
    std::unique_ptr<LanguageModel> result;
    const auto take = [&](auto model) {
        using M = typename decltype(model)::element_type;
        std::string description = model->description() + " on " + B::name;
        result = std::make_unique<LanguageModelFor<M>>(std::move(model), std::move(description), keep_alive);
    };
    with_weight_type(weights.value_or(files.stored_format()), [&]<class W>() {
        if constexpr (RunsWeightsAs<B, W>) {
            detail::build_gpt2<W, Static...>(backend, files, take);
        } else {
            throw ArgumentError(std::string("the ") + B::name + " backend has no kernels for " +
                                std::string(WeightFormat<W>::name) + " weights");
        }
    });
    return result;
}

#if defined(TESSERA_COMPILED_MODELS)
// Compiled in tessera::models (src/models/open_model.cpp) for the CPU and no static shape
// (compiled_models.hpp).
extern template std::unique_ptr<LanguageModel> open_gpt2(Cpu&, const std::filesystem::path&, std::shared_ptr<void>,
                                                         std::optional<WeightFormatId>);
#endif

}  // namespace tessera
