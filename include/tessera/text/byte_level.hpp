#pragma once
// GPT-2's byte-level alphabet: every byte gets a printable character, so that BPE works on
// text with no unknown symbols. Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to
// themselves; the other 68 bytes, in order, to U+0100, U+0101, ... (space 0x20 -> 'Ġ' U+0120).
#include <array>  // std::array

namespace tessera::byte_level {

constexpr bool maps_to_itself(unsigned b) noexcept {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// byte -> code point of its character.
inline constexpr std::array<char32_t, 256> byte_to_char = [] {
    std::array<char32_t, 256> table{};
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) table[b] = maps_to_itself(b) ? b : next++;
    return table;
}();

}  // namespace tessera::byte_level
