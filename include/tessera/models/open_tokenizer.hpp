#pragma once
// The tokenizer that belongs to a model, from wherever the model keeps it: tokenizer.json (or
// vocab.json and merges.txt) in a Hugging Face directory, or the tokenizer.ggml.* metadata of a
// GGUF file (so that one .gguf file is all a user needs).
#include <cstdint>     // std::int32_t, std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <limits>      // std::numeric_limits
#include <memory>      // std::unique_ptr, std::make_unique
#include <optional>    // std::optional
#include <string_view> // std::string_view
#include <string>      // std::string
#include <vector>      // std::vector

#include <tessera/core/error.hpp>          // FormatError
#include <tessera/io/gguf.hpp>             // GgufFile
#include <tessera/models/model_files.hpp>  // model_path_kind
#include <tessera/text/bpe_tokenizer.hpp>  // BpeTokenizer
#include <tessera/text/sentencepiece_model.hpp>  // sentencepiece_from_model_file
#include <tessera/text/sentencepiece_tokenizer.hpp>  // SentencePieceTokenizer
#include <tessera/text/tokenizer_json.hpp>  // tokenizer_from_json_file

namespace tessera {

// The pre-tokenizer a GGUF file names (tokenizer.ggml.pre, as llama.cpp's converter writes it),
// with llama.cpp's ignore_merges and add_bos defaults for it; nullopt for a name not known here.
struct GgufPreTokenizer {
    PreTokenizer pre;
    bool ignore_merges, add_bos;
};
inline std::optional<GgufPreTokenizer> gguf_pre_tokenizer(std::string_view name) {
    if (name == "gpt-2" || name == "default") return GgufPreTokenizer{PreTokenizer::gpt2, false, false};
    if (name == "llama-bpe" || name == "llama3" || name == "llama-v3") return GgufPreTokenizer{PreTokenizer::llama3, true, true};
    if (name == "qwen2" || name == "deepseek-r1-qwen") return GgufPreTokenizer{PreTokenizer::qwen2, false, false};
    if (name == "smollm") return GgufPreTokenizer{PreTokenizer::smollm, false, false};
    return std::nullopt;
}
// The name a GGUF file gives a pre-tokenizer.
constexpr std::string_view gguf_pre_tokenizer_name(PreTokenizer pre) noexcept {
    switch (pre) {
        case PreTokenizer::gpt2: return "gpt-2";
        case PreTokenizer::llama3: return "llama-bpe";
        case PreTokenizer::qwen2: return "qwen2";
        case PreTokenizer::smollm: return "smollm";
    }
    return "gpt-2";
}

// A token id stored under `key`, if the file has it.
inline std::optional<TokenId> gguf_token_id(const io::GgufFile& file, const char* key) {
    if (!file.find(key)) return std::nullopt;
    const std::uint64_t v = file.unsigned_value(key);
    if (v > static_cast<std::uint64_t>(std::numeric_limits<TokenId>::max())) {
        throw FormatError(file.path() + ": " + key + " " + std::to_string(v) + " is not a token id");
    }
    return static_cast<TokenId>(v);
}
// A bool stored under `key`, else `fallback`.
inline bool gguf_flag(const io::GgufFile& file, const char* key, bool fallback) {
    const io::GgufValue* v = file.find(key);
    if (!v) return fallback;
    if (v->type != io::GgufValue::Type::boolean) throw FormatError(file.path() + ": " + key + " is not a bool");
    return v->unsigned_value != 0;
}

// Byte-level BPE from a GGUF file: tokenizer.ggml.model "gpt2" with the pre-tokenizer
// tokenizer.ggml.pre names (GPT-2's when absent; "llama-bpe", "qwen2", "smollm"; any other is
// refused by name, never replaced by GPT-2's), tokens, token types, merges, BOS / EOS /
// end-of-turn / end-of-message ids and add_bos_token. Anything else is a FormatError naming the key.
inline BpeTokenizer tokenizer_from_gguf(const io::GgufFile& file) {
    const auto fail = [&](const std::string& what) { throw FormatError(file.path() + ": " + what); };
    if (const std::string& model = file.string_value("tokenizer.ggml.model"); model != "gpt2") {
        fail("tokenizer.ggml.model is '" + model + "': only byte-level BPE (\"gpt2\") is supported here" +
             (model == "llama" ? " (SentencePiece's: open_any_tokenizer)" : ""));
    }
    GgufPreTokenizer pre{PreTokenizer::gpt2, false, false};
    if (file.find("tokenizer.ggml.pre")) {
        const std::string& name = file.string_value("tokenizer.ggml.pre");
        const auto known = gguf_pre_tokenizer(name);
        if (!known) fail("tokenizer.ggml.pre is '" + name + "', a pre-tokenizer not supported here (gpt-2, llama-bpe, qwen2, smollm are)");
        pre = *known;
    }
    std::vector<std::int32_t> types;
    if (file.find("tokenizer.ggml.token_type")) {
        for (const io::GgufValue& v : file.array_value("tokenizer.ggml.token_type", io::GgufValue::Type::i32))
            types.push_back(static_cast<std::int32_t>(v.signed_value));
    }
    BpeTokenizer::Options options;
    options.pre = pre.pre;
    options.ignore_merges = pre.ignore_merges;
    options.bos = gguf_token_id(file, "tokenizer.ggml.bos_token_id");
    options.eos = gguf_token_id(file, "tokenizer.ggml.eos_token_id");
    options.add_bos = gguf_flag(file, "tokenizer.ggml.add_bos_token", pre.add_bos);
    BpeTokenizer tokenizer(file.string_array("tokenizer.ggml.tokens"), types, file.string_array("tokenizer.ggml.merges"), options,
                           file.path());
    for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
        if (const auto id = gguf_token_id(file, key)) tokenizer.add_stop_id(*id, file.path() + " " + key);
    }
    return tokenizer;
}

