#pragma once
// From a Hugging Face model directory (config.json + model.safetensors) to the GPT2 type whose
// compile-time shape matches config.json: load_gpt2(backend, dir, visitor) builds the model and
// calls visitor(model); open_gpt2(backend, dir) returns it as a LanguageModel instead. An
// unknown shape is an error listing the known ones.
#include <cstddef>     // std::size_t
#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ifstream
#include <memory>      // std::unique_ptr
#include <string>      // std::string
#include <utility>     // std::move
#include <tuple>       // std::tuple_size, std::tuple_element

#include <nlohmann/json.hpp>  // config.json

#include <tessera/core/error.hpp>          // FormatError
#include <tessera/io/safetensors.hpp>      // SafetensorsFile
#include <tessera/models/gpt2.hpp>         // GPT2
#include <tessera/models/gpt2_config.hpp>  // KnownGPT2Configs
#include <tessera/models/language_model.hpp>  // LanguageModel, LanguageModelFor

namespace tessera {

// The fields of config.json that fix a GPT-2's shape.
struct HfGpt2Config {
    std::size_t n_layer = 0, n_head = 0, n_embd = 0, n_ctx = 0, vocab_size = 0;
    float layer_norm_epsilon = 1e-5f;

    static HfGpt2Config read(const std::filesystem::path& path) {
        std::ifstream in(path);
        if (!in) throw FormatError("cannot open " + path.string());
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(in);
        } catch (const nlohmann::json::exception& e) {
            throw FormatError(path.string() + ": not valid JSON: " + e.what());
        }
        const auto number = [&](const char* key, const char* fallback = nullptr) -> std::size_t {
            const char* k = j.contains(key) || fallback == nullptr ? key : fallback;
            if (!j.contains(k) || !j[k].is_number_unsigned() || j[k].get<std::size_t>() == 0) {
                throw FormatError(path.string() + ": missing or invalid '" + key + "' (a positive integer)");
            }
            return j[k].get<std::size_t>();
        };
        HfGpt2Config c;
        c.n_layer = number("n_layer");
        c.n_head = number("n_head");
        c.n_embd = number("n_embd");
        c.n_ctx = number("n_positions", "n_ctx");
        c.vocab_size = number("vocab_size");
        if (j.contains("layer_norm_epsilon")) {
            if (!j["layer_norm_epsilon"].is_number() || !(j["layer_norm_epsilon"].get<double>() > 0)) {
                throw FormatError(path.string() + ": 'layer_norm_epsilon' must be a positive number");
            }
            c.layer_norm_epsilon = j["layer_norm_epsilon"].get<float>();
        }
        return c;
    }

    template <class Config>
    bool matches() const noexcept {
        return n_layer == Config::n_layer && n_head == Config::n_head && n_embd == Config::n_embd &&
               n_ctx == Config::n_ctx && vocab_size == Config::vocab_size;
    }
};

namespace detail {
template <class B, class Visitor, std::size_t I = 0>
void dispatch_gpt2(B& backend, const HfGpt2Config& cfg, const io::SafetensorsFile& weights, const std::string& where,
                   Visitor& visitor, std::string known = {}) {
    if constexpr (I == std::tuple_size_v<KnownGPT2Configs>) {
        throw FormatError(where + ": n_layer " + std::to_string(cfg.n_layer) + ", n_head " + std::to_string(cfg.n_head) +
                          ", n_embd " + std::to_string(cfg.n_embd) + ", n_ctx " + std::to_string(cfg.n_ctx) +
                          ", vocab_size " + std::to_string(cfg.vocab_size) + " is not a known GPT-2 shape; known:" + known);
    } else {
        using Config = std::tuple_element_t<I, KnownGPT2Configs>;
        if (cfg.matches<Config>()) {
            auto model = std::make_unique<GPT2<Config, B>>(backend);
            model->load(weights, cfg.layer_norm_epsilon);
            visitor(std::move(model));
        } else {
            dispatch_gpt2<B, Visitor, I + 1>(backend, cfg, weights, where, visitor, known + "\n  " + describe_config<Config>());
        }
    }
}

// Reads dir/config.json, opens dir/model.safetensors, builds and loads the GPT2 of that shape
// and hands it over: take(std::unique_ptr<GPT2<Config, B>>).
template <class B, class Take>
void open_and_dispatch(B& backend, const std::filesystem::path& dir, Take&& take) {
    const auto config_path = dir / "config.json";
    const HfGpt2Config cfg = HfGpt2Config::read(config_path);
    const io::SafetensorsFile weights(dir / "model.safetensors");
    dispatch_gpt2(backend, cfg, weights, config_path.string(), take);
}
}  // namespace detail

// Reads dir/config.json, picks the matching GPT2 type, loads dir/model.safetensors into it and
// calls visitor(model). Missing files, a corrupt checkpoint or an unknown shape: FormatError.
template <class B, class Visitor>
void load_gpt2(B& backend, const std::filesystem::path& dir, Visitor&& visitor) {
    detail::open_and_dispatch(backend, dir, [&visitor](auto model) { visitor(*model); });
}

// The same as a LanguageModel, which keeps `keep_alive` (the backend, say) alive as long as it
// lives; otherwise the caller keeps `backend` alive.
template <class B>
std::unique_ptr<LanguageModel> open_gpt2(B& backend, const std::filesystem::path& dir,
                                         std::shared_ptr<void> keep_alive = nullptr) {
    std::unique_ptr<LanguageModel> result;
    detail::open_and_dispatch(backend, dir, [&](auto model) {
        using M = typename decltype(model)::element_type;
        std::string description = describe_config<typename M::config>() + " on " + B::name;
        result = std::make_unique<LanguageModelFor<M>>(std::move(model), std::move(description), keep_alive);
    });
    return result;
}

}  // namespace tessera
