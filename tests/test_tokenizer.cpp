// BpeTokenizer and StreamDecoder against reference ids computed by OpenAI's encoder algorithm
// with Python's regex module (tests/data/tokenizer/vectors.jsonl, tools/make_tokenizer_vectors.py).
#include <catch2/catch.hpp>
#include <unistd.h>  // getpid

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tessera/text/bpe_tokenizer.hpp>
#include <tessera/text/stream_decoder.hpp>

#include "child_process.hpp"
#include "skip.hpp"
#include "gpt2_tokenizer.hpp"

using namespace tessera;

namespace {

using test::data_dir;
using test::gpt2;

struct Vector {
    std::string text;
    std::vector<TokenId> ids;
};

const std::vector<Vector>& vectors() {
    static const std::vector<Vector> all = [] {
        std::vector<Vector> v;
        std::ifstream in(data_dir + "/tokenizer/vectors.jsonl");
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            v.push_back({j["text"].get<std::string>(), j["ids"].get<std::vector<TokenId>>()});
        }
        return v;
    }();
    return all;
}

// Deterministic random valid UTF-8: code points from all planes, surrogates excluded, with
// extra weight on ASCII, spaces and apostrophes, which drive the pattern's alternatives.
std::string random_text(std::uint64_t& state, std::size_t max_chars) {
    const auto next = [&] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state >> 33;
    };
    std::string s;
    const std::size_t n = next() % (max_chars + 1);
    for (std::size_t i = 0; i < n; ++i) {
        const auto kind = next() % 8;
        char32_t cp;
        if (kind < 3) {
            cp = static_cast<char32_t>(0x20 + next() % 0x5F);
        } else if (kind == 3) {
            constexpr char32_t specials[] = {U' ', U'\n', U'\t', U'\'', 0x85, 0xA0, 0xFEFF, 0x2028, 0x3000, 0x200D};
            cp = specials[next() % std::size(specials)];
        } else if (kind < 6) {
            cp = static_cast<char32_t>(next() % 0x3000);
        } else {
            cp = static_cast<char32_t>(next() % 0x110000);
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = U'x';
        utf8::append(s, cp);
    }
    return s;
}

bool valid_utf8(const std::string& s) { return utf8::first_invalid(s) == s.size(); }

// The BPE of one piece by the reference algorithm (OpenAI's encoder.py): repeatedly merge the
// lowest-ranked adjacent pair, leftmost first among equals, quadratic time. Symbols are the
// byte-level strings of merges.txt; the result is looked up in vocab.json.
std::vector<TokenId> reference_bpe(const std::string& ascii_piece) {
    static const auto tables = [] {
        std::map<std::pair<std::string, std::string>, int> ranks;
        std::ifstream merges(data_dir + "/gpt2/merges.txt");
        int rank = 0;
        for (std::string line; std::getline(merges, line);) {
            if (line.rfind("#version", 0) == 0 || line.empty()) continue;
            const auto space = line.find(' ');
            ranks[{line.substr(0, space), line.substr(space + 1)}] = rank++;
        }
        std::ifstream vocab_file(data_dir + "/gpt2/vocab.json");
        return std::pair(ranks, nlohmann::json::parse(vocab_file));
    }();
    const auto& [ranks, vocab] = tables;
    std::vector<std::string> symbols;
    for (const char c : ascii_piece) symbols.emplace_back(1, c);  // printable ASCII is its own byte-level char
    for (;;) {
        std::size_t best = symbols.size();
        int best_rank = 0;
        for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
            const auto it = ranks.find({symbols[i], symbols[i + 1]});
            if (it != ranks.end() && (best == symbols.size() || it->second < best_rank)) {
                best = i;
                best_rank = it->second;
            }
        }
        if (best == symbols.size()) break;
        symbols[best] += symbols[best + 1];
        symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    std::vector<TokenId> ids;
    for (const auto& s : symbols) ids.push_back(vocab.at(s).get<TokenId>());
    return ids;
}

}  // namespace

TEST_CASE("The GPT-2 vocabulary loads with its end-of-text token", "[tokenizer]") {
    CHECK(gpt2().vocab_size() == 50257);
    REQUIRE(gpt2().eos_id().has_value());
    CHECK(*gpt2().eos_id() == 50256);
    CHECK_NOTHROW(gpt2().check_vocab_size(50257));
    CHECK_THROWS_WITH(gpt2().check_vocab_size(50304),
                      "the tokenizer has 50257 tokens but the model's vocab_size is 50304: they do not belong together");
}

TEST_CASE("Every reference vector encodes to the reference ids", "[tokenizer]") {
    REQUIRE(vectors().size() >= 2000);
    std::size_t mismatches = 0;
    for (const auto& v : vectors()) {
        const auto ids = gpt2().encode(v.text);
        if (ids != v.ids) {
            ++mismatches;
            UNSCOPED_INFO("mismatch on " << nlohmann::json(v.text).dump());
        }
    }
    CHECK(mismatches == 0);
}

