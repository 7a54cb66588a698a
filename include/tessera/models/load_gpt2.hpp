#pragma once
// From a Hugging Face model directory (config.json + model.safetensors) to a GPT2 model:
// load_gpt2(backend, dir, visitor) builds the model and calls visitor(model); open_gpt2(backend,
// dir) returns it as a LanguageModel instead. Any GPT-2 shape loads, as GPT2<GPT2Dynamic, B>;
// a caller that wants static types for some shapes names them, load_gpt2<GPT2Small>(...), and
// gets GPT2<GPT2Small, B> for that shape (each named shape is one more instantiation to compile).
#include <cmath>       // std::isfinite
#include <cstddef>     // std::size_t
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <memory>      // std::unique_ptr
#include <optional>    // std::nullopt
#include <string>      // std::string
#include <utility>     // std::move

#include <tessera/core/error.hpp>              // FormatError
#include <tessera/io/json.hpp>                 // parse_json, JsonValue
#include <tessera/io/read_only_file.hpp>       // read_whole_file
#include <tessera/io/safetensors.hpp>          // SafetensorsFile
#include <tessera/models/gpt2.hpp>             // GPT2
#include <tessera/models/gpt2_config.hpp>      // GPT2Shape, GPT2Dynamic
#include <tessera/models/language_model.hpp>   // LanguageModel, LanguageModelFor
#include <tessera/core/weight_formats.hpp>     // WeightType, WeightFormatId, with_weight_type
#include <tessera/backend/backend.hpp>         // RunsWeightsAs

namespace tessera {

// What config.json says about a GPT-2. Every field that changes the computation is read and
// either supported or refused with an error naming the field and its value: a checkpoint that
// is not the network this code computes must not run as if it were.
struct HfGpt2Config {
    GPT2Shape shape;
    float layer_norm_epsilon = 1e-5f;
    bool tie_word_embeddings = true;

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

namespace detail {
// Builds GPT2<Config, B, W> for the first of Static... whose shape is cfg's, else
// GPT2<GPT2Dynamic, B, W>; loads the weights and hands it over: take(std::unique_ptr<GPT2<...>>).
template <class B, class W, class Take, class... Static>
void build_gpt2(B& backend, const HfGpt2Config& cfg, const io::SafetensorsFile& weights, Take& take) {
    bool done = false;
    const auto load = [&](auto model) {
        model->load(weights, cfg.layer_norm_epsilon, cfg.tie_word_embeddings);
        take(std::move(model));
        done = true;
    };
    const auto try_static = [&]<class Config>() {
        if (!done && Config::shape() == cfg.shape) load(std::make_unique<GPT2<Config, B, W>>(backend));
    };
    (try_static.template operator()<Static>(), ...);
    static_cast<void>(try_static);  // unused when no static shape is named
    if (!done) load(std::make_unique<GPT2<GPT2Dynamic, B, W>>(backend, cfg.shape));
}

template <class W, class... Static, class B, class Take>
void open_and_build(B& backend, const std::filesystem::path& dir, Take&& take) {
    static_assert((Static::is_static && ...), "load_gpt2<Configs...>: name fully static configs such as GPT2Small.");
    const HfGpt2Config cfg = HfGpt2Config::read(dir / "config.json");
    const io::SafetensorsFile weights(dir / "model.safetensors");
    // Checked before anything is allocated: a config.json that says n_layer 1200 instead of
    // 12 must not first ask for hundreds of gigabytes.
    double held = 0;
    for (const std::string& name : weights.names()) held += static_cast<double>(weights.info(name).elements());
    if (cfg.shape.parameters() > held) {
        throw FormatError((dir / "config.json").string() + ": the shape it gives (" + cfg.shape.describe() + ") has " +
                          std::to_string(cfg.shape.parameters()) + " weights, but " + weights.path() + " holds only " +
                          std::to_string(held));
    }
    build_gpt2<B, W, Take, Static...>(backend, cfg, weights, take);
}
}  // namespace detail

// Reads dir/config.json, builds the GPT2 of that shape (a static type among Static... when one
// matches), loads dir/model.safetensors into it and calls visitor(model). Missing files, a
// corrupt checkpoint or an unsupported config: FormatError naming the file and the field.
template <class... Static, class B, class Visitor>
void load_gpt2(B& backend, const std::filesystem::path& dir, Visitor&& visitor) {
    detail::open_and_build<float, Static...>(backend, dir, [&visitor](auto model) { visitor(*model); });
}

// The same with the matrices stored as W (bf16, Q8_0, Q4_0: core/weight_formats.hpp),
// quantized as they load: GPT2<..., B, W>. Q8_0 and Q4_0 need widths that are whole blocks
// of 32 (every published GPT-2); otherwise ArgumentError naming the layer.
template <WeightType W, class... Static, class B, class Visitor>
void load_gpt2_as(B& backend, const std::filesystem::path& dir, Visitor&& visitor) {
    detail::open_and_build<W, Static...>(backend, dir, [&visitor](auto model) { visitor(*model); });
}

// The same as a LanguageModel with the weight format chosen at run time (each format one more
// instantiation of the model), which keeps `keep_alive` (the backend, say) alive as long as it
// lives; otherwise the caller keeps `backend` alive.
template <class... Static, class B>
std::unique_ptr<LanguageModel> open_gpt2(B& backend, const std::filesystem::path& dir,
                                         std::shared_ptr<void> keep_alive = nullptr,
                                         WeightFormatId weights = WeightFormatId::f32) {
    std::unique_ptr<LanguageModel> result;
    const auto take = [&](auto model) {
        using M = typename decltype(model)::element_type;
        std::string description = model->description() + " on " + B::name;
        result = std::make_unique<LanguageModelFor<M>>(std::move(model), std::move(description), keep_alive);
    };
    with_weight_type(weights, [&]<class W>() {
        if constexpr (RunsWeightsAs<B, W>) {
            detail::open_and_build<W, Static...>(backend, dir, take);
        } else {
            throw ArgumentError(std::string("the ") + B::name + " backend has no kernels for " +
                                std::string(WeightFormat<W>::name) + " weights");
        }
    });
    return result;
}

}  // namespace tessera
