// BPE of today's models (text/tokenizer_json.hpp, text/added_tokens.hpp, the GGUF pre-tokenizer
// names of models/open_tokenizer.hpp) on tests/data/tokenizer_json: tokenizer.json files in the
// layouts of GPT-2, Llama 3, Qwen2, SmolLM (byte-level) and of Llama 2 / Mistral (SentencePiece-
// style, converted from tests/data/sentencepiece's model) (tools/make_tokenizer_json_fixtures.py).
// Their ids against Hugging Face's JavaScript tokenizers on 10,000 generated texts per style are
// the ctest tests "tokenizer_reference: *" (tests/tokenizers/compare.mjs); the expected ids below
// were read off that reference for the same files, and the behaviours it does not share (Rust
// tokenizers' single_word) are stated where they are tested.
#include <catch2/catch.hpp>

#include <unistd.h>  // getpid

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <tessera/io/gguf_writer.hpp>
#include <tessera/models/gguf_writing.hpp>
#include <tessera/models/open_tokenizer.hpp>
#include <tessera/text/bpe_trainer.hpp>
#include <tessera/text/normalization.hpp>
#include <tessera/text/tokenizer_json.hpp>

#include "gpt2_tokenizer.hpp"
#include "skip.hpp"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

const std::string fixtures = test::data_dir + "/tokenizer_json";

const BpeTokenizer& style(const std::string& name) {
    static std::map<std::string, BpeTokenizer> loaded;
    if (!loaded.contains(name)) loaded.emplace(name, open_tokenizer(fixtures + "/" + name));
    return loaded.at(name);
}

TokenId id_of(const BpeTokenizer& t, std::string_view token) {
    const auto id = t.token_id(token);
    REQUIRE(id);
    return *id;
}

// A tokenizer.json with the byte alphabet, "a b" -> "ab", and the given added tokens / fields.
std::string small_json(const std::string& added, const std::string& extra = R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})") {
    std::string vocab;
    for (int b = 0; b < 256; ++b) {
        std::string ch;
        utf8::append(ch, byte_level::byte_to_char[static_cast<unsigned>(b)]);
        if (b) vocab += ',';
        vocab += '"';
        if (ch == "\"" || ch == "\\") vocab += '\\';
        vocab += ch;
        vocab += "\":";
        vocab += std::to_string(b);
    }
    vocab += R"(,"ab":256)";
    return R"({"added_tokens": [)" + added + R"(], "normalizer": null, )" + extra +
           R"(, "model": {"type": "BPE", "vocab": {)" + vocab + R"(}, "merges": ["a b"]}})";
}

