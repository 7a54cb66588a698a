#pragma once
// GPT-2's pre-tokenizer: splits text into the pieces that BPE then encodes one by one, exactly
// as OpenAI's pattern does with Unicode semantics,
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// but as a hand-written scanner (std::regex has no \p{..}): linear time, no recursion, no
// backtracking beyond the one character the lookahead needs.
#include <cstddef>      // std::size_t
#include <string>       // std::to_string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/error.hpp>  // TokenizerError
#include <tessera/text/unicode.hpp>  // classify, CharClass
#include <tessera/text/utf8.hpp>     // decode_one

namespace tessera {

// Calls emit(piece) for each piece of `text`, in order; the pieces concatenate to `text`.
// Throws TokenizerError naming the byte offset of the first invalid UTF-8 sequence.
template <class Emit>
void pretokenize(std::string_view text, Emit&& emit) {
    using unicode::CharClass;
    // One decoding pass: the class and byte offset of every character.
    struct Char {
        char32_t cp;
        CharClass cls;
        std::size_t offset;
    };
    std::vector<Char> chars;
    chars.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const utf8::Decoded d = utf8::decode_one(text, i);
        if (d.status != utf8::Status::ok) {
            throw TokenizerError("invalid UTF-8 at byte offset " + std::to_string(i) + " of the text");
        }
        chars.push_back({d.code_point, unicode::classify(d.code_point), i});
        i += d.length;
    }
    const std::size_t n = chars.size();
    const auto piece = [&](std::size_t begin, std::size_t end) {
        const std::size_t b = chars[begin].offset;
        const std::size_t e = end < n ? chars[end].offset : text.size();
        emit(text.substr(b, e - b));
    };
    const auto cp_at = [&](std::size_t i) { return i < n ? chars[i].cp : char32_t{0}; };

    std::size_t i = 0;
    while (i < n) {
        // 's 't 're 've 'm 'll 'd (case-sensitive, as in the pattern).
        if (chars[i].cp == U'\'') {
            const char32_t c1 = cp_at(i + 1), c2 = cp_at(i + 2);
            if (c1 == U's' || c1 == U't' || c1 == U'm' || c1 == U'd') {
                piece(i, i + 2);
                i += 2;
                continue;
            }
            if ((c1 == U'r' && c2 == U'e') || (c1 == U'v' && c2 == U'e') || (c1 == U'l' && c2 == U'l')) {
                piece(i, i + 3);
                i += 3;
                continue;
            }
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020, then a run of one class.
        const std::size_t k = (chars[i].cp == U' ' && i + 1 < n) ? i + 1 : i;
        const CharClass cls = chars[k].cls;
        if (cls != CharClass::white_space) {
            std::size_t end = k + 1;
            while (end < n && chars[end].cls == cls) ++end;
            piece(i, end);
            i = end;
            continue;
        }
        // `\s+(?!\S)` then `\s+`: a whitespace run, less its last character when a
        // non-whitespace character follows (that character's optional space belongs to it).
        std::size_t end = i + 1;
        while (end < n && chars[end].cls == CharClass::white_space) ++end;
        if (end < n && end - i >= 2) --end;
        piece(i, end);
        i = end;
    }
}

}  // namespace tessera
