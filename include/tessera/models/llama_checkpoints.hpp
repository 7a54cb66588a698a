#pragma once
// The Llama family's files, read as LlamaArchitecture's layers ask (Hugging Face's names):
//   - GGUF as llama.cpp's convert_hf_to_gguf.py and llama-quantize write it (architectures
//     "llama", "qwen2", "qwen3"): names "blk.3.attn_q.weight", metadata "<arch>.block_count"...;
//     for "llama" the converter permutes q's and k's rows so that GGUF's rope of adjacent pairs
//     equals Hugging Face's of halves: such files run with adjacent pairs, their rows as stored;
//   - Hugging Face safetensors (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM):
//     nn.Linear weights stored [out, in], rope of halves.
// Whatever a file says that changes the computation is read, and either supported or refused
// naming the key and its value: sliding-window attention, mixtures of experts, unknown rope
// scalings, other activations.
#include <algorithm>    // std::find
#include <cmath>        // std::isfinite, std::log
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include <tessera/core/error.hpp>             // FormatError
#include <tessera/io/gguf.hpp>                // GgufFile
#include <tessera/io/json.hpp>                // JsonValue
#include <tessera/io/safetensors.hpp>         // SafetensorsFile, shape_string
#include <tessera/io/safetensors_shards.hpp>  // SafetensorsShards: one file or an index's shards
#include <tessera/models/gguf_checkpoint.hpp> // GgufCheckpoint
#include <tessera/models/llama.hpp>           // LlamaShape
#include <tessera/nn/parameter.hpp>           // Checkpoint, TensorRequest

namespace tessera {

// The architectures LlamaArchitecture runs, by GGUF general.architecture / config.json
// model_type ("mistral" is a llama).
inline bool is_llama_family(std::string_view architecture) noexcept {
    return architecture == "llama" || architecture == "qwen2" || architecture == "qwen3" || architecture == "mistral";
}

// llama.cpp's name for a Hugging Face Llama tensor name ("model.layers.3.mlp.up_proj.weight" ->
// "blk.3.ffn_up.weight").
inline std::string gguf_llama_tensor_name(const std::string& hf) {
    static constexpr std::pair<std::string_view, std::string_view> whole[] = {
        {"model.embed_tokens.weight", "token_embd.weight"}, {"model.norm.weight", "output_norm.weight"}, {"lm_head.weight", "output.weight"}};
    for (const auto& [from, to] : whole)
        if (hf == from) return std::string(to);
    static constexpr std::pair<std::string_view, std::string_view> in_block[] = {
        {"input_layernorm.", "attn_norm."},  {"self_attn.q_proj.", "attn_q."},   {"self_attn.k_proj.", "attn_k."},
        {"self_attn.v_proj.", "attn_v."},    {"self_attn.o_proj.", "attn_output."}, {"self_attn.q_norm.", "attn_q_norm."},
        {"self_attn.k_norm.", "attn_k_norm."}, {"post_attention_layernorm.", "ffn_norm."}, {"mlp.gate_proj.", "ffn_gate."},
        {"mlp.up_proj.", "ffn_up."},         {"mlp.down_proj.", "ffn_down."}};
    constexpr std::string_view layers = "model.layers.";
    if (hf.starts_with(layers)) {
        const std::size_t dot = hf.find('.', layers.size());
        if (dot != std::string::npos) {
            const std::string rest = hf.substr(dot + 1);
            for (const auto& [from, to] : in_block)
                if (rest.starts_with(from))
                    return "blk." + hf.substr(layers.size(), dot - layers.size()) + "." + std::string(to) + rest.substr(from.size());
        }
    }
    return hf;
}

class GgufLlamaCheckpoint final : public GgufCheckpoint {
public:
    GgufLlamaCheckpoint(const io::GgufFile& file, const std::string& architecture)
        : GgufCheckpoint(file, gguf_llama_tensor_name, architecture) {}
};

// Hugging Face safetensors of a Llama-family model: tables and linear maps both [rows, cols].
class SafetensorsLlamaCheckpoint final : public Checkpoint {
public:
    explicit SafetensorsLlamaCheckpoint(const io::SafetensorsShards& shards) : shards_(shards) {}
    const std::string& path() const override { return shards_.path(); }

