#pragma once
// GgufFileFormat: how a GGUF file that quantize writes stores each tensor of a GPT-2 or a
// Llama-family model.
//   - A model format (f32, bf16, q8_0, q4_0): every matrix in it, the tied embedding / head as
//     the model keeps it (HeadFormat: a Q4_0 file's in Q6_K or Q8_0), the rest in F32.
//   - A K-quant type of llama-quantize (q4_k_m, q5_k_m, q6_k), as its llama_tensor_get_type
//     picks per tensor without an importance matrix (GGUF's names):
//       the head (output.weight, or token_embd.weight when tied)   Q6_K
//       attn_v (attn_qkv for gpt2) and ffn_down of the layers
//         use_more_bits picks (the first and last eighth, and
//         every third layer between)                                Q6_K
//       every other matrix (an untied token_embd too)               Q4_K, Q5_K, Q6_K
//     (llama.cpp 80fb11a's llama-quantize, byte for byte: bench/compare_llama_quantize.sh.
//     Older versions gave gpt2's attn_qkv Q5_K in every layer of a q4_k_m file.)
//     position_embd, the norms and the biases stay F32. Where a matrix's rows are not whole
//     super-blocks of 256, llama-quantize's fallbacks: Q6_K to Q8_0, Q4_K to Q5_0, Q5_K to Q5_1.
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint32_t
#include <optional>     // std::optional
#include <string>       // std::string, std::stoul
#include <string_view>  // std::string_view

#include <tessera/core/error.hpp>           // ArgumentError
#include <tessera/core/weight_formats.hpp>  // WeightFormatId, head_weight_format
#include <tessera/models/gpt2_config.hpp>   // Gpt2Hyperparameters
#include <tessera/nn/parameter.hpp>         // TensorRequest

namespace tessera {

class GgufFileFormat {
public:
    static constexpr std::string_view names = "f32, bf16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k";

    static std::optional<GgufFileFormat> named(std::string_view name) noexcept {
        if (const auto model = weight_format_named(name)) return GgufFileFormat(*model, Mix::none);
        if (name == "q4_k_m") return GgufFileFormat(WeightFormatId::q4_k, Mix::q4_k_m);
        if (name == "q5_k_m") return GgufFileFormat(WeightFormatId::q5_k, Mix::q5_k_m);
        if (name == "q6_k") return GgufFileFormat(WeightFormatId::q6_k, Mix::q6_k);
        return std::nullopt;
    }
    explicit GgufFileFormat(WeightFormatId model_format) : GgufFileFormat(model_format, Mix::none) {
        if (!is_model_format(model_format)) throw ArgumentError("GgufFileFormat: " + std::string(weight_format_name(model_format)) + " is no model format");
    }

    std::string_view name() const noexcept {
        switch (mix_) {
            case Mix::q4_k_m: return "q4_k_m";
            case Mix::q5_k_m: return "q5_k_m";
            case Mix::q6_k: return "q6_k";
            case Mix::none: break;
        }
        return weight_format_name(format_);
    }

    // llama.cpp's general.file_type (enum llama_ftype).
    std::uint32_t file_type() const noexcept {
        switch (mix_) {
            case Mix::q4_k_m: return 15;
            case Mix::q5_k_m: return 17;
            case Mix::q6_k: return 18;
            case Mix::none: break;
        }
        switch (format_) {
            case WeightFormatId::bf16: return 32;
            case WeightFormatId::q8_0: return 7;
            case WeightFormatId::q4_0: return 2;
            default: return 0;
        }
    }
    bool quantized() const noexcept { return mix_ != Mix::none || format_ == WeightFormatId::q8_0 || format_ == WeightFormatId::q4_0; }

    // The format tensor `r` is stored in (its Hugging Face name; h: the model's shape).
    WeightFormatId tensor_format(const TensorRequest& r, const Gpt2Hyperparameters& h) const {
        using Role = TensorRequest::Role;
        const bool head = r.name == "lm_head.weight" || (r.name == "wte.weight" && h.tie_word_embeddings);
        if (mix_ == Mix::none) {
            if (r.role == Role::linear) return format_;
            if (r.name == "wte.weight" || r.name == "lm_head.weight") return head_weight_format(format_, r.cols);
            return WeightFormatId::f32;
        }
        if (r.role == Role::vector || r.name == "wpe.weight") return WeightFormatId::f32;
        return mixed(r, head, r.name.ends_with("attn.c_attn.weight") || r.name.ends_with("mlp.c_proj.weight"), "h.",
                     h.shape.n_layer);
    }

    // The format tensor `r` of a Llama-family model of n_layer blocks is stored in (its Hugging
    // Face name): a model format's matrices in it, the embedding and an untied head as the loader
    // keeps them (with_head_type: a Q4_0 model's in Q6_K, or Q8_0 where its rows are not whole
    // super-blocks), the norms and biases in F32; a mix's as the list above.
    WeightFormatId llama_tensor_format(const TensorRequest& r, std::size_t n_layer, bool tied) const {
        using Role = TensorRequest::Role;
        if (r.role == Role::vector) return WeightFormatId::f32;
        if (mix_ == Mix::none) {
            if (r.role == Role::linear) return format_;
            return head_weight_format(format_, r.cols);
        }
        return mixed(r, r.name == "lm_head.weight" || (tied && r.name == "model.embed_tokens.weight"),
                     r.name.ends_with("self_attn.v_proj.weight") || r.name.ends_with("mlp.down_proj.weight"), "model.layers.",
                     n_layer);
    }

private:
    enum class Mix { none, q4_k_m, q5_k_m, q6_k };
    GgufFileFormat(WeightFormatId format, Mix mix) noexcept : format_(format), mix_(mix) {}

    // A mix's type for matrix r: the head's Q6_K; Q6_K for an attn_v-like matrix or an ffn_down
    // (`wider_role`) of a layer use_more_bits picks (its number follows `prefix` in r.name); else
    // the mix's own type; then fitted to r's rows.
    WeightFormatId mixed(const TensorRequest& r, bool head, bool wider_role, std::string_view prefix, std::size_t n_layer) const {
        if (head) return fitted(WeightFormatId::q6_k, r.cols);
        const bool wider = wider_role && more_bits(layer_of(r.name, prefix), n_layer);
        return fitted(wider ? WeightFormatId::q6_k : format_, r.cols);
    }
    // llama-quantize's use_more_bits: the layers whose ffn_down and attn_v (attn_qkv) a q4_k_m
    // or q5_k_m file keeps in Q6_K.
    bool more_bits(std::size_t layer, std::size_t n_layer) const noexcept {
        if (mix_ != Mix::q4_k_m && mix_ != Mix::q5_k_m) return false;
        const auto i = static_cast<long>(layer), n = static_cast<long>(n_layer);
        return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
    }
    // The layer number after `prefix` ("h.3.mlp.c_proj.weight": 3).
    static std::size_t layer_of(const std::string& name, std::string_view prefix) { return std::stoul(name.substr(prefix.size())); }
    // A K-quant type, or llama-quantize's fallback where rows of `cols` are not whole super-blocks.
    static WeightFormatId fitted(WeightFormatId f, std::size_t cols) noexcept {
        if (cols % 256 == 0) return f;
        switch (f) {
            case WeightFormatId::q6_k: return WeightFormatId::q8_0;
            case WeightFormatId::q4_k: return WeightFormatId::q5_0;
            case WeightFormatId::q5_k: return WeightFormatId::q5_1;
            default: return f;
        }
    }

    WeightFormatId format_;  // every matrix's (a mix: its default type)
    Mix mix_;
};

}  // namespace tessera
