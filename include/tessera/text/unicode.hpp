#pragma once
// The three character classes of GPT-2's pre-tokenizer, looked up in tables generated from the
// Unicode Character Database (unicode_tables.hpp; tools/gen_unicode_tables.py).
#include <algorithm>  // std::upper_bound
#include <cstdint>    // std::uint8_t, std::uint32_t
#include <iterator>   // std::begin, std::end

#include <tessera/text/unicode_tables.hpp>  // letter_ranges, number_ranges, white_space_ranges

namespace tessera::unicode {

enum class CharClass : std::uint8_t {
    letter,       // \p{L}
    number,       // \p{N}
    white_space,  // \s: the White_Space property (U+0085 is one, U+FEFF is not)
    other,        // everything else: [^\s\p{L}\p{N}]
};

template <std::size_t N>
constexpr bool in_ranges(const CodePointRange (&table)[N], char32_t cp) noexcept {
    const auto* it = std::upper_bound(std::begin(table), std::end(table), static_cast<std::uint32_t>(cp),
                                      [](std::uint32_t c, const CodePointRange& r) { return c < r.first; });
    return it != std::begin(table) && static_cast<std::uint32_t>(cp) <= (it - 1)->last;
}

constexpr CharClass classify(char32_t cp) noexcept {
    if (cp < 0x80) {  // ASCII without a search
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CharClass::letter;
        if (cp >= '0' && cp <= '9') return CharClass::number;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return CharClass::white_space;
        return CharClass::other;
    }
    if (in_ranges(letter_ranges, cp)) return CharClass::letter;
    if (in_ranges(number_ranges, cp)) return CharClass::number;
    if (in_ranges(white_space_ranges, cp)) return CharClass::white_space;
    return CharClass::other;
}

}  // namespace tessera::unicode
