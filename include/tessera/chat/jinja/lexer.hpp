#pragma once
// Splits a template into text, `{{ output }}` and `{% statement %}` pieces, the tags' insides
// into tokens, with Jinja2's whitespace rules as transformers configures them: trim_blocks (the
// newline after a statement or comment tag is dropped), lstrip_blocks (spaces and tabs before
// such a tag on its own line are dropped), `-` on a tag's side strips all whitespace on that
// side, `+` keeps it. As Jinja2 does, line endings are made "\n" and one final newline of the
// template is dropped (keep_trailing_newline is off).
#include <charconv>     // std::from_chars
#include <cstdint>      // std::int64_t
#include <cstdlib>      // std::strtod
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <system_error> // std::errc
#include <vector>       // std::vector

#include <tessera/chat/jinja/value.hpp>  // TemplateError
#include <tessera/text/utf8.hpp>         // utf8::append

namespace tessera::chat::jinja {

struct Token {
    enum class Kind { name, string, integer, real, op, end };
    Kind kind = Kind::end;
    std::string text;  // a name, a string's value, an operator
    std::int64_t integer = 0;
    double real = 0.0;
    int line = 1;
};

struct Piece {
    enum class Kind { text, output, statement };
    Kind kind = Kind::text;
    std::string text;           // Kind::text
    std::vector<Token> tokens;  // the tag's tokens, then one Kind::end
    int line = 1;
};

namespace detail {

inline bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A string literal's value: Python's escapes (\n, \t, \\, \', \xNN, \uNNNN, ...); an unknown
// escape keeps its backslash, as Python's does.
inline std::string unescape(std::string_view s, int line) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        const auto hex = [&](std::size_t digits) {
            if (i + digits >= s.size())
                throw TemplateError("line " + std::to_string(line) + ": truncated \\" + std::string(1, c) + " escape in a string");
            char32_t cp = 0;
            for (std::size_t k = 1; k <= digits; ++k) {
                const char h = s[i + k];
                const int v = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                if (v < 0) throw TemplateError("line " + std::to_string(line) + ": bad \\" + std::string(1, c) + " escape in a string");
                cp = cp * 16 + static_cast<char32_t>(v);
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                throw TemplateError("line " + std::to_string(line) + ": escape names no character");
            i += digits;
            utf8::append(out, cp);
        };
        switch (c) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'v': out += '\v'; break;
            case 'a': out += '\a'; break;
            case '0': out += '\0'; break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case '\n': break;  // a line continuation
            case 'x': hex(2); break;
            case 'u': hex(4); break;
            case 'U': hex(8); break;
            default: (out += '\\') += c;
        }
    }
    return out;
}

// The longest operator at s[i], or empty.
inline std::string_view operator_at(std::string_view s, std::size_t i) {
    static constexpr std::string_view two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const auto op : two)
        if (s.substr(i, 2) == op) return op;
    static constexpr std::string_view one = "+-*/%~<>=()[]{},.:|";
    if (one.find(s[i]) != std::string_view::npos) return s.substr(i, 1);
    return {};
}

}  // namespace detail

inline constexpr std::size_t max_tag_tokens = 2048;  // real templates' longest tags have a few hundred

