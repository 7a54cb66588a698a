#pragma once
// Unicode Normalization Form C (UAX #15), as Hugging Face's NFC normalizer applies it (Qwen2's
// tokenizer.json): canonical decomposition, canonical ordering of combining marks, canonical
// composition, from tables generated from the Unicode Character Database
// (normalization_tables.hpp; tools/gen_normalization_tables.py). Checked against Unicode's own
// NormalizationTest.txt (tests/test_tokenizer_json.cpp).
//
// Text that is already NFC (NFC_Quick_Check Yes throughout and marks in order: all ASCII, most
// text of any script) is returned unchanged after one scan.
#include <algorithm>    // std::upper_bound, std::lower_bound, std::stable_sort
#include <cstdint>      // std::uint8_t, std::uint32_t
#include <iterator>     // std::begin, std::end
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include <tessera/text/normalization_tables.hpp>  // combining_class_ranges, canonical_*
#include <tessera/text/utf8.hpp>                  // decode_one, append

namespace tessera::unicode {

namespace hangul {
inline constexpr char32_t s_base = 0xAC00, l_base = 0x1100, v_base = 0x1161, t_base = 0x11A7;
inline constexpr char32_t l_count = 19, v_count = 21, t_count = 28, n_count = v_count * t_count, s_count = l_count * n_count;
}  // namespace hangul

inline std::uint8_t combining_class(char32_t cp) noexcept {
    if (cp < 0x300) return 0;
    const auto* it = std::upper_bound(std::begin(combining_class_ranges), std::end(combining_class_ranges), static_cast<std::uint32_t>(cp),
                                      [](std::uint32_t c, const CombiningClassRange& r) { return c < r.first; });
    return it != std::begin(combining_class_ranges) && cp <= (it - 1)->last ? (it - 1)->value : 0;
}

inline bool nfc_quick_check_no_or_maybe(char32_t cp) noexcept {
    if (cp < 0x300) return false;
    const auto* it = std::upper_bound(std::begin(nfc_quick_check_ranges), std::end(nfc_quick_check_ranges), static_cast<std::uint32_t>(cp),
                                      [](std::uint32_t c, const NormalizationRange& r) { return c < r.first; });
    return it != std::begin(nfc_quick_check_ranges) && cp <= (it - 1)->last;
}

// Appends the full canonical decomposition of cp.
inline void decompose(char32_t cp, std::vector<char32_t>& out) {
    using namespace hangul;
    if (cp >= s_base && cp < s_base + s_count) {
        const char32_t s = cp - s_base;
        out.push_back(l_base + s / n_count);
        out.push_back(v_base + (s % n_count) / t_count);
        if (s % t_count) out.push_back(t_base + s % t_count);
        return;
    }
    const auto* it = std::lower_bound(std::begin(canonical_decompositions), std::end(canonical_decompositions), static_cast<std::uint32_t>(cp),
                                      [](const CanonicalDecomposition& d, std::uint32_t c) { return d.code_point < c; });
    if (it == std::end(canonical_decompositions) || it->code_point != cp) {
        out.push_back(cp);
        return;
    }
    decompose(it->first, out);
    if (it->second) decompose(it->second, out);
}

// The primary composite of (a, b), or 0.
inline char32_t compose(char32_t a, char32_t b) noexcept {
    using namespace hangul;
    if (a >= l_base && a < l_base + l_count && b >= v_base && b < v_base + v_count) {
        return s_base + ((a - l_base) * v_count + (b - v_base)) * t_count;
    }
    if (a >= s_base && a < s_base + s_count && (a - s_base) % t_count == 0 && b > t_base && b < t_base + t_count) return a + (b - t_base);
    const auto* it = std::lower_bound(std::begin(canonical_compositions), std::end(canonical_compositions), std::pair{a, b},
                                      [](const CanonicalComposition& c, std::pair<char32_t, char32_t> key) {
                                          return c.first != key.first ? c.first < key.first : c.second < key.second;
                                      });
    return it != std::end(canonical_compositions) && it->first == a && it->second == b ? it->composite : 0;
}

// Whether valid UTF-8 text is NFC by the quick check (no code point No or Maybe, marks in order).
inline bool is_nfc_quick(std::string_view text) noexcept {
    std::uint8_t last = 0;
    for (std::size_t i = 0; i < text.size();) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII: a starter, always Yes
            last = 0;
            ++i;
            continue;
        }
        const utf8::Decoded d = utf8::decode_one(text, i);
        i += d.length;
        const std::uint8_t ccc = combining_class(d.code_point);
        if ((ccc != 0 && last > ccc) || nfc_quick_check_no_or_maybe(d.code_point)) return false;
        last = ccc;
    }
    return true;
}

// The NFC form of valid UTF-8 text.
inline std::string nfc(std::string_view text) {
    if (is_nfc_quick(text)) return std::string(text);
    std::vector<char32_t> cps;
    cps.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const utf8::Decoded d = utf8::decode_one(text, i);
        decompose(d.code_point, cps);
        i += d.length;
    }
    // Canonical ordering: each run of non-starters sorted by class, stably.
    for (std::size_t i = 0; i < cps.size();) {
        if (combining_class(cps[i]) == 0) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < cps.size() && combining_class(cps[end]) != 0) ++end;
        std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(end),
                         [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
        i = end;
    }
    // Canonical composition: each character joins the last starter unless blocked.
    std::size_t out = 0, starter = 0;
    bool have_starter = false;
    int last_class = -1;  // of the last mark kept since the starter; -1: none
    for (std::size_t i = 0; i < cps.size(); ++i) {
        const char32_t c = cps[i];
        const int ccc = combining_class(c);
        if (have_starter && last_class < ccc) {  // not blocked: nothing between, or marks of lower class
            if (const char32_t composite = compose(cps[starter], c)) {
                cps[starter] = composite;
                continue;
            }
        }
        if (ccc == 0) {
            starter = out;
            have_starter = true;
            last_class = -1;
        } else {
            last_class = ccc;
        }
        cps[out++] = c;
    }
    cps.resize(out);
    std::string result;
    result.reserve(text.size());
    for (const char32_t c : cps) utf8::append(result, c);
    return result;
}

}  // namespace tessera::unicode
