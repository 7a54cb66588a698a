#pragma once
// What every GGUF file quantize writes shares, whatever the architecture: the GGML type of a
// stored format, and a byte-level BPE tokenizer (GPT-2's kind) as tokenizer.ggml.* metadata, as
// llama.cpp's convert_hf_to_gguf.py writes it.
#include <cstdint>  // std::int32_t, std::uint32_t
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/core/weight_formats.hpp>  // WeightFormatId
#include <tessera/io/gguf.hpp>              // GgmlType
#include <tessera/io/gguf_writer.hpp>       // GgufWriter
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

// tokenizer.ggml.model "gpt2" with its pre-tokenizer "gpt-2", the tokens (<|endoftext|> a
// control token, the rest normal), the merges, and <|endoftext|> as BOS and EOS where the
// vocabulary has it.
inline void add_bpe_tokenizer(io::GgufWriter& w, const BpeTokenizer& tokenizer) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "gpt-2");
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;  // llama.cpp's token types: 1 normal, 3 control
    for (std::size_t id = 0; id < tokenizer.vocab_size(); ++id) {
        tokens.push_back(tokenizer.token_text(static_cast<TokenId>(id)));
        types.push_back(tokens.back() == BpeTokenizer::end_of_text ? 3 : 1);
    }
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_i32s("tokenizer.ggml.token_type", types);
    w.add_strings("tokenizer.ggml.merges", tokenizer.merge_texts());
    if (const auto eos = tokenizer.eos_id()) {
        w.add_u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(*eos));
        w.add_u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(*eos));
    }
}

}  // namespace tessera
