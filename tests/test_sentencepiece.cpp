// SentencePiece's BPE (text/sentencepiece_tokenizer.hpp) against Google's sentencepiece itself:
// tests/data/sentencepiece holds a BPE vocabulary it trained on Debian's fortunes, as llama.cpp's
// converter writes one into GGUF, and the ids sentencepiece 0.1.97 gives for 87 texts (ASCII,
// whitespace runs, digits, accents, CJK, emoji through byte fallback, held-out fortunes):
// tools/make_sentencepiece_fixture.py. Every id must match; decoding gives the text back.
#include <catch2/catch.hpp>

#include <unistd.h>  // getpid

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tessera/models/open_tokenizer.hpp>
#include <tessera/text/stream_decoder.hpp>

#include "gpt2_tokenizer.hpp"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

const std::string fixture = test::data_dir + "/sentencepiece";

const SentencePieceTokenizer& tokenizer() {
    static const SentencePieceTokenizer t = sentencepiece_from_gguf(io::GgufFile(fixture + "/tokenizer.gguf"));
    return t;
}

struct Vector {
    std::string text;
    std::vector<TokenId> ids;
};

std::vector<Vector> vectors() {
    std::ifstream in(fixture + "/vectors.jsonl");
    std::vector<Vector> out;
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        out.push_back({j["text"].get<std::string>(), j["ids"].get<std::vector<TokenId>>()});
    }
    return out;
}

}  // namespace

TEST_CASE("SentencePiece BPE gives sentencepiece's ids and decodes back to the text", "[tokenizer][sentencepiece]") {
    const auto vs = vectors();
    REQUIRE(vs.size() == 87);
    CHECK(tokenizer().vocab_size() == 1000);
    for (const Vector& v : vs) {
        INFO(v.text);
        CHECK(tokenizer().encode(v.text) == v.ids);
        CHECK(tokenizer().decode(v.ids) == v.text);
    }
}

TEST_CASE("SentencePiece BPE: control tokens only where allowed, and streaming keeps characters whole", "[tokenizer][sentencepiece]") {
    const SentencePieceTokenizer& t = tokenizer();
    REQUIRE(t.bos_id() == 1);
    REQUIRE(t.eos_id() == 2);
    const std::string text = "<s>Hi there</s>";
    const auto plain = t.encode(text);
    CHECK(std::find(plain.begin(), plain.end(), 1) == plain.end());  // the text "<s>" stays text
    CHECK(std::find(plain.begin(), plain.end(), 2) == plain.end());
    const auto special = t.encode(text, SpecialTokens::allowed);
    REQUIRE(special.size() >= 3);
    CHECK(special.front() == 1);
    CHECK(special.back() == 2);
    CHECK(t.decode(special) == "Hi there");  // control tokens decode to nothing
    // Each text part after a control token gets the dummy prefix, as llama.cpp encodes it.
    std::vector<TokenId> parts = t.encode("a");
    parts.push_back(2);
    for (const TokenId id : t.encode("b")) parts.push_back(id);
    CHECK(t.encode("a</s>b", SpecialTokens::allowed) == parts);
    // The unknown piece's text too, as llama.cpp's parse_special matches it (and only then).
    REQUIRE(t.options().unknown == 0);
    const auto unknown = t.encode("<unk>", SpecialTokens::allowed);
    CHECK(unknown == std::vector<TokenId>{0});
    CHECK(t.encode("<unk>").size() > 1);
    // A prompt starts with BOS, as the file's add_bos_token asks (generation encodes prompts so).
    auto prompt = t.encode("Hi there");
    prompt.insert(prompt.begin(), 1);
    CHECK(t.encode_prompt("Hi there") == prompt);
    // An emoji is no piece: four <0xNN> byte tokens, streamed as one character.
    const auto ids = t.encode("ok 🤗!");
    StreamDecoder stream(t);
    std::string streamed;
    for (const TokenId id : ids) {
        const std::string piece = stream.push(id);
        CHECK(utf8::first_invalid(piece) == piece.size());
        streamed += piece;
    }
    streamed += stream.finish();
    CHECK(streamed == " ok 🤗!");  // the stream keeps the dummy prefix's space; decode drops it
    CHECK(t.decode(ids) == "ok 🤗!");
    CHECK_THROWS_AS(t.encode(std::string("bad \xff byte")), TokenizerError);
    CHECK_THROWS_WITH(t.token_bytes(1000), Catch::Contains("outside the vocabulary (1000 tokens)"));
}

TEST_CASE("open_any_tokenizer picks the kind a file holds", "[tokenizer][sentencepiece]") {
    const auto spm = open_any_tokenizer(fixture + "/tokenizer.gguf");
    CHECK(dynamic_cast<const SentencePieceTokenizer*>(spm.get()) != nullptr);
    CHECK(spm->encode("Hello, world!") == vectors()[0].ids);
    const auto bpe = open_any_tokenizer(test::data_dir + "/gpt2");
    CHECK(dynamic_cast<const BpeTokenizer*>(bpe.get()) != nullptr);
    CHECK_THROWS_WITH(open_tokenizer(fixture + "/tokenizer.gguf"), Catch::Contains("open_any_tokenizer"));
}

