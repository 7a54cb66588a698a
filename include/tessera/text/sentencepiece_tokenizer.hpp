#pragma once
// SentencePieceTokenizer: SentencePiece's BPE (Llama 2, Mistral, TinyLlama), as Google's
// sentencepiece encodes and llama.cpp's `llama` tokenizer model does, from a GGUF file's
// tokenizer.ggml.* metadata (tokens, scores, token types).
//
//   text --"▁" for each space, one more in front (the dummy prefix)--> characters as symbols
//        --merge the adjacent pair whose joined piece scores highest (leftmost among equals),
//          while any joined pair is a piece--> pieces --> ids; a character that is no piece
//          becomes its bytes' <0xNN> tokens (byte fallback), or the unknown token
//
// Merge candidates are the normal, user-defined and unused pieces (sentencepiece's pieces_);
// control tokens ("<s>", "</s>") never come from text unless SpecialTokens::allowed, and user-
// defined pieces are merged like normal ones, not matched ahead (no model tessera runs has
// any). Invalid UTF-8 is a TokenizerError naming its byte offset.
#include <array>          // std::array
#include <cstdint>        // std::int32_t
#include <functional>     // std::hash, std::equal_to
#include <optional>       // std::optional
#include <queue>          // std::priority_queue
#include <span>           // std::span
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include <tessera/core/error.hpp>     // FormatError, TokenizerError
#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/text/added_tokens.hpp>  // AddedTokens
#include <tessera/text/sentencepiece_pieces.hpp>  // space_mark, byte_of, with_spaces
#include <tessera/text/tokenizer.hpp>  // Tokenizer, SpecialTokens
#include <tessera/text/utf8.hpp>      // first_invalid, decode_one

namespace tessera {

class SentencePieceTokenizer final : public Tokenizer {
public:
    using PieceType = TokenType;

    struct Options {
        std::optional<TokenId> bos, eos, unknown;
        bool add_space_prefix = true;  // the dummy prefix
        bool add_bos = true;           // prompts start with bos
    };

    // pieces[i], scores[i] and types[i] describe token i; `source` names them in errors.
    SentencePieceTokenizer(std::span<const std::string> pieces, std::span<const float> scores, std::span<const std::int32_t> types,
                           const Options& options, const std::string& source)
        : options_(options) {
        byte_ids_.fill(-1);
        if (pieces.empty()) throw FormatError(source + ": tokenizer.ggml.tokens is empty");
        if (scores.size() != pieces.size() || types.size() != pieces.size()) {
            throw FormatError(source + ": " + std::to_string(pieces.size()) + " tokens but " + std::to_string(scores.size()) +
                              " scores and " + std::to_string(types.size()) + " token types");
        }
        for (const auto& [name, id] : {std::pair{"bos", options.bos}, {"eos", options.eos}, {"unknown", options.unknown}}) {
            if (id && (*id < 0 || static_cast<std::size_t>(*id) >= pieces.size())) {
                throw FormatError(source + ": the " + std::string(name) + " token id " + std::to_string(*id) +
                                  " is outside the vocabulary of " + std::to_string(pieces.size()));
            }
        }
        scores_.assign(scores.begin(), scores.end());
        std::vector<AddedToken> controls;
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            const auto id = static_cast<TokenId>(i);
            const auto type = static_cast<PieceType>(types[i]);
            if (types[i] < 1 || types[i] > 6) {
                throw FormatError(source + ": token " + std::to_string(i) + " has type " + std::to_string(types[i]) + " (1 to 6 are known)");
            }
            if (const std::size_t at = utf8::first_invalid(pieces[i]); at != pieces[i].size()) {
                throw FormatError(source + ": token " + std::to_string(i) + " is not valid UTF-8 (at byte " + std::to_string(at) + ")");
            }
            if (type == PieceType::normal || type == PieceType::user_defined || type == PieceType::unused) {
                mergeable_.emplace(pieces[i], id);
                if (sentencepiece::joins_words(pieces[i])) word_by_word_ = false;
            } else if (type == PieceType::control && !pieces[i].empty()) {
                controls.push_back({pieces[i], id, true});
            }
            bytes_.push_back(surface(pieces[i], type));
            if (type == PieceType::byte) {
                if (const auto b = byte_of(pieces[i])) byte_ids_[*b] = id;
                else throw FormatError(source + ": token " + std::to_string(i) + " '" + pieces[i] + "' is a byte token but not <0xNN>");
            }
        }
        controls_ = AddedTokens(std::move(controls));
    }

    std::size_t vocab_size() const noexcept override { return bytes_.size(); }
    std::optional<TokenId> eos_id() const override { return options_.eos; }
    std::optional<TokenId> bos_id() const { return options_.bos; }
    const std::string& token_bytes(TokenId id) const override {
        if (id < 0 || static_cast<std::size_t>(id) >= bytes_.size()) {
            throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(bytes_.size()) +
                                 " tokens)");
        }
        return bytes_[static_cast<std::size_t>(id)];
    }
    // The dummy prefix's space is not part of the text.
    bool strips_leading_space() const noexcept override { return options_.add_space_prefix; }
    std::optional<TokenId> prompt_start() const override { return options_.add_bos ? options_.bos : std::nullopt; }

