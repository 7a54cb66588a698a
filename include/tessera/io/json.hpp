#pragma once
// A strict JSON reader (RFC 8259) for the three JSON files a checkpoint brings: config.json,
// the safetensors header and vocab.json. Own code rather than nlohmann/json because a program
// that includes tessera pays for every header it parses: nlohmann/json alone costs ~170 MB of
// compiler memory and 1.5 s per translation unit, this reader a small fraction of that (see
// docs/architecture.md). It builds a small tree, keeps object members in file order, and
// refuses what a careful reader should: invalid UTF-8, lone surrogates, control characters in
// strings, duplicate keys (which member would win is reader-dependent), numbers a double cannot
// hold, nesting deeper than 256 levels (no stack exhaustion), trailing commas and junk after
// the value. A leading UTF-8 byte-order mark is skipped, as RFC 8259 allows.
#include <algorithm>    // std::sort, std::adjacent_find
#include <charconv>     // std::from_chars
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t, std::int64_t
#include <limits>       // std::numeric_limits
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <system_error> // std::errc
#include <utility>      // std::move
#include <vector>       // std::vector

#include <tessera/core/error.hpp>  // FormatError
#include <tessera/text/utf8.hpp>   // utf8::decode_one, utf8::append

namespace tessera::io {

class JsonValue {
public:
    enum class Kind { null, boolean, number, string, array, object };
    struct Member;

    Kind kind() const noexcept { return kind_; }
    bool is_null() const noexcept { return kind_ == Kind::null; }
    bool is_bool() const noexcept { return kind_ == Kind::boolean; }
    bool is_number() const noexcept { return kind_ == Kind::number; }
    bool is_string() const noexcept { return kind_ == Kind::string; }
    bool is_array() const noexcept { return kind_ == Kind::array; }
    bool is_object() const noexcept { return kind_ == Kind::object; }

    // The value as a bool / a double / its string; meaningful only for that kind.
    bool as_bool() const noexcept { return boolean_; }
    double as_double() const noexcept { return real_; }
    const std::string& as_string() const noexcept { return text_; }
    // A number written without fraction or exponent, when it fits: 1 and -0 do, 1.0 does not.
    std::optional<std::uint64_t> as_unsigned() const noexcept {
        if (!is_number() || !integral_ || (negative_ && magnitude_ != 0)) return std::nullopt;
        return magnitude_;
    }
    std::optional<std::int64_t> as_signed() const noexcept {
        constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        if (!is_number() || !integral_ || magnitude_ > max + (negative_ ? 1 : 0)) return std::nullopt;
        return negative_ ? static_cast<std::int64_t>(0 - magnitude_) : static_cast<std::int64_t>(magnitude_);
    }

    const std::vector<JsonValue>& elements() const noexcept { return elements_; }  // an array's
    const std::vector<Member>& members() const noexcept { return members_; }        // an object's, in file order
    // An object's member named `key`, or null when there is none (or this is not an object).
    const JsonValue* find(std::string_view key) const noexcept;

    // The value in a few words for error messages: a scalar as written (strings quoted and
    // cut at 80 bytes), "an array", "an object".
    std::string describe() const {
        switch (kind_) {
            case Kind::null: return "null";
            case Kind::boolean: return boolean_ ? "true" : "false";
            case Kind::number: return text_;
            case Kind::string: return '"' + text_.substr(0, 80) + (text_.size() > 80 ? "...\"" : "\"");
            case Kind::array: return "an array";
            case Kind::object: return "an object";
        }
        return {};
    }

private:
    friend class JsonParser;
    Kind kind_ = Kind::null;
    bool boolean_ = false;
    bool integral_ = false, negative_ = false;
    std::uint64_t magnitude_ = 0;
    double real_ = 0.0;
    std::string text_;  // a string's content, a number as written
    std::vector<JsonValue> elements_;
    std::vector<Member> members_;
};

struct JsonValue::Member {
    std::string key;
    JsonValue value;
};

inline const JsonValue* JsonValue::find(std::string_view key) const noexcept {
    for (const Member& m : members_)
        if (m.key == key) return &m.value;
    return nullptr;
}

class JsonParser {
public:
    static constexpr std::size_t max_depth = 256;

    // `where` names the document in errors: "<where>: not valid JSON: <what> at byte <offset>".
    JsonParser(std::string_view text, std::string where) : text_(text), where_(std::move(where)) {}