std::string error_of(const std::string& json, const std::string& config = {}) {
    try {
        (void)tokenizer_from_json(json, "tokenizer.json", config, "tokenizer_config.json");
    } catch (const FormatError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("tokenizer.json: each style loads with its pre-tokenizer, BOS and stop ids", "[tokenizer][tokenizer_json]") {
    const BpeTokenizer& llama3 = style("llama3");
    CHECK(llama3.options().pre == PreTokenizer::llama3);
    CHECK(llama3.options().ignore_merges);
    CHECK(llama3.prompt_start() == id_of(llama3, "<|begin_of_text|>"));
    CHECK(llama3.eos_id() == id_of(llama3, "<|eot_id|>"));
    // EOS, then the end-of-turn tokens the vocabulary has, in its order.
    CHECK(llama3.stop_ids() == std::vector<TokenId>{id_of(llama3, "<|eot_id|>"), id_of(llama3, "<|end_of_text|>"), id_of(llama3, "<|eom_id|>")});

    const BpeTokenizer& qwen2 = style("qwen2");
    CHECK(qwen2.options().pre == PreTokenizer::qwen2);
    CHECK_FALSE(qwen2.prompt_start());
    CHECK(qwen2.stop_ids() == std::vector<TokenId>{id_of(qwen2, "<|im_end|>"), id_of(qwen2, "<|endoftext|>")});

    const BpeTokenizer& smollm = style("smollm");
    CHECK(smollm.options().pre == PreTokenizer::smollm);
    CHECK(id_of(smollm, "<|endoftext|>") == 0);
    CHECK(id_of(smollm, "<|im_end|>") == 2);
    CHECK(smollm.token_text(3) == "Ā");  // the byte alphabet (byte 0 first) after the three specials
    CHECK(style("gpt2").options().pre == PreTokenizer::gpt2);
    CHECK(style("gpt2").vocab_size() == 1760);
    // A model whose vocabulary transformers padded (Qwen's) belongs with its tokenizer.json; a
    // smaller one does not, and vocab.json + merges.txt stay exact.
    CHECK_NOTHROW(qwen2.check_vocab_size(qwen2.vocab_size()));
    CHECK_NOTHROW(qwen2.check_vocab_size(qwen2.vocab_size() + 271));
    CHECK_THROWS_WITH(qwen2.check_vocab_size(qwen2.vocab_size() - 1), Catch::Contains("do not belong together"));
    CHECK_THROWS_WITH(qwen2.token_bytes(static_cast<TokenId>(qwen2.vocab_size())), Catch::Contains("outside the vocabulary"));
    CHECK_THROWS_AS(test::gpt2().check_vocab_size(50304), TokenizerError);
}

TEST_CASE("tokenizer.json: the reference's ids for each style's pre-tokenizer", "[tokenizer][tokenizer_json]") {
    // Read off @huggingface/tokenizers 0.2.0 for these files (tests/tokenizers/compare.mjs).
    CHECK(style("smollm").encode("a  1") == std::vector<TokenId>{100, 301, 52});  // the digit alone, "  " whole
    CHECK(style("smollm").encode("a  x") == std::vector<TokenId>{100, 35, 1169});
    CHECK(style("smollm").encode("a 1") == std::vector<TokenId>{100, 35, 52});
    // Llama 3's pattern: digits in threes, contractions in any case, one character before letters.
    const BpeTokenizer& llama3 = style("llama3");
    const auto pieces = [&](std::string_view text) {
        std::vector<std::string> out;
        pretokenize(PreTokenizer::llama3, text, [&](std::string_view p) { out.emplace_back(p); });
        return out;
    };
    CHECK(pieces("1234567") == std::vector<std::string>{"123", "456", "7"});
    CHECK(pieces("WE'RE here") == std::vector<std::string>{"WE", "'RE", " here"});
    CHECK(pieces("(hello)\n\n  world") == std::vector<std::string>{"(hello", ")\n\n", " ", " world"});
    CHECK(pieces("x  \n  y") == std::vector<std::string>{"x", "  \n", " ", " y"});
    CHECK(llama3.decode(llama3.encode("WE'RE here 1234567\n")) == "WE'RE here 1234567\n");
    std::vector<std::string> qwen;
    pretokenize(PreTokenizer::qwen2, "1234", [&](std::string_view p) { qwen.emplace_back(p); });
    CHECK(qwen == std::vector<std::string>{"1", "2", "3", "4"});
}

TEST_CASE("tokenizer.json: control tokens only where allowed, other added tokens always", "[tokenizer][tokenizer_json]") {
    const BpeTokenizer& qwen2 = style("qwen2");
    const TokenId im_end = id_of(qwen2, "<|im_end|>"), tool_call = id_of(qwen2, "<tool_call>");
    const std::string text = "hi<|im_end|><tool_call>";
    const std::vector<TokenId> as_text = qwen2.encode(text);
    CHECK(std::find(as_text.begin(), as_text.end(), im_end) == as_text.end());  // a user cannot end their turn
    CHECK(as_text.back() == tool_call);                                        // a non-special added token
    CHECK(qwen2.decode(as_text) == text);
    const std::vector<TokenId> allowed = qwen2.encode(text, SpecialTokens::allowed);
    std::vector<TokenId> expected = qwen2.encode("hi");
    expected.insert(expected.end(), {im_end, tool_call});
    CHECK(allowed == expected);
    // Longest first where added tokens overlap: "<|im_end|>" is matched, not a shorter prefix.
    CHECK(qwen2.encode("<|im_start|><|im_end|>", SpecialTokens::allowed) ==
          std::vector<TokenId>{id_of(qwen2, "<|im_start|>"), im_end});
}

TEST_CASE("tokenizer.json: lstrip and rstrip take the white space beside a token", "[tokenizer][tokenizer_json]") {
    const BpeTokenizer& gpt2 = style("gpt2");
    // Read off the reference: "<mask>" (special) has lstrip, "[SEP]" (special) rstrip.
    constexpr auto allowed = SpecialTokens::allowed;
    CHECK(gpt2.encode("a  <mask>", allowed) == std::vector<TokenId>{97, 1757});
    CHECK(gpt2.encode("x [SEP]  y", allowed) == std::vector<TokenId>{120, 32, 1758, 121});
    CHECK(gpt2.encode("a\u3000<mask>", allowed) == std::vector<TokenId>{97, 1757});  // any White_Space character
    CHECK(gpt2.encode("a  <mask>") != gpt2.encode("a  <mask>", allowed));  // as text: no stripping, no token
}

TEST_CASE("tokenizer.json: single_word matches only between non-word characters", "[tokenizer][tokenizer_json]") {
    // Rust tokenizers' rule (a word character: alphanumeric or '_'); tokenizers.js ignores the
    // flag, so this is checked here against the rule itself.
    const BpeTokenizer t = tokenizer_from_json(
        small_json(R"({"id": 257, "content": "word", "special": false, "single_word": true})"), "tokenizer.json");
    const std::vector<TokenId> spaced = t.encode("a word.");
    CHECK(std::count(spaced.begin(), spaced.end(), 257) == 1);
    const std::vector<TokenId> longer = t.encode("words");
    CHECK(std::find(longer.begin(), longer.end(), 257) == longer.end());
    const std::vector<TokenId> under = t.encode("_word");
    CHECK(std::find(under.begin(), under.end(), 257) == under.end());
    const std::vector<TokenId> alone = t.encode("word");
    CHECK(alone == std::vector<TokenId>{257});
}

TEST_CASE("tokenizer.json: what is not supported is refused naming it", "[tokenizer][tokenizer_json]") {
    CHECK(error_of(small_json("")) == "no error");
    CHECK_THAT(error_of(small_json("", R"("pre_tokenizer": {"type": "Whitespace"})")), Catch::Contains("pre_tokenizer is a Whitespace"));
    CHECK_THAT(error_of(small_json("", R"("pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "split": true})")),
               Catch::Contains("pre_tokenizer.split is true"));
    CHECK_THAT(error_of(small_json("", R"("pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})")),
               Catch::Contains("pattern.Regex \\s+ is not a pattern supported here"));
    CHECK_THAT(error_of(small_json("", R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})")),
               Catch::Contains("pre_tokenizer.add_prefix_space is true"));
    std::string nfc = small_json("");
    nfc.replace(nfc.find(R"("normalizer": null)"), 18, R"("normalizer": {"type": "NFKC"})");
    CHECK_THAT(error_of(nfc), Catch::Contains("normalizer \"NFKC\" is not supported"));
    std::string wordpiece = small_json("");
    wordpiece.replace(wordpiece.find(R"("type": "BPE")"), 13, R"("type": "WordPiece")");
    CHECK_THAT(error_of(wordpiece), Catch::Contains("model.type is WordPiece"));
    CHECK_THAT(error_of(small_json(""), R"({"eos_token": "</s>"})"), Catch::Contains("eos_token names \"</s>\", which is not in"));
    CHECK_THAT(error_of(small_json(""), R"({"eos_token": "ab"})"), Catch::Contains("is the ordinary token \"ab\""));
    CHECK_THAT(error_of(small_json(R"({"id": 300, "content": "<x>", "special": true})")), Catch::Contains("ids must be distinct and below"));
    CHECK_THAT(error_of(small_json(R"({"id": 257, "content": "<x>", "special": true})",
                                   R"("pre_tokenizer": {"type": "ByteLevel"}, "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "<x>"}}]})")),
               Catch::Contains("puts a special token after the text"));
}