TEST_CASE("decode(encode(s)) == s for the vectors and 10,000 random strings", "[tokenizer]") {
    for (const auto& v : vectors()) REQUIRE(gpt2().decode(gpt2().encode(v.text)) == v.text);
    std::uint64_t state = 42;
    for (int i = 0; i < 10000; ++i) {
        const std::string s = random_text(state, 40);
        INFO(nlohmann::json(s).dump());
        REQUIRE(gpt2().decode(gpt2().encode(s)) == s);
    }
}

TEST_CASE("StreamDecoder emits only whole characters and reproduces the full decode", "[tokenizer][stream]") {
    const auto check = [](const std::vector<TokenId>& ids) {
        StreamDecoder stream(gpt2());
        std::string all;
        for (const TokenId id : ids) {
            const std::string piece = stream.push(id);
            REQUIRE(valid_utf8(piece));
            all += piece;
        }
        const std::string rest = stream.finish();
        REQUIRE(valid_utf8(rest));
        all += rest;
        REQUIRE(all == gpt2().decode(ids));
        REQUIRE(stream.pending_bytes() == 0);
    };
    for (const auto& v : vectors()) check(v.ids);
    // Random ids, most of which do not form valid UTF-8 together.
    std::uint64_t state = 7;
    for (int i = 0; i < 2000; ++i) {
        std::vector<TokenId> ids(1 + i % 12);
        for (auto& id : ids) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            id = static_cast<TokenId>((state >> 33) % 50257);
        }
        check(ids);
    }
}

TEST_CASE("StreamDecoder holds back a character split across tokens", "[tokenizer][stream]") {
    // "👍🏽" is several tokens, none of which is a whole character on its own.
    const auto ids = gpt2().encode("👍🏽!");
    StreamDecoder stream(gpt2());
    std::vector<std::string> pieces;
    for (const TokenId id : ids) pieces.push_back(stream.push(id));
    CHECK(pieces.front().empty());
    std::string joined;
    for (const auto& p : pieces) joined += p;
    CHECK(joined + stream.finish() == "👍🏽!");
    // Cut in the middle: the tail becomes U+FFFD at finish().
    StreamDecoder cut(gpt2());
    CHECK(cut.push(ids[0]).empty());
    CHECK(cut.finish() == "\xEF\xBF\xBD");
}

TEST_CASE("Special tokens are text unless allowed", "[tokenizer]") {
    const std::string text = "Hello<|endoftext|>World";
    const auto plain = gpt2().encode(text);
    CHECK(std::find(plain.begin(), plain.end(), 50256) == plain.end());
    const auto special = gpt2().encode(text, SpecialTokens::allowed);
    CHECK(special == std::vector<TokenId>{15496, 50256, 10603});
    CHECK(gpt2().decode(special) == text);
    CHECK(gpt2().encode("<|endoftext|><|endoftext|>", SpecialTokens::allowed) == std::vector<TokenId>{50256, 50256});
}