    void read_rows(const TensorRequest& r, std::size_t first, std::span<float> dst) const override {
        const io::SafetensorsFile& file = shards_.file_of(r.name);
        const io::TensorInfo& t = file.info(r.name);
        const std::vector<std::size_t> expected =
            r.role == TensorRequest::Role::vector ? std::vector<std::size_t>{r.cols} : std::vector<std::size_t>{r.rows, r.cols};
        if (t.shape != expected) {
            throw FormatError(file.path() + ": tensor '" + t.name + "' has shape " + io::shape_string(t.shape) +
                              " but config.json implies " + io::shape_string(expected));
        }
        detail::check_rows_asked(file.path(), r, first, dst.size());
        file.read_float_range(t, first * r.cols, dst);
    }

private:
    const io::SafetensorsShards& shards_;
};

// What a GGUF file of a Llama-family architecture says the network is (llama.cpp's keys under
// "<arch>."): block_count, embedding_length, attention.head_count, attention.head_count_kv (as
// many as head_count when absent), attention.key_length (head_dim; C / H when absent),
// feed_forward_length, context_length, attention.layer_norm_rms_epsilon, rope.freq_base (10,000
// when absent), rope.scaling.type and .factor (none or linear), and the per-pair factors of
// rope_freqs.weight (Llama 3's scaling). The vocabulary is token_embd's row count; the head is
// tied unless output.weight exists; qwen2 has q/k/v biases, qwen3 q/k norms.
inline LlamaShape gguf_llama_shape(const io::GgufFile& file) {
    const auto fail = [&](const std::string& what) { throw FormatError(file.path() + ": " + what); };
    const std::string arch = file.string_value("general.architecture");
    if (!is_llama_family(arch) || arch == "mistral") fail("general.architecture is '" + arch + "', not llama, qwen2 or qwen3");
    const std::string k = arch + ".";
    const auto positive = [&](const std::string& key) -> std::size_t {
        const std::uint64_t v = file.unsigned_value(key);
        if (v == 0 || v > (std::uint64_t{1} << 32)) fail("metadata '" + key + "' is " + std::to_string(v) + ", not a positive size");
        return static_cast<std::size_t>(v);
    };
    const auto positive_real = [&](const std::string& key) {
        const double v = file.real_value(key);
        if (!(std::isfinite(v) && v > 0 && v < 3.4e38)) fail("metadata '" + key + "' must be a positive number, got " + std::to_string(v));
        return v;
    };
    for (const char* unsupported : {"expert_count", "attention.sliding_window"}) {
        if (const io::GgufValue* v = file.find(k + unsupported); v && !(v->is_unsigned() && v->unsigned_value == 0)) {
            fail("metadata '" + k + unsupported + "' is set: " +
                 (std::string(unsupported) == "expert_count" ? "mixtures of experts" : "sliding-window attention") + " are not supported");
        }
    }
    LlamaShape s;
    s.architecture = arch;
    s.n_layer = positive(k + "block_count");
    s.n_embd = positive(k + "embedding_length");
    s.n_head = positive(k + "attention.head_count");
    s.n_head_kv = file.find(k + "attention.head_count_kv") ? positive(k + "attention.head_count_kv") : s.n_head;
    if (file.find(k + "attention.key_length")) s.n_head_dim = positive(k + "attention.key_length");
    if (file.find(k + "attention.value_length") && positive(k + "attention.value_length") != s.head_dim()) {
        fail("metadata '" + k + "attention.value_length' differs from the key length " + std::to_string(s.head_dim()));
    }
    s.n_ff = positive(k + "feed_forward_length");
    s.n_ctx = positive(k + "context_length");
    s.norm_eps = static_cast<float>(positive_real(k + "attention.layer_norm_rms_epsilon"));
    s.qkv_bias = arch == "qwen2";
    s.qk_norm = arch == "qwen3";
    s.rope.pairing = arch == "llama" ? RopePairing::adjacent : RopePairing::halves;
    if (file.find(k + "rope.freq_base")) s.rope.theta = positive_real(k + "rope.freq_base");
    if (file.find(k + "rope.dimension_count") && positive(k + "rope.dimension_count") != s.head_dim()) {
        fail("metadata '" + k + "rope.dimension_count' is " + std::to_string(file.unsigned_value(k + "rope.dimension_count")) +
             ": rotary positions over part of a head (head_dim " + std::to_string(s.head_dim()) + ") are not supported");
    }
    if (file.find(k + "rope.scaling.type")) {
        const std::string t = file.string_value(k + "rope.scaling.type");
        if (t == "linear") {
            s.rope.scaling.kind = RopeScaling::Kind::linear;
            s.rope.scaling.factor = positive_real(k + "rope.scaling.factor");
        } else if (t == "yarn") {  // as llama.cpp reads it: its converter's keys
            RopeScaling& y = s.rope.scaling;
            y.kind = RopeScaling::Kind::yarn;
            y.factor = positive_real(k + "rope.scaling.factor");
            y.original_context = file.find(k + "rope.scaling.original_context_length")
                                     ? static_cast<double>(positive(k + "rope.scaling.original_context_length"))
                                     : static_cast<double>(s.n_ctx);
            if (file.find(k + "rope.scaling.yarn_beta_fast")) y.beta_fast = positive_real(k + "rope.scaling.yarn_beta_fast");
            if (file.find(k + "rope.scaling.yarn_beta_slow")) y.beta_slow = positive_real(k + "rope.scaling.yarn_beta_slow");
            // Keys that change the blend away from YaRN's default, with their default values.
            for (const auto& [other, neutral] : {std::pair{"rope.scaling.yarn_log_multiplier", 0.0}, {"rope.scaling.yarn_ext_factor", 1.0}}) {
                const std::string key = k + other;
                if (file.find(key) && file.real_value(key) != neutral) {
                    fail("metadata '" + key + "' is " + std::to_string(file.real_value(key)) + ": only YaRN's default blend is supported");
                }
            }
            // llama.cpp scales its attention factor (1 + 0.1 ln factor) by rope.scaling.attn_factor.
            if (file.find(k + "rope.scaling.attn_factor")) {
                y.attention_factor = positive_real(k + "rope.scaling.attn_factor") * (y.factor <= 1 ? 1.0 : 0.1 * std::log(y.factor) + 1.0);
            }
        } else if (t != "none") {
            fail("metadata '" + k + "rope.scaling.type' is '" + t + "': only none, linear and yarn (and Llama 3's rope_freqs) are supported");
        }
    }
    if (const io::GgufTensorInfo* freqs = file.find_tensor("rope_freqs.weight")) {
        if (freqs->ne.size() != 1 || freqs->ne[0] != s.head_dim() / 2) {
            fail("tensor 'rope_freqs.weight' has dimensions " + io::shape_string(freqs->ne) + ", not one factor per pair (" +
                 std::to_string(s.head_dim() / 2) + ")");
        }
        std::vector<float> factors(s.head_dim() / 2);
        file.read_float_range(*freqs, 0, factors);
        for (float f : factors) {
            if (!(std::isfinite(f) && f > 0)) fail("tensor 'rope_freqs.weight' holds " + std::to_string(f) + ", not a positive factor");
        }
        s.rope.scaling.pair_factors.assign(factors.begin(), factors.end());
    }
    const io::GgufTensorInfo& embedding = file.tensor("token_embd.weight");
    if (embedding.ne.size() != 2 || embedding.ne[0] != s.n_embd) {
        fail("tensor 'token_embd.weight' is not a table of rows of " + k + "embedding_length " + std::to_string(s.n_embd));
    }
    s.vocab_size = static_cast<std::size_t>(embedding.ne[1]);
    s.tied = file.find_tensor("output.weight") == nullptr;
    if (const io::GgufValue* tokens = file.find("tokenizer.ggml.tokens");
        tokens && tokens->type == io::GgufValue::Type::array && tokens->array_length != s.vocab_size) {
        fail("tokenizer.ggml.tokens has " + std::to_string(tokens->array_length) + " tokens but token_embd.weight has " +
             std::to_string(s.vocab_size) + " rows");
    }
    return s;
}

// What a Llama-family config.json says (model_type llama, mistral, qwen2, qwen3).
inline LlamaShape hf_llama_shape(const io::JsonValue& j, const std::string& where) {
    const auto fail = [&](const std::string& what) { throw FormatError(where + ": " + what); };
    if (!j.is_object()) fail("not a JSON object");
    const auto has = [&](const char* key) { return j.find(key) != nullptr && !j.find(key)->is_null(); };
    const auto positive = [&](const char* key) -> std::size_t {
        const auto v = has(key) ? j.find(key)->as_unsigned() : std::nullopt;
        if (!v || *v == 0 || *v > (std::uint64_t{1} << 32)) {
            fail("missing or invalid '" + std::string(key) + "' (a positive integer), got " + (j.find(key) ? j.find(key)->describe() : "nothing"));
        }
        return static_cast<std::size_t>(*v);
    };
    const auto real = [&](const io::JsonValue& v, const std::string& key) {
        const double x = v.is_number() ? v.as_double() : 0.0;
        if (!(std::isfinite(x) && x > 0 && x < 3.4e38)) fail("'" + key + "' must be a positive number, got " + v.describe());
        return x;
    };
    const auto flag = [&](const char* key, bool fallback) {
        if (!has(key)) return fallback;
        if (!j.find(key)->is_bool()) fail("'" + std::string(key) + "' must be true or false, got " + j.find(key)->describe());
        return j.find(key)->as_bool();
    };
    const std::string type = has("model_type") && j.find("model_type")->is_string() ? j.find("model_type")->as_string() : "";
    if (!is_llama_family(type)) fail("model_type '" + type + "' is not llama, mistral, qwen2 or qwen3");
    LlamaShape s;
    s.architecture = type == "mistral" ? "llama" : type;
    s.n_layer = positive("num_hidden_layers");
    s.n_embd = positive("hidden_size");
    s.n_head = positive("num_attention_heads");
    s.n_head_kv = has("num_key_value_heads") ? positive("num_key_value_heads") : s.n_head;
    if (has("head_dim")) s.n_head_dim = positive("head_dim");
    s.n_ff = positive("intermediate_size");
    s.n_ctx = positive("max_position_embeddings");
    s.vocab_size = positive("vocab_size");
    s.norm_eps = static_cast<float>(has("rms_norm_eps") ? real(*j.find("rms_norm_eps"), "rms_norm_eps") : 1e-6);
    s.tied = flag("tie_word_embeddings", false);
    s.qkv_bias = type == "qwen2";
    s.qk_norm = type == "qwen3";
    s.rope.pairing = RopePairing::halves;
    if (has("rope_theta")) s.rope.theta = real(*j.find("rope_theta"), "rope_theta");
    if (has("hidden_act") && (!j.find("hidden_act")->is_string() || j.find("hidden_act")->as_string() != "silu")) {
        fail("hidden_act " + j.find("hidden_act")->describe() + " is not supported (silu is)");
    }
    if (flag("attention_bias", false) && type != "qwen2") fail("attention_bias true is not supported");
    if (flag("mlp_bias", false)) fail("mlp_bias true is not supported");
    // Qwen2/3 configs carry a sliding_window that use_sliding_window (false) turns off.
    const bool sliding = (type == "qwen2" || type == "qwen3") ? flag("use_sliding_window", false) : has("sliding_window");
    if (sliding) fail("sliding_window " + j.find("sliding_window")->describe() + ": sliding-window attention is not supported");
    if (has("num_experts") || has("num_local_experts")) fail("a mixture of experts is not supported");
    if (has("rope_scaling")) {
        const io::JsonValue& r = *j.find("rope_scaling");
        const io::JsonValue* kind = r.is_object() ? (r.find("rope_type") ? r.find("rope_type") : r.find("type")) : nullptr;
        const std::string t = kind && kind->is_string() ? kind->as_string() : "";
        const auto number = [&](const char* key, double fallback) {
            return r.find(key) ? real(*r.find(key), std::string("rope_scaling.") + key) : fallback;
        };
        if (t == "linear") {
            s.rope.scaling.kind = RopeScaling::Kind::linear;
            s.rope.scaling.factor = number("factor", 1.0);
        } else if (t == "llama3") {
            s.rope.scaling.kind = RopeScaling::Kind::llama3;
            s.rope.scaling.factor = number("factor", 1.0);
            s.rope.scaling.low_freq_factor = number("low_freq_factor", 1.0);
            s.rope.scaling.high_freq_factor = number("high_freq_factor", 4.0);
            s.rope.scaling.original_context = number("original_max_position_embeddings", 8192.0);
        } else if (t == "yarn") {  // Hugging Face's _compute_yarn_parameters, without DeepSeek's mscale
            for (const auto& [key, value] : r.members()) {
                static constexpr std::string_view known[] = {"rope_type", "type", "factor", "original_max_position_embeddings",
                                                             "beta_fast", "beta_slow", "attention_factor"};
                if (key == "truncate" && value.is_bool() && value.as_bool()) continue;
                if (std::find(std::begin(known), std::end(known), key) == std::end(known)) {
                    fail("rope_scaling." + key + " " + value.describe() + " is not supported with yarn (factor, " +
                         "original_max_position_embeddings, beta_fast, beta_slow and attention_factor are)");
                }
            }
            if (!r.find("factor")) fail("rope_scaling has rope_type yarn but no factor");
            RopeScaling& y = s.rope.scaling;
            y.kind = RopeScaling::Kind::yarn;
            y.factor = number("factor", 1.0);
            y.original_context = number("original_max_position_embeddings", static_cast<double>(s.n_ctx));
            y.beta_fast = number("beta_fast", 32.0);
            y.beta_slow = number("beta_slow", 1.0);
            y.attention_factor = number("attention_factor", 0.0);
        } else if (t != "default") {
            fail("rope_scaling's rope_type " + (kind ? kind->describe() : std::string("(none)")) +
                 " is not supported (linear, llama3, yarn and default are)");
        }
    }
    return s;
}

}  // namespace tessera
