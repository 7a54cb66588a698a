// tessera's JSON reader against closed-form expectations, and against nlohmann/json (an
// independent parser) on thousands of generated documents: whatever both accept must read the
// same, and tessera may refuse only what it refuses on purpose.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tessera/io/json.hpp>

#include "json_compare.hpp"

using tessera::FormatError;
using tessera::io::JsonValue;
using tessera::io::parse_json;

namespace {

JsonValue parse(const std::string& text) { return parse_json(text, "doc.json"); }

}  // namespace

TEST_CASE("JSON values read as written", "[json]") {
    const JsonValue v = parse(R"( {"a": [1, -2, 3.5, 1e3, -0, 18446744073709551615, 18446744073709551616],
                                  "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00€", "t": true, "f": false, "n": null, "o": {}} )");
    REQUIRE(v.is_object());
    REQUIRE(v.members().size() == 6);
    CHECK(v.members()[0].key == "a");  // file order
    const auto& a = v.find("a")->elements();
    REQUIRE(a.size() == 7);
    CHECK(a[0].as_unsigned() == 1u);
    CHECK(a[1].as_signed() == -2);
    CHECK_FALSE(a[1].as_unsigned());
    CHECK(a[2].as_double() == 3.5);
    CHECK_FALSE(a[2].as_signed());  // a fraction is not an integer
    CHECK(a[3].as_double() == 1000.0);
    CHECK_FALSE(a[3].as_unsigned());  // nor is an exponent form
    CHECK(a[4].as_unsigned() == 0u);
    CHECK(a[5].as_unsigned() == UINT64_MAX);
    CHECK_FALSE(a[5].as_signed());
    CHECK_FALSE(a[6].as_unsigned());  // 2^64: only a double
    CHECK(a[6].as_double() == 18446744073709551616.0);
    CHECK(v.find("s")->as_string() == "x\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80\xE2\x82\xAC");
    CHECK(v.find("t")->as_bool());
    CHECK_FALSE(v.find("f")->as_bool());
    CHECK(v.find("n")->is_null());
    CHECK(v.find("o")->is_object());
    CHECK(v.find("missing") == nullptr);
    CHECK(parse("\xEF\xBB\xBF 7").as_unsigned() == 7u);  // a byte-order mark is skipped
    CHECK(parse("-9223372036854775808").as_signed() == INT64_MIN);
    CHECK(parse("4.9e-324").as_double() > 0.0);  // the smallest subnormal still reads
    CHECK(parse("\"\\u0000\"").as_string() == std::string(1, '\0'));
}

TEST_CASE("Invalid JSON is refused with the reason and the byte offset", "[json]") {
    const auto refused = [](const std::string& text, const std::string& message) {
        INFO(text);
        CHECK_THROWS_MATCHES(parse(text), FormatError, Catch::Matchers::Message("doc.json: not valid JSON: " + message));
    };
    refused("", "unexpected end of input at byte 0");
    refused("  ", "unexpected end of input at byte 2");
    refused("{\"a\": 1,}", "expected a string key at byte 8");
    refused("[1, 2,]", "expected a value at byte 6");
    refused("[1 2]", "expected ',' or ']' at byte 3");
    refused("{\"a\" 1}", "expected ':' at byte 5");
    refused("{\"a\": 1", "unexpected end of input at byte 7");
    refused("1 2", "unexpected text after the value at byte 2");
    refused("01", "leading zero in a number at byte 0");
    refused("-", "expected a value at byte 0");
    refused("1.", "expected digits after '.' at byte 2");
    refused("1e+", "expected digits in the exponent at byte 3");
    refused("+1", "expected a value at byte 0");
    refused(".5", "expected a value at byte 0");
    refused("NaN", "expected a value at byte 0");
    refused("tru", "invalid literal at byte 0");
    refused("1e999", "number 1e999 is out of the range of a double at byte 0");
    refused("1e-400", "number 1e-400 is out of the range of a double at byte 0");
    refused("\"abc", "unterminated string at byte 4");
    refused("\"a\tb\"", "control character in a string at byte 2");
    refused("\"a\\qb\"", "invalid escape in a string at byte 3");
    refused("\"\\u12\"", "invalid \\u escape at byte 5");
    refused("\"\\u12", "unterminated string at byte 5");
    refused("\"\\udc00\"", "lone low surrogate in a \\u escape at byte 7");
    refused("\"\\ud800x\"", "high surrogate without its low surrogate at byte 7");
    refused("\"\\ud800\\u0041\"", "high surrogate without its low surrogate at byte 13");
    refused("\"a\xC3\"", "invalid UTF-8 in a string at byte 2");
    refused("\"\xED\xA0\x80\"", "invalid UTF-8 in a string at byte 1");  // an encoded surrogate
    refused("{\"a\": 1, \"b\": 2, \"a\": 3}", "the object has the key \"a\" twice at byte 0");
    refused("// comment\n1", "expected a value at byte 0");
}

