#pragma once
// The tokenizer that belongs to a model, from wherever the model keeps it: vocab.json and
// merges.txt in a Hugging Face directory, or the tokenizer.ggml.* metadata of a GGUF file (so
// that one .gguf file is all a user needs).
#include <cstdint>     // std::int32_t, std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <limits>      // std::numeric_limits
#include <memory>      // std::unique_ptr, std::make_unique
#include <optional>    // std::optional
#include <utility>     // std::pair
#include <string>      // std::string
#include <vector>      // std::vector

#include <tessera/core/error.hpp>          // FormatError
#include <tessera/io/gguf.hpp>             // GgufFile
#include <tessera/models/model_files.hpp>  // model_path_kind
#include <tessera/text/bpe_tokenizer.hpp>  // BpeTokenizer
#include <tessera/text/sentencepiece_tokenizer.hpp>  // SentencePieceTokenizer

namespace tessera {

// GPT-2's byte-level BPE from a GGUF file: tokenizer.ggml.model "gpt2", the pre-tokenizer
// (tokenizer.ggml.pre) GPT-2's own when named, tokens and merges; an end-of-text id
// (tokenizer.ggml.eos_token_id) must be the "<|endoftext|>" token. Anything else is a
// FormatError naming the key.
inline BpeTokenizer tokenizer_from_gguf(const io::GgufFile& file) {
    const auto fail = [&](const std::string& what) { throw FormatError(file.path() + ": " + what); };
    if (const std::string& model = file.string_value("tokenizer.ggml.model"); model != "gpt2") {
        fail("tokenizer.ggml.model is '" + model + "': only GPT-2's byte-level BPE (\"gpt2\") is supported here" +
             (model == "llama" ? " (SentencePiece's: open_any_tokenizer)" : ""));
    }
    if (file.find("tokenizer.ggml.pre")) {
        if (const std::string& pre = file.string_value("tokenizer.ggml.pre"); pre != "gpt-2" && pre != "default") {
            fail("tokenizer.ggml.pre is '" + pre + "': only GPT-2's pre-tokenizer (\"gpt-2\") is supported");
        }
    }
    BpeTokenizer tokenizer(file.string_array("tokenizer.ggml.tokens"), file.string_array("tokenizer.ggml.merges"), file.path());
    if (file.find("tokenizer.ggml.eos_token_id")) {
        const std::uint64_t eos = file.unsigned_value("tokenizer.ggml.eos_token_id");
        if (!tokenizer.eos_id() || eos != static_cast<std::uint64_t>(*tokenizer.eos_id())) {
            fail("tokenizer.ggml.eos_token_id " + std::to_string(eos) + " is not the id of \"" +
                 std::string(BpeTokenizer::end_of_text) + "\"");
        }
    }
    return tokenizer;
}

// A model's tokenizer: `path` is a Hugging Face directory or a GGUF file.
inline BpeTokenizer open_tokenizer(const std::filesystem::path& path) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) return tokenizer_from_gguf(io::GgufFile(path));
    return BpeTokenizer::from_directory(path);
}

// SentencePiece's BPE from a GGUF file: tokenizer.ggml.model "llama" (Llama 2, Mistral,
// TinyLlama, as llama.cpp's converter writes it): tokens, scores, token types, the BOS / EOS /
// unknown ids, add_space_prefix and add_bos_token (both true when absent). Anything missing or inconsistent is a
// FormatError naming the key.
inline SentencePieceTokenizer sentencepiece_from_gguf(const io::GgufFile& file) {
    std::vector<float> scores;
    for (const io::GgufValue& v : file.array_value("tokenizer.ggml.scores", io::GgufValue::Type::f32))
        scores.push_back(static_cast<float>(v.real_value));
    std::vector<std::int32_t> types;
    for (const io::GgufValue& v : file.array_value("tokenizer.ggml.token_type", io::GgufValue::Type::i32))
        types.push_back(static_cast<std::int32_t>(v.signed_value));
    SentencePieceTokenizer::Options options;
    const auto id = [&](const char* key) -> std::optional<TokenId> {
        if (!file.find(key)) return std::nullopt;
        const std::uint64_t v = file.unsigned_value(key);
        if (v > static_cast<std::uint64_t>(std::numeric_limits<TokenId>::max())) {
            throw FormatError(file.path() + ": " + key + " " + std::to_string(v) + " is not a token id");
        }
        return static_cast<TokenId>(v);
    };
    options.bos = id("tokenizer.ggml.bos_token_id");
    options.eos = id("tokenizer.ggml.eos_token_id");
    options.unknown = id("tokenizer.ggml.unknown_token_id");
    for (const auto& [key, flag] : {std::pair{"tokenizer.ggml.add_space_prefix", &options.add_space_prefix},
                                     {"tokenizer.ggml.add_bos_token", &options.add_bos}}) {
        if (const io::GgufValue* v = file.find(key)) {
            if (v->type != io::GgufValue::Type::boolean) throw FormatError(file.path() + ": " + key + " is not a bool");
            *flag = v->unsigned_value != 0;
        }
    }
    return SentencePieceTokenizer(file.string_array("tokenizer.ggml.tokens"), scores, types, options, file.path());
}

// A model's tokenizer of whatever kind its file holds: byte-level BPE (GPT-2's; a directory's
// vocab.json and merges.txt) or SentencePiece's BPE (a GGUF file's "llama" tokenizer model).
inline std::unique_ptr<Tokenizer> open_any_tokenizer(const std::filesystem::path& path) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) {
        const io::GgufFile file(path);
        if (file.find("tokenizer.ggml.model") && file.string_value("tokenizer.ggml.model") == "llama") {
            return std::make_unique<SentencePieceTokenizer>(sentencepiece_from_gguf(file));
        }
        return std::make_unique<BpeTokenizer>(tokenizer_from_gguf(file));
    }
    return std::make_unique<BpeTokenizer>(BpeTokenizer::from_directory(path));
}

}  // namespace tessera
