#pragma once
// What every GGUF file quantize writes shares, whatever the architecture: the GGML type of a
// stored format, and a byte-level BPE tokenizer (GPT-2's kind) as tokenizer.ggml.* metadata, as
// llama.cpp's convert_hf_to_gguf.py writes it.
#include <cstdint>  // std::int32_t, std::uint32_t
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/core/error.hpp>           // ArgumentError
#include <tessera/core/weight_formats.hpp>  // WeightFormatId
#include <tessera/io/gguf.hpp>              // GgmlType
#include <tessera/io/gguf_writer.hpp>       // GgufWriter
#include <tessera/models/open_tokenizer.hpp> // gguf_pre_tokenizer_name
#include <tessera/text/bpe_tokenizer.hpp>   // BpeTokenizer

namespace tessera {

inline io::GgmlType ggml_type_of(WeightFormatId format) noexcept {
    switch (format) {
        case WeightFormatId::bf16: return io::GgmlType::bf16;
        case WeightFormatId::q8_0: return io::GgmlType::q8_0;
        case WeightFormatId::q4_0: return io::GgmlType::q4_0;
        case WeightFormatId::q6_k: return io::GgmlType::q6_k;
        case WeightFormatId::q4_k: return io::GgmlType::q4_k;
        case WeightFormatId::q5_k: return io::GgmlType::q5_k;
        case WeightFormatId::f32: break;
    }
    return io::GgmlType::f32;
}

// tokenizer.ggml.model "gpt2" with its pre-tokenizer, the tokens and their types, the merges,
// BOS (GPT-2's: its EOS, as llama.cpp's converter writes it) and EOS, add_bos_token.
// A model with more rows than the tokenizer has tokens (Qwen's padding) gets "[PAD<id>]" tokens
// of type unused up to `model_vocab_size`, as llama.cpp's converter writes them.
inline void add_bpe_tokenizer(io::GgufWriter& w, const BpeTokenizer& tokenizer, std::size_t model_vocab_size = 0) {
    if (tokenizer.options().alphabet != BpeTokenizer::Alphabet::byte_level) {
        throw ArgumentError("a SentencePiece-style tokenizer.json is not written into GGUF files yet (byte-level BPE is)");
    }
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", std::string(gguf_pre_tokenizer_name(tokenizer.options().pre)));
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
    for (std::size_t id = 0; id < tokenizer.vocab_size(); ++id) {
        tokens.push_back(tokenizer.token_text(static_cast<TokenId>(id)));
        types.push_back(static_cast<std::int32_t>(tokenizer.token_type(static_cast<TokenId>(id))));
    }
    for (std::size_t id = tokenizer.vocab_size(); id < model_vocab_size; ++id) {
        tokens.push_back("[PAD" + std::to_string(id) + "]");
        types.push_back(static_cast<std::int32_t>(TokenType::unused));
    }
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_i32s("tokenizer.ggml.token_type", types);
    w.add_strings("tokenizer.ggml.merges", tokenizer.merge_texts());
    if (const auto bos = tokenizer.bos_id() ? tokenizer.bos_id() : tokenizer.eos_id()) {
        w.add_u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(*bos));
    }
    if (const auto eos = tokenizer.eos_id()) w.add_u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(*eos));
    if (tokenizer.prompt_start()) w.add_bool("tokenizer.ggml.add_bos_token", true);
}

}  // namespace tessera
