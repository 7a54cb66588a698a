#pragma once
// Pre-tokenizers of byte-level BPE: split text into the pieces that BPE then encodes one by
// one, exactly as each model's regular expression does with Unicode semantics, but as
// hand-written scanners (std::regex has no \p{..}): linear time, no recursion, no backtracking
// beyond the character or two a lookahead needs.
//
//   gpt2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama3  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2   llama3's with \p{N} in place of \p{N}{1,3} (one digit per piece)
//   smollm  each \p{N} alone, gpt2's on the text between (tokenizers' Digits then ByteLevel)
//
// (?i:...) folds ASCII only, as llama.cpp and Hugging Face's tokenizers.js do.
#include <cstddef>      // std::size_t
#include <string>       // std::string, std::to_string
#include <string_view>  // std::string_view
#include <utility>      // std::forward

#include <tessera/core/error.hpp>    // TokenizerError
#include <tessera/text/unicode.hpp>  // classify, CharClass
#include <tessera/text/utf8.hpp>     // decode_one, first_invalid

namespace tessera {

enum class PreTokenizer { gpt2, llama3, qwen2, smollm };

constexpr std::string_view name(PreTokenizer p) noexcept {
    switch (p) {
        case PreTokenizer::gpt2: return "gpt2";
        case PreTokenizer::llama3: return "llama3";
        case PreTokenizer::qwen2: return "qwen2";
        case PreTokenizer::smollm: return "smollm";
    }
    return "?";
}

namespace detail {

struct ScannedChar {
    char32_t cp;
    unicode::CharClass cls;
    std::size_t length;  // bytes; 0 past the end
};

// The characters of valid UTF-8 text, decoded as a scan reaches them: no memory per character.
class CharScanner {
public:
    explicit CharScanner(std::string_view text) noexcept : text_(text) {}
    ScannedChar at(std::size_t offset) const noexcept {
        if (offset >= text_.size()) return {0, unicode::CharClass::other, 0};
        const utf8::Decoded d = utf8::decode_one(text_, offset);
        return {d.code_point, unicode::classify(d.code_point), d.length};
    }
    std::size_t size() const noexcept { return text_.size(); }
    // The end of the run of characters from `from` for which keep(c) holds.
    template <class Keep>
    std::size_t run_end(std::size_t from, Keep keep) const noexcept {
        for (ScannedChar d = at(from); d.length && keep(d); d = at(from)) from += d.length;
        return from;
    }

private:
    std::string_view text_;
};

inline bool is_line_break(char32_t cp) noexcept { return cp == U'\r' || cp == U'\n'; }

// The length of the contraction ('s 't 're 've 'm 'll 'd) at `i`, where an apostrophe is, 0 if
// none; `fold` matches ASCII upper case too.
inline std::size_t contraction(const CharScanner& s, std::size_t i, bool fold) noexcept {
    const auto lower = [fold](char32_t c) { return fold && c >= U'A' && c <= U'Z' ? c + 32 : c; };
    const ScannedChar c1 = s.at(i + 1);
    const char32_t a = lower(c1.cp);
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    const char32_t b = lower(s.at(i + 1 + c1.length).cp);
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    return 0;
}

// `\s+(?!\S)` then `\s+` at `i` (a whitespace character): the run, less its last character
// when a non-whitespace character follows (that character's optional space belongs to it).
inline std::size_t trailing_white_space(const CharScanner& s, std::size_t i) noexcept {
    using unicode::CharClass;
    std::size_t end = i + s.at(i).length, last = i;  // last: where the run's last character begins
    for (ScannedChar d = s.at(end); d.length && d.cls == CharClass::white_space; d = s.at(end)) {
        last = end;
        end += d.length;
    }
    return end < s.size() && last > i ? last : end;
}

// The end of the gpt2 piece at `i`.
[[gnu::always_inline]] inline std::size_t gpt2_piece(const CharScanner& s, std::size_t i) noexcept {
    using unicode::CharClass;
    const ScannedChar c = s.at(i);
    if (c.cp == U'\'') {
        if (const std::size_t n = contraction(s, i, false)) return i + n;
    }
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020, then a run of one class.
    const std::size_t k = (c.cp == U' ' && i + 1 < s.size()) ? i + 1 : i;
    const ScannedChar first = k == i ? c : s.at(k);
    if (first.cls != CharClass::white_space) return s.run_end(k + first.length, [&](const ScannedChar& d) { return d.cls == first.cls; });
    return trailing_white_space(s, i);
}

// The end of the llama3 (max_digits 3) or qwen2 (max_digits 1) piece at `i`.
[[gnu::always_inline]] inline std::size_t llama3_piece(const CharScanner& s, std::size_t i, std::size_t max_digits) noexcept {
    using unicode::CharClass;
    const ScannedChar c = s.at(i);
    if (c.cp == U'\'') {
        if (const std::size_t n = contraction(s, i, true)) return i + n;
    }
    const auto letter = [](const ScannedChar& d) { return d.cls == CharClass::letter; };
    const auto other = [](const ScannedChar& d) { return d.cls == CharClass::other; };
    const auto line_break = [](const ScannedChar& d) { return is_line_break(d.cp); };
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (c.cls == CharClass::letter) return s.run_end(i + c.length, letter);
    if (c.cls != CharClass::number && !is_line_break(c.cp) && s.at(i + c.length).cls == CharClass::letter) {
        return s.run_end(i + c.length, letter);
    }
    // \p{N}{1,max_digits}
    if (c.cls == CharClass::number) {
        std::size_t end = i + c.length;
        for (std::size_t n = 1; n < max_digits; ++n) {
            const ScannedChar d = s.at(end);
            if (!d.length || d.cls != CharClass::number) break;
            end += d.length;
        }
        return end;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    const std::size_t k = c.cp == U' ' ? i + 1 : i;
    if (s.at(k).length && s.at(k).cls == CharClass::other) return s.run_end(s.run_end(k, other), line_break);
    // c is white space here. `\s*[\r\n]+`: the run up to its last line break, if it has one.
    std::size_t last_break_end = 0;
    for (std::size_t at = i;;) {
        const ScannedChar d = s.at(at);
        if (!d.length || d.cls != CharClass::white_space) break;
        at += d.length;
        if (is_line_break(d.cp)) last_break_end = at;
    }
    if (last_break_end) return last_break_end;
    return trailing_white_space(s, i);
}

}  // namespace detail

// Calls emit(piece) for each piece of valid UTF-8 `text`, in order; the pieces concatenate to
// `text`. (pretokenize below checks the text first.)
template <class Emit>
void pretokenize_valid(PreTokenizer kind, std::string_view text, Emit&& emit) {
    const auto scan = [&](std::string_view part, std::size_t offset, auto piece_end) {
        const detail::CharScanner s(part);
        for (std::size_t i = 0; i < part.size();) {
            const std::size_t end = piece_end(s, i);
            emit(text.substr(offset + i, end - i));
            i = end;
        }
    };
    const auto gpt2 = [](const detail::CharScanner& s, std::size_t i) { return detail::gpt2_piece(s, i); };
    switch (kind) {
        case PreTokenizer::gpt2: return scan(text, 0, gpt2);
        case PreTokenizer::llama3: return scan(text, 0, [](const detail::CharScanner& s, std::size_t i) { return detail::llama3_piece(s, i, 3); });
        case PreTokenizer::qwen2: return scan(text, 0, [](const detail::CharScanner& s, std::size_t i) { return detail::llama3_piece(s, i, 1); });
        case PreTokenizer::smollm: {
            // Each number alone; gpt2's pattern on the text between, as if it ended there.
            const detail::CharScanner s(text);
            const auto not_number = [](const detail::ScannedChar& d) { return d.cls != unicode::CharClass::number; };
            for (std::size_t i = 0; i < text.size();) {
                const std::size_t end = s.run_end(i, not_number);
                if (end > i) {
                    scan(text.substr(i, end - i), i, gpt2);
                    i = end;
                } else {
                    const std::size_t length = s.at(i).length;
                    emit(text.substr(i, length));
                    i += length;
                }
            }
            return;
        }
    }
}

// As pretokenize_valid, after checking the text: invalid UTF-8 is a TokenizerError naming the
// byte offset of the first invalid sequence, thrown before anything is emitted.
template <class Emit>
void pretokenize(PreTokenizer kind, std::string_view text, Emit&& emit) {
    if (const std::size_t bad = utf8::first_invalid(text); bad != text.size()) {
        throw TokenizerError("invalid UTF-8 at byte offset " + std::to_string(bad) + " of the text");
    }
    pretokenize_valid(kind, text, std::forward<Emit>(emit));
}

// GPT-2's pre-tokenizer.
template <class Emit>
void pretokenize(std::string_view text, Emit&& emit) {
    pretokenize(PreTokenizer::gpt2, text, std::forward<Emit>(emit));
}

}  // namespace tessera
