#pragma once
// UTF-8 validation, decoding and encoding by the Unicode standard's table of well-formed byte
// sequences (Table 3-7): no overlong forms, no surrogates, nothing above U+10FFFF. Invalid
// input is measured in "maximal subparts" (Unicode's recommended practice, also Python's and
// WHATWG's), so replacing each with U+FFFD gives the same text every mainstream decoder gives.
#include <cstddef>      // std::size_t
#include <string>       // std::string
#include <string_view>  // std::string_view

namespace tessera::utf8 {

enum class Status {
    ok,          // a complete, well-formed character
    invalid,     // not the start of any well-formed character
    incomplete,  // a well-formed prefix cut short by the end of the input
};

struct Decoded {
    char32_t code_point;  // meaningful when status == ok
    std::size_t length;   // bytes consumed: the character, or the maximal invalid subpart
    Status status;
};

// Decodes the character starting at s[i] (i < s.size()).
constexpr Decoded decode_one(std::string_view s, std::size_t i) noexcept {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    if (b0 < 0x80) return {b0, 1, Status::ok};
    std::size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        cp = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
        if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        cp = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;  // no overlong forms
        if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
        return {0, 1, Status::invalid};
    }
    for (std::size_t k = 1; k <= need; ++k) {
        if (i + k >= s.size()) return {0, k, Status::incomplete};
        const unsigned char b = byte(i + k);
        const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
        if (b < min || b > max) return {0, k, Status::invalid};
        cp = (cp << 6) | (b & 0x3F);
    }
    return {cp, need + 1, Status::ok};
}

// Appends the UTF-8 encoding of a valid code point.
inline void append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD

// Byte offset of the first ill-formed or truncated sequence, or s.size() when s is valid.
constexpr std::size_t first_invalid(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const Decoded d = decode_one(s, i);
        if (d.status != Status::ok) return i;
        i += d.length;
    }
    return s.size();
}

// Appends the longest prefix of `bytes` that cannot change with more input: complete
// characters as they are, each invalid maximal subpart as U+FFFD. Returns the number of bytes
// consumed; what is left is an incomplete (so far well-formed) final character. With `final`,
// that rest is replaced too, and everything is consumed.
inline std::size_t append_valid(std::string& out, std::string_view bytes, bool final) {
    std::size_t i = 0;
    while (i < bytes.size()) {
        const Decoded d = decode_one(bytes, i);
        if (d.status == Status::incomplete && !final) break;
        if (d.status == Status::ok) {
            out.append(bytes.substr(i, d.length));
        } else {
            out.append(replacement_character);
        }
        i += d.length;
    }
    return i;
}

// `bytes` with every invalid maximal subpart replaced by U+FFFD.
inline std::string sanitize(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    append_valid(out, bytes, true);
    return out;
}

}  // namespace tessera::utf8