// A model's byte-level BPE tokenizer: `path` is a GGUF file or a Hugging Face directory (its
// tokenizer.json where it has one, else vocab.json and merges.txt).
inline BpeTokenizer open_tokenizer(const std::filesystem::path& path) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) return tokenizer_from_gguf(io::GgufFile(path));
    if (std::filesystem::exists(path / "tokenizer.json")) return tokenizer_from_json_file(path / "tokenizer.json");
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
    options.bos = gguf_token_id(file, "tokenizer.ggml.bos_token_id");
    options.eos = gguf_token_id(file, "tokenizer.ggml.eos_token_id");
    options.unknown = gguf_token_id(file, "tokenizer.ggml.unknown_token_id");
    options.add_space_prefix = gguf_flag(file, "tokenizer.ggml.add_space_prefix", true);
    options.add_bos = gguf_flag(file, "tokenizer.ggml.add_bos_token", true);
    return SentencePieceTokenizer(file.string_array("tokenizer.ggml.tokens"), scores, types, options, file.path());
}

// A model's tokenizer of whatever kind its file holds: a GGUF file's ("llama": SentencePiece,
// "gpt2": byte-level BPE), or a directory's tokenizer.json (byte-level or SentencePiece-style
// BPE), else its tokenizer.model (SentencePiece), else its vocab.json and merges.txt.
inline std::unique_ptr<Tokenizer> open_any_tokenizer(const std::filesystem::path& path) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) {
        const io::GgufFile file(path);
        if (file.find("tokenizer.ggml.model") && file.string_value("tokenizer.ggml.model") == "llama") {
            return std::make_unique<SentencePieceTokenizer>(sentencepiece_from_gguf(file));
        }
        return std::make_unique<BpeTokenizer>(tokenizer_from_gguf(file));
    }
    // tokenizer.json first, as transformers' AutoTokenizer loads it (a file it holds but
    // tessera refuses is an error, never a silent switch to another file).
    if (!std::filesystem::exists(path / "tokenizer.json") && std::filesystem::exists(path / "tokenizer.model")) {
        return std::make_unique<SentencePieceTokenizer>(sentencepiece_from_model_file(path / "tokenizer.model"));
    }
    return std::make_unique<BpeTokenizer>(open_tokenizer(path));
}

}  // namespace tessera
