#pragma once
// What every GGUF file quantize writes shares, whatever the architecture: the GGML type of a
// stored format, and the tokenizer as tokenizer.ggml.* metadata, as llama.cpp's
// convert_hf_to_gguf.py writes it: byte-level BPE as "gpt2", SentencePiece's BPE as "llama".
#include <cstdint>  // std::int32_t, std::uint32_t
#include <optional> // std::optional
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/core/error.hpp>           // ArgumentError
#include <tessera/core/weight_formats.hpp>  // WeightFormatId
#include <tessera/io/gguf.hpp>              // GgmlType
#include <tessera/io/gguf_writer.hpp>       // GgufWriter
#include <tessera/models/open_tokenizer.hpp> // gguf_pre_tokenizer_name
#include <tessera/text/bpe_tokenizer.hpp>   // BpeTokenizer
#include <tessera/text/sentencepiece_pieces.hpp>    // byte_of
#include <tessera/text/sentencepiece_tokenizer.hpp> // SentencePieceTokenizer

namespace tessera {

inline io::GgmlType ggml_type_of(WeightFormatId format) noexcept {
    switch (format) {
        case WeightFormatId::bf16: return io::GgmlType::bf16;
        case WeightFormatId::q8_0: return io::GgmlType::q8_0;
        case WeightFormatId::q4_0: return io::GgmlType::q4_0;
        case WeightFormatId::q6_k: return io::GgmlType::q6_k;
        case WeightFormatId::q4_k: return io::GgmlType::q4_k;
        case WeightFormatId::q5_k: return io::GgmlType::q5_k;
        case WeightFormatId::q5_0: return io::GgmlType::q5_0;
        case WeightFormatId::q5_1: return io::GgmlType::q5_1;
        case WeightFormatId::k_quant_mix:  // (no tensor's type: each is one of the above)
        case WeightFormatId::f32: break;
    }
    return io::GgmlType::f32;
}

// The tokenizer.ggml.* metadata of SentencePiece's BPE ("llama"): pieces, scores, types, the
// special ids, add_space_prefix and add_bos_token; "[PAD<id>]" unused pieces up to the model's
// rows, as for byte-level BPE.
struct SentencePieceMetadata {
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<std::int32_t> types;
    std::optional<TokenId> bos, eos, unknown;
    bool add_space_prefix = true, add_bos = true;
};
inline void add_sentencepiece_metadata(io::GgufWriter& w, SentencePieceMetadata m, std::size_t model_vocab_size) {
    for (std::size_t id = m.pieces.size(); id < model_vocab_size; ++id) {
        m.pieces.push_back("[PAD" + std::to_string(id) + "]");
        m.scores.push_back(0.0f);
        m.types.push_back(static_cast<std::int32_t>(TokenType::unused));
    }
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_strings("tokenizer.ggml.tokens", m.pieces);
    w.add_f32s("tokenizer.ggml.scores", m.scores);
    w.add_i32s("tokenizer.ggml.token_type", m.types);
    for (const auto& [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", m.bos}, {"tokenizer.ggml.eos_token_id", m.eos},
                                  {"tokenizer.ggml.unknown_token_id", m.unknown}}) {
        if (id) w.add_u32(key, static_cast<std::uint32_t>(*id));
    }
    w.add_bool("tokenizer.ggml.add_bos_token", m.add_bos);
    w.add_bool("tokenizer.ggml.add_space_prefix", m.add_space_prefix);
}

// A tokenizer.model's vocabulary, as it is (llama.cpp's converter: _set_vocab_sentencepiece).
inline void add_sentencepiece_tokenizer(io::GgufWriter& w, const SentencePieceTokenizer& tokenizer, std::size_t model_vocab_size = 0) {
    const auto& o = tokenizer.options();
    add_sentencepiece_metadata(w,
                               {{tokenizer.pieces().begin(), tokenizer.pieces().end()},
                                {tokenizer.scores().begin(), tokenizer.scores().end()},
                                {tokenizer.piece_types().begin(), tokenizer.piece_types().end()},
                                o.bos, o.eos, o.unknown, o.add_space_prefix, o.add_bos},
                               model_vocab_size);
}

// A SentencePiece-style tokenizer.json: its tokens as pieces, <0xNN> as byte pieces, and as each
// piece's score minus the rank of the first merge that makes it, so that SentencePiece's order
// (highest score first) is the merges' order. (llama.cpp's converter gives every piece -1000
// here, which merges a text in another order than the file's.) Tokens no merge makes score
// below every merge: single characters never merge into anything by score, and a longer one
// (rare) merges last.
inline void add_sentencepiece_tokenizer(io::GgufWriter& w, const BpeTokenizer& tokenizer, std::size_t model_vocab_size = 0) {
    const auto& o = tokenizer.options();
    SentencePieceMetadata m{{}, {}, {}, o.bos, o.eos, o.unknown, o.space_prefix != BpeTokenizer::SpacePrefix::never, o.add_bos};
    const std::vector<std::int32_t> ranks = tokenizer.first_merge_ranks();
    const auto unmerged = -static_cast<float>(ranks.size()) - 1.0f;
    for (std::size_t i = 0; i < tokenizer.vocab_size(); ++i) {
        const auto id = static_cast<TokenId>(i);
        std::string text = tokenizer.token_text(id);
        TokenType type = tokenizer.token_type(id);
        if (type == TokenType::normal && sentencepiece::byte_of(text)) type = TokenType::byte;
        if (o.unknown && id == *o.unknown) type = TokenType::unknown;
        m.scores.push_back(ranks[i] >= 0 ? -static_cast<float>(ranks[i]) : unmerged);
        m.types.push_back(static_cast<std::int32_t>(type));
        m.pieces.push_back(std::move(text));
    }
    add_sentencepiece_metadata(w, std::move(m), model_vocab_size);
}

// tokenizer.ggml.model "gpt2" with its pre-tokenizer, the tokens and their types, the merges,
// BOS (GPT-2's: its EOS, as llama.cpp's converter writes it) and EOS, add_bos_token.
// A model with more rows than the tokenizer has tokens (Qwen's padding) gets "[PAD<id>]" tokens
// of type unused up to `model_vocab_size`, as llama.cpp's converter writes them.
// A SentencePiece-style tokenizer.json (the characters alphabet) is written as "llama".
inline void add_bpe_tokenizer(io::GgufWriter& w, const BpeTokenizer& tokenizer, std::size_t model_vocab_size = 0) {
    if (tokenizer.options().alphabet != BpeTokenizer::Alphabet::byte_level) {
        return add_sentencepiece_tokenizer(w, tokenizer, model_vocab_size);
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
