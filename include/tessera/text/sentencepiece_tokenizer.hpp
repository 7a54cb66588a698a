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
// control tokens ("<s>", "</s>") and the unknown piece ("<unk>") never come from text unless
// SpecialTokens::allowed (as llama.cpp's parse_special matches them), and user-
// defined pieces are merged like normal ones, not matched ahead (no model tessera runs has
// any). Invalid UTF-8 is a TokenizerError naming its byte offset.
#include <algorithm>      // std::sort, std::unique, std::lower_bound, std::none_of
#include <array>          // std::array
#include <cstdint>        // std::int32_t
#include <functional>     // std::hash, std::equal_to, std::greater
#include <optional>       // std::optional
#include <span>           // std::span
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include <tessera/core/error.hpp>     // FormatError, TokenizerError
#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/text/added_tokens.hpp>  // AddedTokens
#include <tessera/text/bpe_merges.hpp>    // BpeMerges
#include <tessera/text/character_ids.hpp> // CharacterIds
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
        pieces_.assign(pieces.begin(), pieces.end());
        types_.assign(types.begin(), types.end());
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
            } else if ((type == PieceType::control || type == PieceType::unknown) && !pieces[i].empty()) {
                controls.push_back({pieces[i], id, true});
            }
            bytes_.push_back(surface(pieces[i], type));
            if (type == PieceType::byte) {
                if (const auto b = byte_of(pieces[i])) byte_ids_[*b] = id;
                else throw FormatError(source + ": token " + std::to_string(i) + " '" + pieces[i] + "' is a byte token but not <0xNN>");
            }
        }
        controls_ = AddedTokens(std::move(controls));
        build_merges();
    }

    std::size_t vocab_size() const noexcept override { return bytes_.size(); }
    std::optional<TokenId> eos_id() const override { return options_.eos; }
    std::optional<TokenId> bos_id() const { return options_.bos; }
    const Options& options() const noexcept { return options_; }
    // The vocabulary as given: each piece ("▁the", "<0x0A>"), its score and its type, as a GGUF
    // file's tokenizer.ggml.tokens, scores and token_type hold them.
    std::span<const std::string> pieces() const noexcept { return pieces_; }
    std::span<const float> scores() const noexcept { return scores_; }
    std::span<const std::int32_t> piece_types() const noexcept { return types_; }
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
        ids.reserve(text.size() + 1);  // at most a token per byte: never regrown (untouched pages cost nothing)
        // Control tokens' texts become their ids (only when allowed); each text part gets the
        // dummy prefix, as llama.cpp gives it after every control token.
        controls_.split(
            text, special, [&](std::string_view part) { encode_text(part, true, ids); },
            [&](const AddedToken& token) { ids.push_back(token.id); });
        return ids;
    }

    void encode_text(std::string_view text, bool with_prefix, std::vector<TokenId>& ids) const {
        if (text.empty()) return;
        std::string s;
        s.reserve(sentencepiece::marked_size(text) + space_mark.size());
        if (with_prefix && options_.add_space_prefix) s += space_mark;
        sentencepiece::append_marked(s, text);
        if (!word_by_word_) return encode_word(s, ids);
        sentencepiece::encode_word_by_word(s, ids, [&](std::string_view word, std::vector<TokenId>& out) { encode_word(word, out); });
    }

    // BPE over one ▁-marked word (or a whole text): its characters' symbols merged by
    // BpeMerges; a character in no piece never merges, so it ends one run of symbols and is
    // written as its bytes.
    void encode_word(std::string_view s, std::vector<TokenId>& ids) const {
        thread_local std::vector<TokenId> symbols;
        symbols.clear();
        const auto merge_run = [&] {
            const std::size_t before = ids.size();
            merges_.apply(symbols.size(), [&](std::size_t i) { return symbols[i]; }, ids);
            symbols.clear();
            const auto vocab = static_cast<TokenId>(bytes_.size());
            if (std::none_of(ids.begin() + static_cast<std::ptrdiff_t>(before), ids.end(), [&](TokenId id) { return id >= vocab; })) return;
            const std::vector<TokenId> merged(ids.begin() + static_cast<std::ptrdiff_t>(before), ids.end());
            ids.resize(before);
            for (const TokenId id : merged) {  // a character of pieces that is no piece itself
                if (id < vocab) ids.push_back(id);
                else fall_back(other_chars_[static_cast<std::size_t>(id - vocab)], ids);
            }
        };
        for (std::size_t at = 0; at < s.size();) {
            const utf8::Decoded c = utf8::decode_one(s, at);  // valid: checked before
            const std::string_view ch = s.substr(at, c.length);
            at += c.length;
            if (const std::optional<TokenId> id = char_ids_.find(c.code_point)) {
                symbols.push_back(*id);
            } else {
                merge_run();
                fall_back(ch, ids);
            }
        }
        merge_run();
    }

    // A character that is no piece: its bytes' <0xNN> tokens, else the unknown token.
    void fall_back(std::string_view ch, std::vector<TokenId>& ids) const {
        for (const char byte : ch) {
            const TokenId b = byte_ids_[static_cast<unsigned char>(byte)];
            if (b >= 0) {
                ids.push_back(b);
            } else if (options_.unknown) {
                ids.push_back(*options_.unknown);
                return;
            } else {
                throw TokenizerError("the text holds '" + std::string(ch) +
                                     "', which the vocabulary has neither as a piece, as bytes, nor as an unknown token");
            }
        }
    }

    // The symbol a piece's part can be: a mergeable piece, or a single character's symbol.
    std::optional<TokenId> symbol_of(std::string_view part) const {
        if (const utf8::Decoded c = utf8::decode_one(part, 0); c.length == part.size()) return char_ids_.find(c.code_point);
        const auto it = mergeable_.find(part);
        return it != mergeable_.end() ? std::optional(it->second) : std::nullopt;
    }

    // sentencepiece's loop joins the adjacent pair whose concatenation is the highest-scoring
    // piece, leftmost among equals. As BpeMerges: each way to split a mergeable piece into two
    // symbols is a merge into it, ranked by the piece's score (equal scores share a rank, so the
    // leftmost goes first); the same merges in the same order, with ids instead of strings.
    void build_merges() {
        std::vector<float> ranked;
        for (const auto& [piece, id] : mergeable_) {
            ranked.push_back(scores_[static_cast<std::size_t>(id)]);
            for (std::size_t at = 0; at < piece.size();) {
                const utf8::Decoded c = utf8::decode_one(piece, at);
                const std::string_view ch = std::string_view(piece).substr(at, c.length);
                at += c.length;
                if (char_ids_.find(c.code_point)) continue;
                const auto own = mergeable_.find(ch);
                char_ids_.add(c.code_point, own != mergeable_.end() ? own->second : static_cast<TokenId>(bytes_.size() + other_chars_.size()));
                if (own == mergeable_.end()) other_chars_.emplace_back(ch);
            }
        }
        std::sort(ranked.begin(), ranked.end(), std::greater<>());
        ranked.erase(std::unique(ranked.begin(), ranked.end()), ranked.end());
        for (const auto& [piece, id] : mergeable_) {
            const float score = scores_[static_cast<std::size_t>(id)];
            const auto rank = static_cast<std::int32_t>(std::lower_bound(ranked.begin(), ranked.end(), score, std::greater<>()) - ranked.begin());
            const std::string_view whole = piece;
            for (std::size_t cut = utf8::decode_one(whole, 0).length; cut < whole.size(); cut += utf8::decode_one(whole, cut).length) {
                const auto left = symbol_of(whole.substr(0, cut)), right = symbol_of(whole.substr(cut));
                if (left && right) merges_.add(*left, *right, rank, id);
            }
        }
    }

    struct Hash {  // lookups by string_view without building a string
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };
    Options options_;
    std::vector<std::string> pieces_;
    std::vector<float> scores_;
    std::vector<std::int32_t> types_;
    std::vector<std::string> bytes_;  // what each token decodes to
    std::unordered_map<std::string, TokenId, Hash, std::equal_to<>> mergeable_;
    BpeMerges merges_;
    CharacterIds char_ids_;  // each character's symbol: its piece, or past the vocabulary; none: in no piece
    std::vector<std::string> other_chars_;  // symbol vocab_size() + i: a character that is no piece
    AddedTokens controls_;  // matched in text only with SpecialTokens::allowed
    bool word_by_word_ = true;  // no piece joins words (sentencepiece::joins_words)
    std::array<TokenId, 256> byte_ids_{};  // <0xNN>'s id by byte, -1: none
};

}  // namespace tessera
