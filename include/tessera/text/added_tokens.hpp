#pragma once
// AddedTokens: the tokens a vocabulary matches in the text before any other step ("<|im_end|>",
// "<|eot_id|>", a model's user-defined tokens), as Hugging Face's tokenizers and llama.cpp do:
// leftmost, longest first among those starting at the same place; lstrip / rstrip take the
// white space beside a match with it; single_word matches only between non-word characters.
//
// Control ("special") tokens are matched only when the caller allows it (SpecialTokens::
// allowed): a prompt holding the literal text "<|im_end|>" stays text, so that a user cannot
// end their own turn in a chat. Non-special added tokens are always matched, as both
// references do.
#include <algorithm>    // std::sort
#include <array>        // std::array
#include <cstddef>      // std::size_t
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/text/tokenizer.hpp>  // SpecialTokens
#include <tessera/text/unicode.hpp>   // classify
#include <tessera/text/utf8.hpp>      // decode_one

namespace tessera {

struct AddedToken {
    std::string text;
    TokenId id = 0;
    bool special = true;  // a control token: matched only when SpecialTokens::allowed
    bool lstrip = false, rstrip = false, single_word = false;
    bool normalized = false;  // matched in the normalized text (after NFC), not the text as given
};

// Which added tokens a split matches: all of them (no normalizer), or, around a normalizer as
// Hugging Face's tokenizers does it, those matched in the text as given, then those matched in
// the normalized text between them.
enum class AddedTokenPass { all, as_given, normalized };

class AddedTokens {
public:
    AddedTokens() = default;
    explicit AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
        std::erase_if(tokens_, [](const AddedToken& t) { return t.text.empty(); });
        // Longest first, so the first match at a place is the longest.
        std::sort(tokens_.begin(), tokens_.end(), [](const AddedToken& a, const AddedToken& b) { return a.text.size() > b.text.size(); });
        for (std::size_t i = 0; i < tokens_.size(); ++i) {
            by_first_byte_[static_cast<unsigned char>(tokens_[i].text[0])].push_back(i);
            (tokens_[i].special ? any_special_ : any_other_) = true;
        }
    }

    bool empty() const noexcept { return tokens_.empty(); }
    const std::vector<AddedToken>& tokens() const noexcept { return tokens_; }

    // Splits `text` into the added tokens it holds and the text between them: on_text(part)
    // for each non-empty part between, on_token(token) for each match, in order.
    template <class OnText, class OnToken>
    void split(std::string_view text, SpecialTokens special, OnText&& on_text, OnToken&& on_token,
               AddedTokenPass pass = AddedTokenPass::all) const {
        if (!any_other_ && (!any_special_ || special != SpecialTokens::allowed)) {  // nothing to match: no scan
            if (!text.empty()) on_text(text);
            return;
        }
        std::size_t start = 0;  // where the text not yet emitted begins
        for (std::size_t at = 0; at < text.size(); ++at) {
            if (by_first_byte_[static_cast<unsigned char>(text[at])].empty()) continue;
            const AddedToken* hit = match_at(text, at, special, start, pass);
            if (!hit) continue;
            std::size_t begin = at, end = at + hit->text.size();
            if (hit->lstrip) begin = white_space_start(text, start, at);
            if (hit->rstrip) end = white_space_end(text, end);
            if (begin > start) on_text(text.substr(start, begin - start));
            on_token(*hit);
            start = end;
            at = end - 1;
        }
        if (start < text.size()) on_text(text.substr(start));
    }

private:
    const AddedToken* match_at(std::string_view text, std::size_t at, SpecialTokens special, std::size_t start,
                               AddedTokenPass pass) const {
        for (const std::size_t i : by_first_byte_[static_cast<unsigned char>(text[at])]) {
            const AddedToken& t = tokens_[i];
            if (t.special && special != SpecialTokens::allowed) continue;
            if (pass != AddedTokenPass::all && t.normalized != (pass == AddedTokenPass::normalized)) continue;
            if (text.compare(at, t.text.size(), t.text) != 0) continue;
            if (t.single_word && (ends_with_word(text.substr(start, at - start)) || starts_with_word(text.substr(at + t.text.size()))))
                continue;
            return &t;
        }
        return nullptr;
    }

    // A word character as tokenizers' single_word sees it: alphanumeric or '_'.
    static bool is_word(char32_t cp) {
        const unicode::CharClass c = unicode::classify(cp);
        return cp == U'_' || c == unicode::CharClass::letter || c == unicode::CharClass::number;
    }
    static bool starts_with_word(std::string_view s) { return !s.empty() && is_word(utf8::decode_one(s, 0).code_point); }
    static bool ends_with_word(std::string_view s) {
        if (s.empty()) return false;
        std::size_t at = s.size() - 1;
        while (at > 0 && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
        return is_word(utf8::decode_one(s, at).code_point);
    }
    static bool is_space(std::string_view s, std::size_t at) {
        return unicode::classify(utf8::decode_one(s, at).code_point) == unicode::CharClass::white_space;
    }
    // The start of the white space that ends at `at`, not before `floor`.
    static std::size_t white_space_start(std::string_view text, std::size_t floor, std::size_t at) {
        while (at > floor) {
            std::size_t prev = at - 1;
            while (prev > floor && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80) --prev;
            if (!is_space(text, prev)) break;
            at = prev;
        }
        return at;
    }
    static std::size_t white_space_end(std::string_view text, std::size_t at) {
        while (at < text.size() && is_space(text, at)) at += utf8::decode_one(text, at).length;
        return at;
    }

    std::vector<AddedToken> tokens_;
    std::array<std::vector<std::size_t>, 256> by_first_byte_{};
    bool any_special_ = false, any_other_ = false;
};

}  // namespace tessera
