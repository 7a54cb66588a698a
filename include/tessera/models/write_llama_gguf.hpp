#pragma once
// write_llama_gguf: a Llama-family model (llama, qwen2, qwen3; from a Hugging Face directory or
// another GGUF file) as one GGUF file in llama.cpp's layout, as convert_hf_to_gguf.py and
// llama-quantize write it: its <arch>.* hyperparameters, Llama 3's rope scaling as
// rope_freqs.weight, the matrices in the model format asked for (GgufFileFormat::
// llama_tensor_format), norms and biases in F32. For architecture "llama" the q and k rows of a
// Hugging Face checkpoint are permuted as the converter does (each head's two halves
// interleaved: llama.cpp turns adjacent pairs), and a GGUF file's are copied as they lie. The
// tokenizer: a GGUF file's tokenizer.* metadata as it is, or a directory's (models/
// gguf_writing.hpp): byte-level BPE with its pre-tokenizer's GGUF name, SentencePiece as "llama".
#include <cstddef>     // std::byte, std::size_t
#include <cstdint>     // std::uint32_t, std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <vector>      // std::vector

#include <tessera/core/weight_formats.hpp>      // WeightFormat, with_stored_type, whole_blocks
#include <tessera/io/gguf_writer.hpp>           // GgufWriter
#include <tessera/models/gguf_file_format.hpp>  // GgufFileFormat
#include <tessera/models/gguf_writing.hpp>      // ggml_type_of, add_bpe_tokenizer, add_sentencepiece_tokenizer
#include <tessera/models/llama_checkpoints.hpp> // gguf_llama_tensor_name
#include <tessera/models/load_llama.hpp>        // LlamaFiles
#include <tessera/models/open_chat_template.hpp> // open_chat_template
#include <tessera/nn/parameter.hpp>             // TensorRequest, read_rows_as
#include <tessera/nn/rotary_positions.hpp>      // rotary_frequencies