TEST_CASE("GGUF byte-level tokenizers: the pre-tokenizer by name, types, stop ids, round trip", "[tokenizer][tokenizer_json][gguf]") {
    const fs::path path = fs::temp_directory_path() / ("tessera_tokenizer_" + std::to_string(::getpid()) + ".gguf");
    // The file of `t`, with "llama-bpe" renamed to `pre` (9 letters) or EOS set to `eos`.
    const auto write = [&](const BpeTokenizer& t, const std::string& pre = {}, std::optional<std::uint32_t> eos = {}) {
        io::GgufWriter w;
        w.add_string("general.architecture", "llama");
        add_bpe_tokenizer(w, t);
        w.write(path);
        std::string bytes;
        {
            std::ifstream in(path, std::ios::binary);
            bytes.assign(std::istreambuf_iterator<char>(in), {});
        }
        if (!pre.empty()) bytes.replace(bytes.find("llama-bpe"), pre.size(), pre);
        if (eos) {
            const std::string key = "tokenizer.ggml.eos_token_id";
            std::memcpy(bytes.data() + bytes.find(key) + key.size() + 4, &*eos, 4);  // after the u32 type
        }
        std::ofstream(path, std::ios::binary) << bytes;
    };
    for (const std::string name : {"gpt2", "llama3", "qwen2", "smollm"}) {
        INFO(name);
        const BpeTokenizer& original = style(name);
        write(original);
        const BpeTokenizer read = tokenizer_from_gguf(io::GgufFile(path));
        CHECK(read.options().pre == original.options().pre);
        CHECK(read.options().ignore_merges == original.options().ignore_merges);
        CHECK(read.stop_ids() == original.stop_ids());
        CHECK(read.prompt_start() == original.prompt_start());
        const std::string text = "Hello <|im_end|> 12345 WE'LL 北京 👩‍👩‍👧‍👦\n\n  x<tool_call>";
        CHECK(read.encode(text) == original.encode(text));
        CHECK(read.encode(text, SpecialTokens::allowed) == original.encode(text, SpecialTokens::allowed));
    }
    {  // a model padded past its tokenizer (Qwen's): "[PAD<id>]" tokens of type unused, as llama.cpp's converter writes
        const BpeTokenizer& qwen2 = style("qwen2");
        io::GgufWriter w;
        w.add_string("general.architecture", "qwen2");
        add_bpe_tokenizer(w, qwen2, qwen2.vocab_size() + 10);
        w.write(path);
        const BpeTokenizer padded = tokenizer_from_gguf(io::GgufFile(path));
        const auto first_pad = static_cast<TokenId>(qwen2.vocab_size());
        CHECK(padded.vocab_size() == qwen2.vocab_size() + 10);
        CHECK(padded.token_type(first_pad) == TokenType::unused);
        CHECK(padded.token_bytes(first_pad).empty());
        CHECK(padded.token_text(first_pad) == "[PAD" + std::to_string(first_pad) + "]");
        CHECK(padded.encode("Hello <|im_end|> 123", SpecialTokens::allowed) == qwen2.encode("Hello <|im_end|> 123", SpecialTokens::allowed));
    }
    write(style("llama3"), "falcon-h2");
    CHECK_THROWS_WITH(tokenizer_from_gguf(io::GgufFile(path)), Catch::Contains("tokenizer.ggml.pre is 'falcon-h2', a pre-tokenizer not supported"));
    write(style("llama3"), {}, 5000);
    CHECK_THROWS_WITH(tokenizer_from_gguf(io::GgufFile(path)), Catch::Contains("EOS id 5000 is outside the vocabulary"));
    write(style("llama3"), {}, 300);
    CHECK_THROWS_WITH(tokenizer_from_gguf(io::GgufFile(path)), Catch::Contains("is the ordinary token"));
    fs::remove(path);
}