TEST_CASE("Pathological inputs finish and round-trip", "[tokenizer][slow]") {
    const std::string carets(1'000'000, '^');
    const auto a = gpt2().encode(carets);
    CHECK(gpt2().decode(a) == carets);
    const std::string spaces(100'000, ' ');
    CHECK(gpt2().decode(gpt2().encode(spaces)) == spaces);
    std::string cjk;
    for (int i = 0; i < 33'000; ++i) cjk += "北";
    CHECK(gpt2().decode(gpt2().encode(cjk)) == cjk);
    const std::string mixed_ws = std::string(50'000, '\n') + "x" + std::string(50'000, '\t');
    CHECK(gpt2().decode(gpt2().encode(mixed_ws)) == mixed_ws);
}

TEST_CASE("Long pieces merge exactly as the reference algorithm", "[tokenizer]") {
    // One pre-token each (letters only, or punctuation only), long enough for many merges to
    // compete, from small alphabets so that merge ranks tie and interleave.
    std::uint64_t state = 7;
    const auto next = [&] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state >> 33;
    };
    for (const std::string alphabet : {"ab", "aeinrst", "^=", "th", "-_=*#"}) {
        for (int round = 0; round < 6; ++round) {
            std::string piece(1 + next() % 600, ' ');
            for (char& c : piece) c = alphabet[next() % alphabet.size()];
            INFO(piece);
            CHECK(gpt2().encode(piece) == reference_bpe(piece));
        }
    }
}

// One pre-token of 8 MB (a run of one character) encodes within about 30 bytes of memory
// per byte of text; the earlier heap of stale candidates and per-character pre-tokenizer
// table took 63-81, i.e. over 500 MB here.
TEST_CASE("Encoding one huge pre-token stays within a memory bound", "[tokenizer][slow]") {
#if defined(__SANITIZE_ADDRESS__)
    test::skip("under AddressSanitizer, whose shadow memory an address-space cap would break");
    return;
#endif
    const std::size_t n = std::size_t{8} << 20;
    const int code = test::exit_code_with_address_space_headroom(n * 30 + (32 << 20), 120, [&] {
        const std::string run(n, 'a');
        const auto ids = gpt2().encode(run);
        return ids.size() == n / 4 && gpt2().decode(ids) == run ? 0 : 1;  // "aaaa" is one token
    });
    CHECK(code == 0);  // 98: out of memory under the cap
}

TEST_CASE("Invalid UTF-8 in the text is an error naming the byte offset", "[tokenizer][errors]") {
    CHECK_THROWS_WITH(gpt2().encode("ab\xFF" "cd"), "invalid UTF-8 at byte offset 2 of the text");
    CHECK_THROWS_WITH(gpt2().encode("x\xC0\xAF"), Catch::Contains("byte offset 1"));         // overlong '/'
    CHECK_THROWS_WITH(gpt2().encode("\xED\xA0\x80"), Catch::Contains("byte offset 0"));      // a surrogate
    CHECK_THROWS_WITH(gpt2().encode("\xE4\xB8"), Catch::Contains("byte offset 0"));          // cut short
    CHECK_THROWS_WITH(gpt2().encode("ok \xF4\x90\x80\x80"), Catch::Contains("byte offset 3"));  // > U+10FFFF
}

TEST_CASE("Decoding an id outside the vocabulary is an error", "[tokenizer][errors]") {
    const std::vector<TokenId> ids{15496, 50257};
    CHECK_THROWS_WITH(gpt2().decode(ids), "token id 50257 is outside the vocabulary (50257 tokens)");
    StreamDecoder stream(gpt2());
    CHECK_THROWS_AS(stream.push(-1), TokenizerError);
}

TEST_CASE("Corrupt tokenizer files are errors naming the file", "[tokenizer][errors]") {
    const std::string vocab = R"({"a": 0, "b": 1})";
    CHECK_THROWS_WITH(BpeTokenizer::from_files(data_dir + "/missing/vocab.json", data_dir + "/gpt2/merges.txt"),
                      Catch::Contains("cannot open ") && Catch::Contains("missing/vocab.json: No such file"));
    CHECK_THROWS_WITH(BpeTokenizer("{\"a\": 0,", "v.json", "a b\n", "m.txt"), Catch::StartsWith("v.json: not valid JSON"));
    // A device that never ends, and a (sparse) file far larger than any tokenizer file.
    CHECK_THROWS_WITH(BpeTokenizer::from_files("/dev/zero", data_dir + "/gpt2/merges.txt"),
                      "cannot read /dev/zero: not a regular file");
    const std::string huge = "/tmp/tessera_huge_vocab_" + std::to_string(::getpid()) + ".json";
    std::ofstream(huge).close();
    std::filesystem::resize_file(huge, std::uintmax_t{65} << 20);
    CHECK_THROWS_WITH(BpeTokenizer::from_files(huge, data_dir + "/gpt2/merges.txt"),
                      huge + " is 68157440 bytes, more than the 67108864 such a file may have");
    std::filesystem::remove(huge);
    CHECK_THROWS_WITH(BpeTokenizer(R"({"a": 0, "b": 0})", "v.json", "a b\n", "m.txt"),
                      Catch::Contains("ids must be distinct"));
    CHECK_THROWS_WITH(BpeTokenizer(R"({"a": "x"})", "v.json", "a b\n", "m.txt"), Catch::Contains("is not an integer"));
    // A vocabulary without the byte-level alphabet cannot encode arbitrary text.
    CHECK_THROWS_WITH(BpeTokenizer(vocab, "v.json", "a b\n", "m.txt"), Catch::Contains("byte-level token for byte 0"));
    // A merges file that names tokens the vocabulary lacks.
    const std::string merges = "#version: 0.2\nĠ t\nq zz\n";
    std::ifstream in(data_dir + "/gpt2/vocab.json");
    const std::string full_vocab((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THROWS_WITH(BpeTokenizer(full_vocab, "v.json", merges, "m.txt"),
                      "m.txt line 3: \"q zz\" uses or makes a token that the vocabulary does not have");
    CHECK_THROWS_WITH(BpeTokenizer(full_vocab, "v.json", "#version: 0.2\nĠt he x\n", "m.txt"),
                      Catch::Contains("m.txt line 2: expected two tokens"));
}

TEST_CASE("UTF-8 repair follows Unicode's maximal-subpart practice", "[utf8]") {
    // The example of the Unicode Standard, section 3.9 (Table 3-8): each maximal subpart of an
    // ill-formed sequence becomes one U+FFFD.
    const std::string bad = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
    const std::string r = "\xEF\xBF\xBD";
    CHECK(utf8::sanitize(bad) == "a" + r + r + r + "b" + r + "c" + r + r + "d");
    CHECK(utf8::sanitize("plain ascii") == "plain ascii");
    CHECK(utf8::sanitize("\xF0\x9F\x91") == r);  // a truncated 4-byte character is one subpart
    CHECK(utf8::first_invalid("ok\xC3") == 2);
}