namespace tessera {

// Every tensor of a Llama-family model of this shape, named (Hugging Face) and shaped as its
// layers ask for them.
inline std::vector<TensorRequest> llama_tensors(const LlamaShape& s) {
    using Role = TensorRequest::Role;
    const std::size_t c = s.n_embd, q = s.n_head * s.head_dim(), kv = s.kv_width();
    std::vector<TensorRequest> out{{"model.embed_tokens.weight", Role::table, s.vocab_size, c}};
    for (std::size_t i = 0; i < s.n_layer; ++i) {
        const std::string b = "model.layers." + std::to_string(i) + ".";
        out.push_back({b + "input_layernorm.weight", Role::vector, 1, c});
        for (const auto& [name, rows] : {std::pair<const char*, std::size_t>{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}}) {
            out.push_back({b + "self_attn." + name + ".weight", Role::linear, rows, c});
            if (s.qkv_bias) out.push_back({b + "self_attn." + name + ".bias", Role::vector, 1, rows});
        }
        out.push_back({b + "self_attn.o_proj.weight", Role::linear, c, q});
        if (s.qk_norm) {
            out.push_back({b + "self_attn.q_norm.weight", Role::vector, 1, s.head_dim()});
            out.push_back({b + "self_attn.k_norm.weight", Role::vector, 1, s.head_dim()});
        }
        out.push_back({b + "post_attention_layernorm.weight", Role::vector, 1, c});
        out.push_back({b + "mlp.gate_proj.weight", Role::linear, s.n_ff, c});
        out.push_back({b + "mlp.up_proj.weight", Role::linear, s.n_ff, c});
        out.push_back({b + "mlp.down_proj.weight", Role::linear, c, s.n_ff});
    }
    out.push_back({"model.norm.weight", Role::vector, 1, c});
    if (!s.tied) out.push_back({"lm_head.weight", Role::table, s.vocab_size, c});
    return out;
}

// The stored row a GGUF "llama" file holds at row `row` of q or k (heads of head_dim rows): the
// converter's permute, which interleaves each head's halves (row h·D + 2i + j <- h·D + j·D/2 + i).
inline std::size_t llama_permuted_row(std::size_t row, std::size_t head_dim) noexcept {
    const std::size_t head = row / head_dim, within = row % head_dim;
    return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

// Writes the file at `path`, which must not be one of the model's files (files.paths()) and is
// replaced only once complete (io::OutputFile). `tokenizer`: a directory's (nullptr: none, or the
// GGUF file's own metadata).
inline void write_llama_gguf(const LlamaFiles& files, const Tokenizer* tokenizer, const GgufFileFormat& format,
                             const std::filesystem::path& path, const std::string& name) {
    const LlamaShape& s = files.shape();
    const std::vector<TensorRequest> tensors = llama_tensors(s);
    for (const TensorRequest& r : tensors) {  // before anything is written
        with_stored_type(format.llama_tensor_format(r, s.n_layer, s.tied), [&]<class W>() { whole_blocks<W>(r.cols, r.name.c_str()); });
    }
    if (tokenizer != nullptr) tokenizer->check_vocab_size(s.vocab_size);
    const auto u32 = [](std::size_t n) { return static_cast<std::uint32_t>(n); };
    io::GgufWriter w;
    const std::string k = s.architecture + ".";
    w.add_string("general.architecture", s.architecture);
    w.add_string("general.name", name);
    w.add_u32("general.file_type", format.file_type());
    if (format.quantized()) w.add_u32("general.quantization_version", 2);
    w.add_u32(k + "block_count", u32(s.n_layer));
    w.add_u32(k + "context_length", u32(s.n_ctx));
    w.add_u32(k + "embedding_length", u32(s.n_embd));
    w.add_u32(k + "feed_forward_length", u32(s.n_ff));
    w.add_u32(k + "attention.head_count", u32(s.n_head));
    w.add_u32(k + "attention.head_count_kv", u32(s.n_head_kv));
    if (s.head_dim() * s.n_head != s.n_embd) {
        w.add_u32(k + "attention.key_length", u32(s.head_dim()));
        w.add_u32(k + "attention.value_length", u32(s.head_dim()));
    }
    w.add_u32(k + "rope.dimension_count", u32(s.head_dim()));
    w.add_f32(k + "rope.freq_base", static_cast<float>(s.rope.theta));
    w.add_f32(k + "attention.layer_norm_rms_epsilon", s.norm_eps);
    w.add_u32(k + "vocab_size", u32(s.vocab_size));
    const RopeScaling& scaling = s.rope.scaling;
    if (scaling.kind == RopeScaling::Kind::linear) {
        w.add_string(k + "rope.scaling.type", "linear");
        w.add_f32(k + "rope.scaling.factor", static_cast<float>(scaling.factor));
    } else if (scaling.kind == RopeScaling::Kind::yarn) {  // the keys gguf_llama_shape reads back
        w.add_string(k + "rope.scaling.type", "yarn");
        w.add_f32(k + "rope.scaling.factor", static_cast<float>(scaling.factor));
        w.add_u32(k + "rope.scaling.original_context_length", u32(static_cast<std::size_t>(scaling.original_context)));
        if (scaling.beta_fast != 32.0) w.add_f32(k + "rope.scaling.yarn_beta_fast", static_cast<float>(scaling.beta_fast));
        if (scaling.beta_slow != 1.0) w.add_f32(k + "rope.scaling.yarn_beta_slow", static_cast<float>(scaling.beta_slow));
        if (scaling.attention_factor > 0) {  // llama.cpp's attn_factor multiplies its own 1 + 0.1 ln factor
            RopeSettings plain = s.rope;
            plain.scaling.attention_factor = 0;
            w.add_f32(k + "rope.scaling.attn_factor", static_cast<float>(scaling.attention_factor / rotary_amplitude(plain)));
        }
    }
    if (const io::GgufFile* source = files.gguf()) {
        for (const auto& [key, _] : source->metadata())
            if (key.starts_with("tokenizer.")) w.add(key, source->value(key));
    } else if (const auto* bpe = dynamic_cast<const BpeTokenizer*>(tokenizer)) {
        add_bpe_tokenizer(w, *bpe, s.vocab_size);
    } else if (const auto* spm = dynamic_cast<const SentencePieceTokenizer*>(tokenizer)) {
        add_sentencepiece_tokenizer(w, *spm, s.vocab_size);
    } else {
        w.add_string("tokenizer.ggml.model", "none");  // llama.cpp then runs on ids, as tessera does
    }
    if (!files.gguf() && !files.paths().empty())  // a directory's chat template goes into the file as llama.cpp's converter puts it
        if (const auto chat = open_chat_template(files.paths().front().parent_path()))
            w.add_string("tokenizer.chat_template", chat->source());

    // Llama 3's scaling (or a GGUF file's own factors) as the per-pair divisors of inv_freq.
    if (scaling.kind == RopeScaling::Kind::llama3 || !scaling.pair_factors.empty()) {
        RopeSettings plain = s.rope;
        plain.scaling = {};
        const std::vector<double> base = rotary_frequencies(s.head_dim(), plain), scaled = rotary_frequencies(s.head_dim(), s.rope);
        std::vector<float> factors(base.size());
        for (std::size_t i = 0; i < base.size(); ++i) {
            factors[i] = scaling.kind == RopeScaling::Kind::llama3 ? static_cast<float>(base[i] / scaled[i])
                                                                   : static_cast<float>(scaling.pair_factors[i]);
        }
        w.add_tensor("rope_freqs.weight", io::GgmlType::f32, {factors.size()}, [factors] {
            const auto* p = reinterpret_cast<const std::byte*>(factors.data());
            return std::vector<std::byte>(p, p + factors.size() * sizeof(float));
        });
    }

    const Checkpoint& source = files.checkpoint();
    const bool permute = s.architecture == "llama" && s.rope.pairing == RopePairing::halves;  // a Hugging Face llama
    for (const TensorRequest& r : tensors) {
        const WeightFormatId as = format.llama_tensor_format(r, s.n_layer, s.tied);
        std::vector<std::uint64_t> ne{r.cols};
        if (r.role != TensorRequest::Role::vector) ne.push_back(r.rows);
        const bool permuted = permute && (r.name.ends_with("q_proj.weight") || r.name.ends_with("k_proj.weight"));
        const std::size_t head_dim = s.head_dim();
        with_stored_type(as, [&]<class W>() {
            w.add_tensor(gguf_llama_tensor_name(r.name), ggml_type_of(as), ne, [&source, r, permuted, head_dim] {
                const std::size_t row_bytes = stored_elements<W>(r.cols) * sizeof(W);
                std::vector<std::byte> bytes(r.rows * row_bytes);  // new: aligned for W
                if (!permuted) {
                    read_rows_as<W>(source, r, 0, r.rows, reinterpret_cast<W*>(bytes.data()));
                } else {
                    for (std::size_t row = 0; row < r.rows; ++row)
                        read_rows_as<W>(source, r, llama_permuted_row(row, head_dim), 1, reinterpret_cast<W*>(bytes.data() + row * row_bytes));
                }
                return bytes;
            });
        });
    }
    w.write(path, files.paths());
}

}  // namespace tessera