TEST_CASE("NFC: Unicode's NormalizationTest.txt, every line", "[tokenizer][tokenizer_json][nfc]") {
    // Debian's unicode-data, the version the tables were generated from (scripts/install-deps.sh).
    const char* path = "/usr/share/unicode/NormalizationTest.txt.bz2";
    if (!fs::exists(path)) {
        test::skip(std::string("no ") + path + " (Debian package unicode-data)");
        return;
    }
    FILE* pipe = ::popen((std::string("bzcat ") + path).c_str(), "r");
    REQUIRE(pipe);
    const auto field = [](std::string_view f) {
        std::string out;
        for (std::size_t at = 0; at < f.size();) {
            const std::size_t end = std::min(f.find(' ', at), f.size());
            if (end > at) utf8::append(out, static_cast<char32_t>(std::stoul(std::string(f.substr(at, end - at)), nullptr, 16)));
            at = end + 1;
        }
        return out;
    };
    std::size_t lines = 0, wrong = 0;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe)) {
        const std::string_view line(buffer);
        if (line.empty() || line[0] == '#' || line[0] == '@' || line[0] == '\n') continue;
        std::string c[5];
        std::size_t at = 0;
        for (std::string& column : c) {
            const std::size_t semi = line.find(';', at);
            column = field(line.substr(at, semi - at));
            at = semi + 1;
        }
        ++lines;
        // The conformance conditions for NFC: c2 == NFC(c1) == NFC(c2) == NFC(c3), c4 == NFC(c4) == NFC(c5).
        using unicode::nfc;
        if (nfc(c[0]) != c[1] || nfc(c[1]) != c[1] || nfc(c[2]) != c[1] || nfc(c[3]) != c[3] || nfc(c[4]) != c[3]) {
            if (++wrong <= 5) UNSCOPED_INFO("wrong: " << line);
        }
    }
    ::pclose(pipe);
    CHECK(lines > 18000);
    CHECK(wrong == 0);
}

