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

#include <tessera/core/error.hpp>  // TokenizerError
#include <tessera/text/unicode.hpp>  // classify, CharClass
#include <tessera/text/utf8.hpp>     // decode_one

namespace tessera {

// Calls emit(piece) for each piece of `text`, in order; the pieces concatenate to `text`.
// Throws TokenizerError naming the byte offset of the first invalid UTF-8 sequence, before
// emitting anything. Characters are decoded as the scan reaches them: no memory per character.
template <class Emit>
void pretokenize(std::string_view text, Emit&& emit) {
    using unicode::CharClass;
    if (const std::size_t bad = utf8::first_invalid(text); bad != text.size()) {
        throw TokenizerError("invalid UTF-8 at byte offset " + std::to_string(bad) + " of the text");
    }
    const std::size_t n = text.size();
    struct Char {
        char32_t cp;
        CharClass cls;
        std::size_t length;  // bytes; 0 past the end
    };
    const auto at = [&](std::size_t offset) {
        if (offset >= n) return Char{0, CharClass::other, 0};
        const utf8::Decoded d = utf8::decode_one(text, offset);
        return Char{d.code_point, unicode::classify(d.code_point), d.length};
    };
    const auto piece = [&](std::size_t begin, std::size_t end) { emit(text.substr(begin, end - begin)); };

    for (std::size_t i = 0; i < n;) {
        const Char c = at(i);
        // 's 't 're 've 'm 'll 'd (case-sensitive, as in the pattern).
        if (c.cp == U'\'') {
            const Char c1 = at(i + 1);
            if (c1.cp == U's' || c1.cp == U't' || c1.cp == U'm' || c1.cp == U'd') {
                piece(i, i + 2);
                i += 2;
                continue;
            }
            const char32_t c2 = at(i + 1 + c1.length).cp;
            if ((c1.cp == U'r' && c2 == U'e') || (c1.cp == U'v' && c2 == U'e') || (c1.cp == U'l' && c2 == U'l')) {
                piece(i, i + 3);
                i += 3;
                continue;
            }
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020, then a run of one class.
        const std::size_t k = (c.cp == U' ' && i + 1 < n) ? i + 1 : i;
        const Char first = k == i ? c : at(k);
        if (first.cls != CharClass::white_space) {
            std::size_t end = k + first.length;
            for (Char d = at(end); d.length && d.cls == first.cls; d = at(end)) end += d.length;
            piece(i, end);
            i = end;
            continue;
        }
        // `\s+(?!\S)` then `\s+`: a whitespace run, less its last character when a
        // non-whitespace character follows (that character's optional space belongs to it).
        std::size_t end = i + c.length, last = i;  // last: where the run's last character begins
        for (Char d = at(end); d.length && d.cls == CharClass::white_space; d = at(end)) {
            last = end;
            end += d.length;
        }
        if (end < n && last > i) end = last;
        piece(i, end);
        i = end;
    }
}

}  // namespace tessera
