#pragma once
// Tokenizer: what generation, streaming and the server need of a tokenizer, whatever its kind
// (byte-level BPE: text/bpe_tokenizer.hpp; SentencePiece: text/sentencepiece_tokenizer.hpp), as an interface: the kind a model file holds is
// known only at run time, and generation code names no concrete tokenizer type.
//
// A kind implements vocab_size, eos_id, token_bytes and encode_ids; decoding and the vocabulary
// check are the same for every kind.
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int32_t
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/error.hpp>     // TokenizerError
#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/text/utf8.hpp>      // sanitize

namespace tessera {

// A token's kind, numbered as GGUF's tokenizer.ggml.token_type (llama.cpp's).
enum class TokenType : std::int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

// Whether a control token's text is one that ends a turn or a text, as llama.cpp recognises
// them: generation stops on these besides the file's EOS (Llama 3's "<|eot_id|>" beside
// "<|end_of_text|>", ChatML's "<|im_end|>" beside "<|endoftext|>").
constexpr bool is_end_of_turn_text(std::string_view text) noexcept {
    for (const std::string_view t : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                     "<|end_of_text|>", "<EOT>"}) {
        if (text == t) return true;
    }
    return false;
}

// Whether special-token text such as "<|endoftext|>" in the input becomes its special id.
enum class SpecialTokens {
    as_text,  // encoded like any other text (the safe default for untrusted input)
    allowed,  // recognised and mapped to the special id
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    virtual std::size_t vocab_size() const noexcept = 0;
    // The id that ends a text, if the vocabulary has one.
    virtual std::optional<TokenId> eos_id() const = 0;
    // The ids that end generation: EOS and the vocabulary's end-of-turn tokens.
    virtual std::vector<TokenId> stop_ids() const {
        if (const auto eos = eos_id()) return {*eos};
        return {};
    }
    // The raw bytes one token stands for (possibly part of a UTF-8 character); throws
    // TokenizerError for an id outside the vocabulary.
    virtual const std::string& token_bytes(TokenId id) const = 0;

    // Invalid UTF-8 is a TokenizerError naming its byte offset.
    std::vector<TokenId> encode(std::string_view text, SpecialTokens special = SpecialTokens::as_text) const {
        return encode_ids(text, special);
    }

    // Whether decoding a whole text drops one space at its start (SentencePiece's dummy prefix).
    virtual bool strips_leading_space() const noexcept { return false; }
    // The id a prompt starts with (SentencePiece models' BOS, as their files ask), if any.
    virtual std::optional<TokenId> prompt_start() const { return std::nullopt; }

    // A prompt's ids: prompt_start(), then encode(text).
    std::vector<TokenId> encode_prompt(std::string_view text, SpecialTokens special = SpecialTokens::as_text) const {
        std::vector<TokenId> ids;
        if (const auto start = prompt_start()) ids.push_back(*start);
        const std::vector<TokenId> rest = encode_ids(text, special);
        ids.insert(ids.end(), rest.begin(), rest.end());
        return ids;
    }

    // The exact bytes of the ids (may end inside a UTF-8 character when the ids were cut).
    std::string decode_bytes(std::span<const TokenId> ids) const {
        std::string out;
        for (const TokenId id : ids) out += token_bytes(id);
        if (strips_leading_space() && !out.empty() && out.front() == ' ') out.erase(0, 1);
        return out;
    }
    // The text of the ids: invalid UTF-8 becomes U+FFFD (as Python's errors="replace").
    std::string decode(std::span<const TokenId> ids) const { return utf8::sanitize(decode_bytes(ids)); }

    // A tokenizer and a model must agree on the vocabulary size; a mismatch is an error, since
    // ids would silently mean other tokens. A model may have more rows than the tokenizer has
    // tokens where the tokenizer's file says its vocabulary is padded in the model (Qwen's
    // tokenizer.json: 151,665 tokens, 151,936 rows); decoding an id of those rows is an error.
    void check_vocab_size(std::size_t model_vocab_size) const {
        if (model_vocab_size == vocab_size() || (model_vocab_size > vocab_size() && model_rows_may_pad())) return;
        throw TokenizerError("the tokenizer has " + std::to_string(vocab_size()) + " tokens but the model's vocab_size is " +
                             std::to_string(model_vocab_size) + ": they do not belong together");
    }
    // Whether the model's vocabulary may be padded past the tokenizer's (check_vocab_size).
    virtual bool model_rows_may_pad() const noexcept { return false; }

protected:
    Tokenizer() = default;
    Tokenizer(const Tokenizer&) = default;
    Tokenizer(Tokenizer&&) = default;
    Tokenizer& operator=(const Tokenizer&) = default;
    Tokenizer& operator=(Tokenizer&&) = default;

private:
    virtual std::vector<TokenId> encode_ids(std::string_view text, SpecialTokens special) const = 0;
};

}  // namespace tessera
