#pragma once
// write_gpt2_gguf: a GPT-2 (from a Hugging Face directory or another GGUF file) and its
// tokenizer as one GGUF file in llama.cpp's layout, as convert_hf_to_gguf.py and
// llama-quantize write it: architecture "gpt2" with its gpt2.* hyperparameters, the tokenizer
// as tokenizer.ggml.*, the matrices (token_embd, the four projections of each block, and
// output when the head is untied) as the GgufFileFormat asked for says (a model format, or a
// K-quant mix as llama-quantize chooses it), position_embd, the norms and the biases in F32.
// Blocks already stored in a tensor's format are copied as they are; the rest is quantized with
// GGML's reference algorithm (the same bytes llama.cpp's tools write).
#include <cstddef>   // std::byte, std::size_t
#include <cstdint>   // std::int32_t, std::uint32_t
#include <filesystem> // std::filesystem::path
#include <string>    // std::string
#include <vector>    // std::vector

#include <tessera/core/error.hpp>              // ArgumentError
#include <tessera/core/weight_formats.hpp>     // WeightFormat, WeightFormatId, with_weight_type
#include <tessera/io/gguf.hpp>                 // GgmlType
#include <tessera/io/gguf_writer.hpp>          // GgufWriter
#include <tessera/models/gguf_writing.hpp>     // ggml_type_of, add_bpe_tokenizer
#include <tessera/models/gguf_file_format.hpp> // GgufFileFormat
#include <tessera/models/gpt2_checkpoints.hpp> // gguf_gpt2_tensor_name
#include <tessera/models/load_gpt2.hpp>        // Gpt2Files
#include <tessera/nn/parameter.hpp>            // TensorRequest, read_rows_as
#include <tessera/text/bpe_tokenizer.hpp>      // BpeTokenizer

namespace tessera {

// Every tensor of a GPT-2 of this shape, named and shaped as the layers ask for them.
inline std::vector<TensorRequest> gpt2_tensors(const Gpt2Hyperparameters& h) {
    using Role = TensorRequest::Role;
    const GPT2Shape& s = h.shape;
    std::vector<TensorRequest> out{{"wte.weight", Role::table, s.vocab_size, s.n_embd},
                                   {"wpe.weight", Role::table, s.n_ctx, s.n_embd}};
    for (std::size_t i = 0; i < s.n_layer; ++i) {
        const std::string b = "h." + std::to_string(i) + ".";
        for (const char* norm : {"ln_1.weight", "ln_1.bias"}) out.push_back({b + norm, Role::vector, 1, s.n_embd});
        out.push_back({b + "attn.c_attn.weight", Role::linear, 3 * s.n_embd, s.n_embd});
        out.push_back({b + "attn.c_attn.bias", Role::vector, 1, 3 * s.n_embd});
        out.push_back({b + "attn.c_proj.weight", Role::linear, s.n_embd, s.n_embd});
        out.push_back({b + "attn.c_proj.bias", Role::vector, 1, s.n_embd});
        for (const char* norm : {"ln_2.weight", "ln_2.bias"}) out.push_back({b + norm, Role::vector, 1, s.n_embd});
        out.push_back({b + "mlp.c_fc.weight", Role::linear, s.n_inner, s.n_embd});
        out.push_back({b + "mlp.c_fc.bias", Role::vector, 1, s.n_inner});
        out.push_back({b + "mlp.c_proj.weight", Role::linear, s.n_embd, s.n_inner});
        out.push_back({b + "mlp.c_proj.bias", Role::vector, 1, s.n_embd});
    }
    out.push_back({"ln_f.weight", Role::vector, 1, s.n_embd});
    out.push_back({"ln_f.bias", Role::vector, 1, s.n_embd});
    if (!h.tie_word_embeddings) out.push_back({"lm_head.weight", Role::table, s.vocab_size, s.n_embd});
    return out;
}

// Writes the file at `path`, which must not be one of the model's files (files.paths()) and is
// replaced only once complete (io::OutputFile); each tensor stored as `format` says. Without a
// tokenizer (nullptr: a checkpoint that has none) the file holds no tokenizer.ggml.* metadata.
inline void write_gpt2_gguf(const Gpt2Files& files, const BpeTokenizer* tokenizer, const GgufFileFormat& format,
                            const std::filesystem::path& path, const std::string& name) {
    const Gpt2Hyperparameters& h = files.hyperparameters();
    const auto stored_as = [&](const TensorRequest& r) { return format.tensor_format(r, h); };
    for (const TensorRequest& r : gpt2_tensors(h)) {  // before anything is written
        with_stored_type(stored_as(r), [&]<class W>() { whole_blocks<W>(r.cols, r.name.c_str()); });
    }
    if (tokenizer != nullptr) tokenizer->check_vocab_size(h.shape.vocab_size);
    io::GgufWriter w;
    w.add_string("general.architecture", "gpt2");
    w.add_string("general.name", name);
    w.add_u32("general.file_type", format.file_type());
    if (format.quantized()) w.add_u32("general.quantization_version", 2);
    w.add_u32("gpt2.block_count", static_cast<std::uint32_t>(h.shape.n_layer));
    w.add_u32("gpt2.context_length", static_cast<std::uint32_t>(h.shape.n_ctx));
    w.add_u32("gpt2.embedding_length", static_cast<std::uint32_t>(h.shape.n_embd));
    w.add_u32("gpt2.feed_forward_length", static_cast<std::uint32_t>(h.shape.n_inner));
    w.add_u32("gpt2.attention.head_count", static_cast<std::uint32_t>(h.shape.n_head));
    w.add_f32("gpt2.attention.layer_norm_epsilon", h.layer_norm_epsilon);

    if (tokenizer != nullptr) add_bpe_tokenizer(w, *tokenizer);

    const Checkpoint& source = files.checkpoint();
    for (const TensorRequest& r : gpt2_tensors(h)) {
        const WeightFormatId as = stored_as(r);
        std::vector<std::uint64_t> ne{r.cols};
        if (r.role != TensorRequest::Role::vector) ne.push_back(r.rows);
        with_stored_type(as, [&]<class W>() {
            w.add_tensor(gguf_gpt2_tensor_name(r.name), ggml_type_of(as), ne, [&source, r] {
                std::vector<std::byte> bytes(r.rows * stored_elements<W>(r.cols) * sizeof(W));  // new: aligned for W
                read_rows_as<W>(source, r, 0, r.rows, reinterpret_cast<W*>(bytes.data()));
                return bytes;
            });
        });
    }
    w.write(path, files.paths());
}

}  // namespace tessera