TEST_CASE("tokenizer.json: an NFC normalizer encodes any form of a text as its NFC form", "[tokenizer][tokenizer_json][nfc]") {
    const BpeTokenizer& qwen2 = style("qwen2");
    CHECK(qwen2.options().nfc);
    CHECK(qwen2.encode("e\u0301 A\u030A \u212B \u1100\u1161\u11A8") == qwen2.encode("\u00E9 \u00C5 \u00C5 \uAC01"));
    CHECK(qwen2.encode("a\u0316\u0300<|im_end|>e\u0301", SpecialTokens::allowed) ==
          qwen2.encode("a\u0300\u0316<|im_end|>\u00E9", SpecialTokens::allowed));
    CHECK(qwen2.decode(qwen2.encode("e\u0301")) == "\u00E9");
    CHECK_FALSE(style("llama3").options().nfc);  // no normalizer: the marks stay as they are
    CHECK(style("llama3").decode(style("llama3").encode("e\u0301")) == "e\u0301");
}

namespace {

// BPE training by the book: recount every pair of every word before each merge (quadratic, for
// small corpora only), the most frequent first, ties to the smallest (left id, right id).
std::vector<std::pair<std::string, std::string>> naive_bpe(const std::vector<std::string_view>& texts, std::size_t merges) {
    std::map<std::string, std::int64_t> counts;
    for (const std::string_view t : texts) pretokenize(t, [&](std::string_view p) { ++counts[std::string(p)]; });
    std::vector<std::string> text;
    for (unsigned b = 0; b < 256; ++b) {
        std::string ch;
        utf8::append(ch, byte_level::byte_to_char[b]);
        text.push_back(ch);
    }
    std::vector<std::pair<std::vector<int>, std::int64_t>> words;
    for (const auto& [p, n] : counts) {
        std::vector<int> s;
        for (const char c : p) s.push_back(static_cast<unsigned char>(c));
        words.emplace_back(s, n);
    }
    std::vector<std::pair<std::string, std::string>> out;
    while (out.size() < merges) {
        std::map<std::pair<int, int>, std::int64_t> pairs;
        for (const auto& [s, n] : words)
            for (std::size_t i = 0; i + 1 < s.size(); ++i) pairs[{s[i], s[i + 1]}] += n;
        std::pair<int, int> best{-1, -1};
        std::int64_t most = 1;  // a pair must occur twice
        for (const auto& [p, n] : pairs)
            if (n > most) most = n, best = p;
        if (best.first < 0) break;
        out.emplace_back(text[static_cast<std::size_t>(best.first)], text[static_cast<std::size_t>(best.second)]);
        const std::string joined = text[static_cast<std::size_t>(best.first)] + text[static_cast<std::size_t>(best.second)];
        int id = static_cast<int>(std::find(text.begin(), text.end(), joined) - text.begin());
        if (id == static_cast<int>(text.size())) text.push_back(joined);
        for (auto& [s, n] : words) {
            std::vector<int> next;
            for (std::size_t i = 0; i < s.size(); ++i) {
                if (i + 1 < s.size() && s[i] == best.first && s[i + 1] == best.second) {
                    next.push_back(id);
                    ++i;
                } else {
                    next.push_back(s[i]);
                }
            }
            s = next;
        }
    }
    return out;
}

}  // namespace

