#pragma once
// How SentencePiece-style vocabularies write text in their pieces, shared by
// SentencePieceTokenizer and BpeTokenizer's characters alphabet: U+2581 (▁) for a space, and
// "<0xNN>" for a byte that byte fallback gives on its own.
#include <optional>       // std::optional
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <vector>         // std::vector

#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/text/word_cache.hpp>  // WordCache

namespace tessera::sentencepiece {

inline constexpr std::string_view space_mark = "\xE2\x96\x81";  // U+2581 ▁

// The byte of a "<0xNN>" piece (hex digits in either case), or nullopt.
inline std::optional<unsigned> byte_of(std::string_view piece) {
    if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
    unsigned v = 0;
    for (const char c : piece.substr(3, 2)) {
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return std::nullopt;
        v = v * 16 + static_cast<unsigned>(d);
    }
    return v;
}

// The size of text with each space as ▁.
inline std::size_t marked_size(std::string_view text) {
    std::size_t spaces = 0;
    for (const char c : text) spaces += c == ' ';
    return text.size() + spaces * (space_mark.size() - 1);
}

// Appends text with each space as ▁.
inline void append_marked(std::string& out, std::string_view text) {
    for (const char c : text) {
        if (c == ' ') out += space_mark;
        else out += c;
    }
}

// A piece's text with each ▁ as a space.
inline std::string with_spaces(std::string_view piece) {
    std::string out;
    for (std::size_t at = 0; at < piece.size();) {
        if (piece.compare(at, space_mark.size(), space_mark) == 0) {
            out += ' ';
            at += space_mark.size();
        } else {
            out += piece[at++];
        }
    }
    return out;
}

}  // namespace tessera::sentencepiece

namespace tessera::sentencepiece {

// Whether a piece holds ▁ after some other character ("a▁b", "x▁"). A vocabulary with no such
// piece (sentencepiece's split_by_whitespace, which Llama's and Mistral's were trained with)
// can never join a word to the ▁ that starts the next, so a text encodes word by word: the
// same ids, with repeated words looked up instead of merged again.
inline bool joins_words(std::string_view piece) {
    std::size_t at = 0;
    while (piece.compare(at, space_mark.size(), space_mark) == 0) at += space_mark.size();
    return piece.find(space_mark, at) != std::string_view::npos;
}

// Calls word(w) for each word of a ▁-marked text: a word starts where a ▁ follows another
// character ("▁▁▁foo▁bar" is "▁▁▁foo", "▁bar").
template <class Word>
void for_each_word(std::string_view s, Word&& word) {
    std::size_t start = 0;
    for (std::size_t at = s.find(space_mark); at != std::string_view::npos; at = s.find(space_mark, at + space_mark.size())) {
        const bool after_mark = at >= space_mark.size() && s.compare(at - space_mark.size(), space_mark.size(), space_mark) == 0;
        if (at > start && !after_mark) {
            word(s.substr(start, at - start));
            start = at;
        }
    }
    if (start < s.size()) word(s.substr(start));
}

// Encodes a ▁-marked text word by word, encode_word(word, out) once for each distinct word
// (WordCache).
template <class EncodeWord>
void encode_word_by_word(std::string_view s, std::vector<TokenId>& out, EncodeWord&& encode_word) {
    WordCache cache;
    for_each_word(s, [&](std::string_view word) { cache.append(word, out, encode_word); });
}

}  // namespace tessera::sentencepiece
