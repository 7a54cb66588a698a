#pragma once
// CharacterIds: the symbol each character starts BPE as, for the two kinds that merge characters
// (SentencePiece's BPE, and tokenizer.json's SentencePiece-style BPE): a table for ASCII, a map
// by code point for the rest. Looked up once per character of every new word, so by code point
// (already decoded) rather than by hashing the character's bytes.
#include <array>          // std::array
#include <optional>       // std::optional
#include <unordered_map>  // std::unordered_map

#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

class CharacterIds {
public:
    CharacterIds() { ascii_.fill(-1); }
    // Gives `cp` the symbol `id`; a character already given one keeps it. ids are non-negative.
    void add(char32_t cp, TokenId id) {
        if (cp < 0x80) {
            if (ascii_[cp] < 0) ascii_[cp] = id;
        } else {
            others_.emplace(cp, id);
        }
    }
    std::optional<TokenId> find(char32_t cp) const {
        if (cp < 0x80) return ascii_[cp] >= 0 ? std::optional(ascii_[cp]) : std::nullopt;
        const auto it = others_.find(cp);
        return it != others_.end() ? std::optional(it->second) : std::nullopt;
    }

private:
    std::array<TokenId, 128> ascii_{};  // -1: none
    std::unordered_map<char32_t, TokenId> others_;
};

}  // namespace tessera