TEST_CASE("BPE trainer: the merges of training by the book, incrementally counted", "[tokenizer][bpe_trainer]") {
    // Wikipedia's example first, counted by hand: "aaabdaaabac" has "aa" 4 times; then "aa a" and
    // "a b" twice each, the tie going to the smaller ids ("a" 97 < "aa" 256); then "aa ab" twice.
    BpeTrainingOptions options;
    options.vocab_size = 256 + 3;
    const TrainedBpe classic = train_bpe({"aaabdaaabac"}, options);
    REQUIRE(classic.merges.size() == 3);
    CHECK(classic.merges[0] == std::pair<std::string, std::string>{"a", "a"});
    CHECK(classic.merges[1] == std::pair<std::string, std::string>{"a", "b"});
    CHECK(classic.merges[2] == std::pair<std::string, std::string>{"aa", "ab"});
    // Then generated corpora, against the quadratic recount.
    std::uint64_t state = 12345;
    const auto next = [&] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
    for (int round = 0; round < 20; ++round) {
        std::vector<std::string> docs;
        for (int d = 0; d < 30; ++d) {
            std::string s;
            const char* alphabet[] = {"a", "b", "c", " ", "ab", "é", "中", "\n", "1", "'s", "aa"};
            for (std::uint64_t k = next() % 40; k > 0; --k) s += alphabet[next() % 11];
            docs.push_back(s);
        }
        const std::vector<std::string_view> views(docs.begin(), docs.end());
        options.vocab_size = 256 + 60;
        options.threads = 1 + static_cast<unsigned>(round % 2);
        const TrainedBpe trained = train_bpe(views, options);
        INFO("round " << round);
        CHECK(trained.merges == naive_bpe(views, 60));
        // The result loads, and encodes its corpus to fewer tokens than bytes.
        const BpeTokenizer t(trained.vocab, {}, trained.merges, {}, "trained");
        std::size_t bytes = 0, tokens = 0;
        for (const std::string& d : docs) bytes += d.size(), tokens += t.encode(d).size();
        CHECK(tokens < bytes);
    }
    options.vocab_size = 100;
    CHECK_THROWS_WITH(train_bpe({"x"}, options), Catch::Contains("cannot hold the 0 special tokens and the 256 bytes"));
}

TEST_CASE("tokenizer.json, SentencePiece-style: the ids of sentencepiece itself, both prefix schemes", "[tokenizer][tokenizer_json]") {
    // The Llama 2 and Mistral layouts hold tests/data/sentencepiece's model as transformers
    // converts it; on text without control tokens both must give sentencepiece's own ids.
    for (const char* name : {"llama2", "mistral"}) {
        const BpeTokenizer& t = style(name);
        CHECK(t.options().alphabet == BpeTokenizer::Alphabet::characters);
        CHECK(t.prompt_start() == 1);
        CHECK(t.eos_id() == 2);
        CHECK(t.strips_leading_space());
    }
    const auto spm = open_any_tokenizer(test::data_dir + "/sentencepiece/tokenizer.gguf");
    for (const std::string text : {"Hello, world!", "two  spaces", " leading", "naïve café", "日本語のテキスト", "emoji 🤗 and 👍🏽",
                                   "It's 2024: 3.14159", "\n", "a\nb\n\nc", "\ttab", "UPPER lower"}) {
        INFO(text);
        CHECK(style("llama2").encode(text) == spm->encode(text));
        // Metaspace puts no ▁ before a text that starts with a space (sentencepiece does).
        if (text[0] != ' ') CHECK(style("mistral").encode(text) == spm->encode(text));
        CHECK(style("llama2").decode(style("llama2").encode(text)) == text);
    }
    CHECK(style("mistral").encode(" leading") == style("llama2").encode("leading"));
    // Around control tokens: Prepend gives every part a ▁ (as llama.cpp and sentencepiece's GGUF
    // reader here), Metaspace's "first" only the part at the start.
    CHECK(style("llama2").encode("a</s>b", SpecialTokens::allowed) == spm->encode("a</s>b", SpecialTokens::allowed));
    const std::vector<TokenId> first = style("mistral").encode("a</s>b", SpecialTokens::allowed);
    REQUIRE(first.size() >= 3);
    CHECK(first[first.size() - 2] == 2);
    CHECK(first.back() == *style("mistral").token_id("b"));
}