TEST_CASE("SentencePiece BPE: inconsistent metadata is refused naming it", "[tokenizer][sentencepiece][errors]") {
    const std::vector<std::string> pieces{"<unk>", "a", "b"};
    const std::vector<float> scores{0, -1, -2};
    const std::vector<std::int32_t> types{2, 1, 1}, bad_types{2, 1, 9};
    CHECK_THROWS_WITH(SentencePieceTokenizer(pieces, std::vector<float>{0}, types, {}, "f.gguf"),
                      Catch::Contains("f.gguf: 3 tokens but 1 scores"));
    CHECK_THROWS_WITH(SentencePieceTokenizer(pieces, scores, bad_types, {}, "f.gguf"), Catch::Contains("token 2 has type 9"));
    SentencePieceTokenizer::Options far;
    far.eos = 7;
    CHECK_THROWS_WITH(SentencePieceTokenizer(pieces, scores, types, far, "f.gguf"), Catch::Contains("eos token id 7 is outside"));
    // No byte tokens and no unknown id: a character no piece covers is an error, not a guess.
    const SentencePieceTokenizer small(pieces, scores, std::vector<std::int32_t>{1, 1, 1}, {}, "f.gguf");
    CHECK_THROWS_WITH(small.encode("z"), Catch::Contains("neither as a piece, as bytes, nor as an unknown token"));
}

TEST_CASE("SentencePiece's tokenizer.model gives the same tokenizer as its GGUF metadata", "[tokenizer][sentencepiece]") {
    // tokenizer.model is sentencepiece's own file of the fixture; the vectors are its ids.
    const SentencePieceTokenizer t = sentencepiece_from_model_file(fixture + "/tokenizer.model");
    CHECK(t.vocab_size() == 1000);
    CHECK(t.bos_id() == 1);
    CHECK(t.eos_id() == 2);
    CHECK(t.prompt_start() == 1);
    for (const Vector& v : vectors()) {
        INFO(v.text);
        CHECK(t.encode(v.text) == v.ids);
    }
    for (TokenId id = 0; id < 1000; ++id) CHECK(t.token_bytes(id) == tokenizer().token_bytes(id));
    // A directory with tokenizer.model: open_any_tokenizer reads it.
    const fs::path dir = fs::temp_directory_path() / ("tessera_spm_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(fixture + "/tokenizer.model", dir / "tokenizer.model");
    std::ofstream(dir / "tokenizer_config.json") << R"({"add_bos_token": false})";
    const auto from_dir = open_any_tokenizer(dir);
    CHECK(dynamic_cast<const SentencePieceTokenizer*>(from_dir.get()) != nullptr);
    CHECK(from_dir->encode("Hello, world!") == vectors()[0].ids);
    CHECK_FALSE(from_dir->prompt_start());  // tokenizer_config.json's add_bos_token
    fs::remove_all(dir);
}

namespace {

// Protobuf's wire format, enough to write small ModelProtos.
std::string varint(std::uint64_t v) {
    std::string out;
    do {
        out += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return out;
}
std::string field_bytes(unsigned number, const std::string& bytes) { return varint(number << 3 | 2) + varint(bytes.size()) + bytes; }
std::string field_varint(unsigned number, std::uint64_t v) { return varint(number << 3) + varint(v); }
std::string piece(const std::string& text, int type) {
    const float score = -1;
    std::string s(4, '\0');
    std::memcpy(s.data(), &score, 4);
    return field_bytes(1, field_bytes(1, text) + varint(2 << 3 | 5) + s + field_varint(3, static_cast<std::uint64_t>(type)));
}
// A BPE model with Llama's settings, and `trainer` / `normalizer` fields added.
std::string model_proto(const std::string& trainer = {}, const std::string& normalizer = {}) {
    return piece("<unk>", 2) + piece("<s>", 3) + piece("</s>", 3) + piece("\xE2\x96\x81", 1) + piece("a", 1) +
           field_bytes(2, field_varint(3, 2) + trainer) +
           field_bytes(3, field_bytes(1, "identity") + field_varint(4, 0) + normalizer);
}
std::string error_of_model(const std::string& bytes) {
    try {
        (void)sentencepiece_from_model(bytes, "tokenizer.model");
    } catch (const FormatError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("SentencePiece's tokenizer.model: corrupt files and other settings are refused naming them", "[tokenizer][sentencepiece][errors]") {
    CHECK(error_of_model(model_proto()) == "no error");
    CHECK(sentencepiece_from_model(model_proto(), "m").encode("a a") == std::vector<TokenId>{3, 4, 3, 4});
    CHECK_THAT(error_of_model(model_proto(field_varint(3, 1))), Catch::Contains("model_type is 1 (Unigram), not BPE"));
    CHECK_THAT(error_of_model(model_proto({}, field_bytes(1, "nmt_nfkc"))), Catch::Contains("normalizer_spec.name is 'nmt_nfkc'"));
    CHECK_THAT(error_of_model(model_proto({}, field_varint(4, 1))), Catch::Contains("remove_extra_whitespaces is true"));
    CHECK_THAT(error_of_model(model_proto(field_varint(42, 9))), Catch::Contains("eos token id 9 is outside"));
    const std::string whole = model_proto();
    for (std::size_t cut = 0; cut < whole.size(); ++cut) {  // every truncation: an error naming the file, no crash
        INFO(cut);
        CHECK_THAT(error_of_model(whole.substr(0, cut)), Catch::StartsWith("tokenizer.model"));
    }
    CHECK_THAT(error_of_model(whole.substr(0, 7)), Catch::Contains("runs past the end (at byte"));
    CHECK_THAT(error_of_model(std::string(12, '\xFF')), Catch::Contains("not a SentencePiece model"));
    CHECK_THAT(error_of_model(""), Catch::Contains("no pieces"));
}