private:
    static constexpr std::string_view space_mark = sentencepiece::space_mark;
    static std::optional<unsigned> byte_of(std::string_view piece) { return sentencepiece::byte_of(piece); }

    // What a token decodes to: ▁ as a space, <0xNN> as its byte, a control token as nothing,
    // the unknown token as sentencepiece shows it (" ⁇ ").
    static std::string surface(const std::string& piece, PieceType type) {
        if (type == PieceType::control) return {};
        if (type == PieceType::unknown) return " \xE2\x81\x87 ";
        if (type == PieceType::byte) {
            const auto b = byte_of(piece);
            return b ? std::string(1, static_cast<char>(*b)) : piece;
        }
        return sentencepiece::with_spaces(piece);
    }

    std::vector<TokenId> encode_ids(std::string_view text, SpecialTokens special) const override {
        if (const std::size_t at = utf8::first_invalid(text); at != text.size()) {
            throw TokenizerError("the text is not valid UTF-8 (at byte " + std::to_string(at) + ")");
        }
        std::vector<TokenId> ids;
        // Control tokens' texts become their ids (only when allowed); each text part gets the
        // dummy prefix, as llama.cpp gives it after every control token.
        controls_.split(
            text, special, [&](std::string_view part) { encode_text(part, true, ids); },
            [&](const AddedToken& token) { ids.push_back(token.id); });
        return ids;
    }

    struct Symbol {
        std::size_t begin, size;
        int prev, next;
    };
    struct Candidate {
        float score;
        int left, right;
        std::size_t size;  // the joined piece's bytes: a stale candidate's symbols no longer add up to it
        bool operator<(const Candidate& o) const noexcept {  // the queue's top: highest score, then leftmost
            return score != o.score ? score < o.score : left > o.left;
        }
    };

    void encode_text(std::string_view text, bool with_prefix, std::vector<TokenId>& ids) const {
        if (text.empty()) return;
        std::string s;
        if (with_prefix && options_.add_space_prefix) s += space_mark;
        sentencepiece::append_marked(s, text);
        if (!word_by_word_) return encode_word(s, ids);
        sentencepiece::encode_word_by_word(s, ids, [&](std::string_view word, std::vector<TokenId>& out) { encode_word(word, out); });
    }

    // BPE over one ▁-marked word (or a whole text).
    void encode_word(std::string_view s, std::vector<TokenId>& ids) const {
        std::vector<Symbol> symbols;
        for (std::size_t at = 0; at < s.size();) {
            const std::size_t n = utf8::decode_one(s, at).length;  // valid: checked before
            symbols.push_back({at, n, static_cast<int>(symbols.size()) - 1, static_cast<int>(symbols.size()) + 1});
            at += n;
        }
        symbols.back().next = -1;
        std::priority_queue<Candidate> agenda;
        const auto consider = [&](int left, int right) {
            if (left < 0 || right < 0) return;
            const Symbol& a = symbols[static_cast<std::size_t>(left)];
            const Symbol& b = symbols[static_cast<std::size_t>(right)];
            const auto it = mergeable_.find(std::string_view(s).substr(a.begin, a.size + b.size));
            if (it == mergeable_.end()) return;
            agenda.push({scores_[static_cast<std::size_t>(it->second)], left, right, a.size + b.size});
        };
        for (std::size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int>(i) - 1, static_cast<int>(i));
        while (!agenda.empty()) {
            const Candidate c = agenda.top();
            agenda.pop();
            Symbol& a = symbols[static_cast<std::size_t>(c.left)];
            Symbol& b = symbols[static_cast<std::size_t>(c.right)];
            if (a.size == 0 || b.size == 0 || a.next != c.right || a.size + b.size != c.size) continue;  // stale
            a.size += b.size;
            a.next = b.next;
            if (b.next >= 0) symbols[static_cast<std::size_t>(b.next)].prev = c.left;
            b.size = 0;
            consider(a.prev, c.left);
            consider(c.left, a.next);
        }
        for (int i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
            const Symbol& sym = symbols[static_cast<std::size_t>(i)];
            const std::string_view piece = std::string_view(s).substr(sym.begin, sym.size);
            if (const auto it = mergeable_.find(piece); it != mergeable_.end()) {
                ids.push_back(it->second);
                continue;
            }
            for (const char byte : piece) {  // byte fallback, else the unknown token
                const TokenId b = byte_ids_[static_cast<unsigned char>(byte)];
                if (b >= 0) {
                    ids.push_back(b);
                } else if (options_.unknown) {
                    ids.push_back(*options_.unknown);
                    break;
                } else {
                    throw TokenizerError("the text holds '" + std::string(piece) +
                                         "', which the vocabulary has neither as a piece, as bytes, nor as an unknown token");
                }
            }
        }
    }

    struct Hash {  // lookups by string_view without building a string
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };
    Options options_;
    std::vector<float> scores_;
    std::vector<std::string> bytes_;  // what each token decodes to
    std::unordered_map<std::string, TokenId, Hash, std::equal_to<>> mergeable_;
    AddedTokens controls_;  // matched in text only with SpecialTokens::allowed
    bool word_by_word_ = true;  // no piece joins words (sentencepiece::joins_words)
    std::array<TokenId, 256> byte_ids_{};  // <0xNN>'s id by byte, -1: none
};

}  // namespace tessera