// The template's pieces. Throws TemplateError for an unclosed tag, a string or a character a
// template cannot hold.
inline std::vector<Piece> lex(std::string_view raw) {
    std::string src;
    src.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\r') {
            src += '\n';
            if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
        } else {
            src += raw[i];
        }
    }
    if (!src.empty() && src.back() == '\n') src.pop_back();

    std::vector<Piece> pieces;
    int line = 1;
    const auto count_lines = [&](std::size_t from, std::size_t to) {
        for (std::size_t k = from; k < to; ++k) line += src[k] == '\n';
    };
    bool line_starting = true;  // the last tag's end consumed a newline (or nothing came yet)
    std::size_t pos = 0;
    while (pos < src.size()) {
        std::size_t start = pos;
        while (true) {
            start = src.find('{', start);
            if (start == std::string::npos || start + 1 >= src.size()) {
                start = std::string::npos;
                break;
            }
            const char c = src[start + 1];
            if (c == '{' || c == '%' || c == '#') break;
            ++start;
        }
        std::string text = src.substr(pos, start == std::string::npos ? std::string::npos : start - pos);
        const int text_line = line;
        if (start == std::string::npos) {
            if (!text.empty()) pieces.push_back({Piece::Kind::text, std::move(text), {}, text_line});
            break;
        }
        count_lines(pos, start);
        const char kind = src[start + 1];  // '{', '%' or '#'
        std::size_t p = start + 2;
        const char sign = p < src.size() && (src[p] == '-' || src[p] == '+') ? src[p] : 0;
        if (sign) ++p;
        if (sign == '-') {
            std::size_t keep = text.size();
            while (keep > 0 && is_python_space(text[keep - 1])) --keep;
            text.resize(keep);
        } else if (sign != '+' && kind != '{') {
            // lstrip_blocks: only spaces and tabs between the line's start and the tag.
            const std::size_t l = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
            if ((l > 0 || line_starting) && l < text.size() &&
                text.find_first_not_of(" \t\v\f", l) == std::string::npos)
                text.resize(l);
        }
        if (!text.empty()) pieces.push_back({Piece::Kind::text, std::move(text), {}, text_line});

        char end_sign = 0;
        std::size_t end = 0;  // one past the tag's closing delimiter
        if (kind == '#') {
            const std::size_t close = src.find("#}", p);
            if (close == std::string::npos) throw TemplateError("line " + std::to_string(line) + ": a comment is not closed with #}");
            if (close > p && (src[close - 1] == '-' || src[close - 1] == '+')) end_sign = src[close - 1];
            count_lines(p, close);
            end = close + 2;
        } else {
            const char closer = kind == '{' ? '}' : '%';
            Piece piece{kind == '{' ? Piece::Kind::output : Piece::Kind::statement, {}, {}, line};
            int open_brackets = 0;  // as Jinja2: inside ( [ {, "}}" and "%}" are operators, not the tag's end
            while (true) {
                while (p < src.size() && is_python_space(src[p])) line += src[p++] == '\n';
                if (p >= src.size())
                    throw TemplateError("line " + std::to_string(piece.line) + ": a tag is not closed with " +
                                        std::string(1, closer) + "}");
                const bool signed_close = (src[p] == '-' || src[p] == '+') && p + 2 < src.size() &&
                                          src[p + 1] == closer && src[p + 2] == '}';
                if (open_brackets == 0 && (signed_close || (src[p] == closer && p + 1 < src.size() && src[p + 1] == '}'))) {
                    if (signed_close) end_sign = src[p++];
                    end = p + 2;
                    break;
                }
                Token t;
                t.line = line;
                const char c = src[p];
                if (c == '\'' || c == '"') {
                    std::size_t q = p + 1;
                    while (q < src.size() && src[q] != c) q += src[q] == '\\' ? 2 : 1;
                    if (q >= src.size()) throw TemplateError("line " + std::to_string(line) + ": a string is not closed");
                    t.kind = Token::Kind::string;
                    t.text = detail::unescape(std::string_view(src).substr(p + 1, q - p - 1), line);
                    count_lines(p, q);
                    p = q + 1;
                } else if (detail::is_digit(c)) {
                    std::size_t q = p;
                    while (q < src.size() && (detail::is_digit(src[q]) || src[q] == '_')) ++q;
                    bool real = false;
                    if (q + 1 < src.size() && src[q] == '.' && detail::is_digit(src[q + 1])) {
                        real = true;
                        for (++q; q < src.size() && (detail::is_digit(src[q]) || src[q] == '_');) ++q;
                    }
                    if (q < src.size() && (src[q] == 'e' || src[q] == 'E')) {
                        std::size_t r = q + 1;
                        if (r < src.size() && (src[r] == '+' || src[r] == '-')) ++r;
                        if (r < src.size() && detail::is_digit(src[r])) {
                            real = true;
                            for (q = r; q < src.size() && detail::is_digit(src[q]);) ++q;
                        }
                    }
                    std::string digits;
                    for (std::size_t k = p; k < q; ++k)
                        if (src[k] != '_') digits += src[k];
                    if (real) {
                        t.kind = Token::Kind::real;
                        t.real = std::strtod(digits.c_str(), nullptr);
                    } else {
                        t.kind = Token::Kind::integer;
                        const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t.integer);
                        if (ec != std::errc())
                            throw TemplateError("line " + std::to_string(line) + ": integer " + digits + " is too large");
                    }
                    t.text = digits;
                    p = q;
                } else if (detail::is_name_start(c)) {
                    std::size_t q = p;
                    while (q < src.size() && (detail::is_name_start(src[q]) || detail::is_digit(src[q]))) ++q;
                    t.kind = Token::Kind::name;
                    t.text = src.substr(p, q - p);
                    p = q;
                } else if (const auto op = detail::operator_at(src, p); !op.empty()) {
                    t.kind = Token::Kind::op;
                    t.text = std::string(op);
                    if (op == "(" || op == "[" || op == "{") ++open_brackets;
                    if ((op == ")" || op == "]" || op == "}") && open_brackets > 0) --open_brackets;
                    p += op.size();
                } else {
                    throw TemplateError("line " + std::to_string(line) + ": unexpected character '" +
                                        std::string(1, c) + "' in a tag");
                }
                piece.tokens.push_back(std::move(t));
                if (piece.tokens.size() > max_tag_tokens)  // a tree that deep would exhaust the stack when it runs
                    throw TemplateError("line " + std::to_string(piece.line) + ": a tag of more than " +
                                        std::to_string(max_tag_tokens) + " tokens");
            }
            piece.tokens.push_back(Token{Token::Kind::end, {}, 0, 0.0, line});
            pieces.push_back(std::move(piece));
        }
        pos = end;
        if (end_sign == '-') {
            while (pos < src.size() && is_python_space(src[pos])) line += src[pos++] == '\n';
        } else if (end_sign != '+' && kind != '{' && pos < src.size() && src[pos] == '\n') {
            ++pos;  // trim_blocks
            ++line;
        }
        line_starting = pos > 0 && src[pos - 1] == '\n';
    }
    return pieces;
}

}  // namespace tessera::chat::jinja