    JsonValue parse() {
        if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
        JsonValue v = value(0);
        skip_space();
        if (pos_ != text_.size()) fail("unexpected text after the value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw FormatError(where_ + ": not valid JSON: " + what + " at byte " + std::to_string(pos_));
    }

    void skip_space() noexcept {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
            ++pos_;
    }

    bool next_is(char c) {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    void expect(char c, const char* what) {
        if (!next_is(c)) fail(pos_ < text_.size() ? std::string("expected ") + what : std::string("unexpected end of input"));
    }

    JsonValue value(std::size_t depth) {
        skip_space();
        if (pos_ == text_.size()) fail("unexpected end of input");
        JsonValue v;
        switch (text_[pos_]) {
            case '{': object(v, depth); break;
            case '[': array(v, depth); break;
            case '"':
                v.kind_ = JsonValue::Kind::string;
                v.text_ = string();
                break;
            case 't': literal(v, "true", JsonValue::Kind::boolean, true); break;
            case 'f': literal(v, "false", JsonValue::Kind::boolean, false); break;
            case 'n': literal(v, "null", JsonValue::Kind::null, false); break;
            default: number(v); break;
        }
        return v;
    }

    void literal(JsonValue& v, std::string_view word, JsonValue::Kind kind, bool b) {
        if (text_.substr(pos_, word.size()) != word) fail("invalid literal");
        pos_ += word.size();
        v.kind_ = kind;
        v.boolean_ = b;
    }

    void nest(std::size_t depth) {
        if (depth + 1 > max_depth) fail("nested deeper than " + std::to_string(max_depth) + " levels");
        ++pos_;  // the opening bracket
    }

    void array(JsonValue& v, std::size_t depth) {
        nest(depth);
        v.kind_ = JsonValue::Kind::array;
        if (next_is(']')) return;
        do v.elements_.push_back(value(depth + 1));
        while (next_is(','));
        expect(']', "',' or ']'");
    }

    void object(JsonValue& v, std::size_t depth) {
        nest(depth);
        v.kind_ = JsonValue::Kind::object;
        if (next_is('}')) return;
        const std::size_t start = pos_ - 1;
        do {
            skip_space();
            if (pos_ == text_.size()) fail("unexpected end of input");
            if (text_[pos_] != '"') fail("expected a string key");
            std::string key = string();
            expect(':', "':'");
            v.members_.push_back({std::move(key), value(depth + 1)});
        } while (next_is(','));
        expect('}', "',' or '}'");
        if (const std::string* key = duplicate_key(v.members_)) {
            pos_ = start;
            fail("the object has the key \"" + key->substr(0, 80) + "\" twice");
        }
    }

    // The first key that occurs twice in an object (by sorting views of the keys), or null.
    static const std::string* duplicate_key(const std::vector<JsonValue::Member>& members) {
        std::vector<std::string_view> keys;
        keys.reserve(members.size());
        for (const JsonValue::Member& m : members) keys.emplace_back(m.key);
        std::sort(keys.begin(), keys.end());
        const auto twice = std::adjacent_find(keys.begin(), keys.end());
        if (twice == keys.end()) return nullptr;
        for (const JsonValue::Member& m : members)
            if (m.key == *twice) return &m.key;
        return nullptr;
    }

    unsigned hex4() {
        unsigned cp = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
            if (pos_ == text_.size()) fail("unterminated string");
            const char c = text_[pos_];
            cp <<= 4;
            if (c >= '0' && c <= '9') cp |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') cp |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') cp |= static_cast<unsigned>(c - 'A' + 10);
            else fail("invalid \\u escape");
        }
        return cp;
    }

    std::string string() {
        ++pos_;  // the opening quote
        std::string out;
        while (true) {
            // Copy the run of plain characters at once.
            std::size_t end = pos_;
            while (end < text_.size() && text_[end] != '"' && text_[end] != '\\' &&
                   static_cast<unsigned char>(text_[end]) >= 0x20)
                ++end;
            const std::string_view run = text_.substr(pos_, end - pos_);
            if (const std::size_t bad = utf8::first_invalid(run); bad != run.size()) {
                pos_ += bad;
                fail("invalid UTF-8 in a string");
            }
            out.append(run);
            pos_ = end;
            if (pos_ == text_.size()) fail("unterminated string");
            const char c = text_[pos_++];
            if (c == '"') return out;
            if (c != '\\') {
                --pos_;
                fail("control character in a string");
            }
            if (pos_ == text_.size()) fail("unterminated string");
            switch (text_[pos_++]) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in a \\u escape");
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (text_.substr(pos_, 2) != "\\u") fail("high surrogate without its low surrogate");
                        pos_ += 2;
                        const unsigned low = hex4();
                        if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate without its low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    }
                    utf8::append(out, static_cast<char32_t>(cp));
                    break;
                }
                default: --pos_; fail("invalid escape in a string");
            }
        }
    }

    void number(JsonValue& v) {
        const std::size_t start = pos_;
        const auto digits = [&] {
            const std::size_t from = pos_;
            while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
            return pos_ - from;
        };
        const bool negative = pos_ < text_.size() && text_[pos_] == '-';
        if (negative) ++pos_;
        const std::size_t int_start = pos_;
        const std::size_t n = digits();
        if (n == 0) {
            pos_ = start;
            fail("expected a value");
        }
        if (n > 1 && text_[int_start] == '0') {
            pos_ = int_start;
            fail("leading zero in a number");
        }
        bool integral = true;
        if (pos_ < text_.size() && text_[pos_] == '.') {
            ++pos_;
            integral = false;
            if (digits() == 0) fail("expected digits after '.'");
        }
        if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
            ++pos_;
            integral = false;
            if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
            if (digits() == 0) fail("expected digits in the exponent");
        }
        const std::string_view written = text_.substr(start, pos_ - start);
        v.kind_ = JsonValue::Kind::number;
        v.negative_ = negative;
        v.text_ = written.substr(0, 80);
        // from_chars is locale-independent and reports both overflow and underflow (1e999,
        // 1e-400) as out of range: such a number in a config is a mistake, refused.
        if (std::from_chars(written.data(), written.data() + written.size(), v.real_).ec != std::errc()) {
            pos_ = start;
            fail("number " + std::string(written.substr(0, 40)) + " is out of the range of a double");
        }
        if (integral) {
            const std::string_view magnitude = text_.substr(int_start, n);
            const auto r = std::from_chars(magnitude.data(), magnitude.data() + magnitude.size(), v.magnitude_);
            v.integral_ = r.ec == std::errc();  // larger integers stay doubles only
        }
    }

    std::string_view text_;
    std::string where_;
    std::size_t pos_ = 0;
};

// Parses `text`; errors name `where`.
inline JsonValue parse_json(std::string_view text, std::string where) { return JsonParser(text, std::move(where)).parse(); }

}  // namespace tessera::io