TEST_CASE("Deep nesting is refused, not a stack overflow", "[json]") {
    CHECK(parse(std::string(256, '[') + std::string(256, ']')).is_array());
    CHECK_THROWS_WITH(parse(std::string(257, '[') + std::string(257, ']')),
                      "doc.json: not valid JSON: nested deeper than 256 levels at byte 256");
    CHECK_THROWS_WITH(parse(std::string(1'000'000, '[')), Catch::Contains("nested deeper than 256 levels"));
    CHECK_THROWS_WITH(parse(std::string(1'000'000, '{')), "doc.json: not valid JSON: expected a string key at byte 1");
}

TEST_CASE("Large objects: every key kept, a duplicate among 50,000 found", "[json]") {
    std::string text = "{";
    for (int i = 0; i < 50'000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
    const JsonValue v = parse(text + "}");
    REQUIRE(v.members().size() == 50'000);
    CHECK(v.members()[49'999].value.as_unsigned() == 49'999u);
    CHECK_THROWS_WITH(parse(text + ",\"k31337\":0}"), Catch::Contains("the object has the key \"k31337\" twice"));
}

// Documents built from a small grammar and then mutated byte by byte: the two parsers must
// agree on everything except what tessera refuses on purpose (nlohmann keeps the last of
// duplicate keys and reads 1e999 as infinity).
TEST_CASE("Generated documents read the same as with nlohmann/json", "[json]") {
    std::mt19937 rng(12345);
    const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const std::vector<std::string> atoms = {"0",       "-0",     "1",    "-17", "3.25",  "1e5",   "2E-3", "1e400", "-1.5e+2",
                                            "true",    "false",  "null", "\"\"", "\"a\"", "\"\\n\"", "\"\\u00e9\"",
                                            "\"\\ud83d\\ude00\"", "\"é\"",  "\"\\u0000\"", "18446744073709551616",
                                            "\"\\ud800\"", "\"\xC3\"", "01", "1.", "tru"};
    std::function<std::string(int)> doc = [&](int depth) -> std::string {
        const std::size_t kind = depth > 3 ? 0 : pick(4);
        if (kind <= 1) return atoms[pick(atoms.size())];
        std::string s = kind == 2 ? "[" : "{";
        const std::size_t n = pick(4);
        for (std::size_t i = 0; i < n; ++i) {
            if (i) s += pick(20) ? "," : ",,";
            if (kind == 3) {  // (appended piece by piece: GCC 12 warns falsely on chained + here)
                s += '"';
                s += static_cast<char>('a' + pick(3));
                s += pick(20) ? "\":" : "\" ";
            }
            if (pick(4)) s += ' ';
            s += doc(depth + 1);
        }
        return s + (kind == 2 ? "]" : "}");
    };
    const std::string noise = "{}[]\",:0123456789.eE+-\\ u\xC3\xA9tn\x01";
    int accepted = 0, refused = 0;
    for (int round = 0; round < 4000; ++round) {
        std::string text = doc(0);
        if (round % 2) {  // mutate: replace, insert or delete a byte
            const std::size_t at = pick(text.size() + 1);
            const std::size_t how = pick(3);
            if (how == 0 && at < text.size()) text[at] = noise[pick(noise.size())];
            if (how == 1) text.insert(at, 1, noise[pick(noise.size())]);
            if (how == 2 && at < text.size()) text.erase(at, 1);
        }
        INFO(text);
        const bool theirs = nlohmann::json::accept(text);
        try {
            const JsonValue ours = parse(text);
            ++accepted;
            REQUIRE(theirs);
            REQUIRE(tessera::testing::same_json(ours, nlohmann::json::parse(text)));
        } catch (const FormatError& e) {
            ++refused;
            if (theirs) REQUIRE(tessera::testing::refused_on_purpose(e.what(), text));
        }
    }
    CHECK(accepted > 1000);  // the grammar exercises both sides
    CHECK(refused > 1000);
}
