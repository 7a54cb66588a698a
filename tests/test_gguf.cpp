// The GGUF reader against a file written by an independent writer (tools/gguf_writer.py,
// tests/data/gguf/sample.gguf), and against corrupt versions of it: every truncation, wrong
// magic and version, impossible counts, unknown types, bad offsets, duplicates. Each must be a
// FormatError naming the file and the key or tensor, never a crash or a huge allocation.
#include <catch2/catch.hpp>

#include <unistd.h>  // getpid

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <tessera/core/weight_formats.hpp>
#include <tessera/io/gguf.hpp>

#include "child_process.hpp"  // exit_code_with_address_space_headroom

using tessera::FormatError;
using tessera::io::GgmlType;
using tessera::io::GgufFile;
using tessera::io::GgufValue;
namespace fs = std::filesystem;

namespace {

const std::string sample_path = std::string(TESSERA_TEST_DATA_DIR) + "/gguf/sample.gguf";

std::string sample_bytes() {
    std::ifstream in(sample_path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

// The file these bytes make, opened; or the error it raises.
std::string error_of(const std::string& bytes) {
    const fs::path path = fs::temp_directory_path() / ("tessera_gguf_" + std::to_string(::getpid()) + ".gguf");
    std::ofstream(path, std::ios::binary) << bytes;
    try {
        GgufFile file(path);
    } catch (const FormatError& e) {
        fs::remove(path);
        return e.what();
    }
    fs::remove(path);
    return "no error";
}

// `bytes` with the 8 bytes after the first occurrence of `anchor` (plus `skip`) replaced by v.
std::string with_u64_after(std::string bytes, const std::string& anchor, std::size_t skip, std::uint64_t v) {
    const std::size_t at = bytes.find(anchor);
    REQUIRE(at != std::string::npos);
    std::memcpy(bytes.data() + at + anchor.size() + skip, &v, sizeof v);
    return bytes;
}
std::string with_u32_after(std::string bytes, const std::string& anchor, std::size_t skip, std::uint32_t v) {
    const std::size_t at = bytes.find(anchor);
    REQUIRE(at != std::string::npos);
    std::memcpy(bytes.data() + at + anchor.size() + skip, &v, sizeof v);
    return bytes;
}

}  // namespace

TEST_CASE("GGUF: metadata and tensors read as the independent writer wrote them", "[gguf]") {
    const GgufFile f(sample_path);
    CHECK(f.version() == 3);
    CHECK(f.alignment() == 32);
    CHECK(f.metadata().size() == 16);
    CHECK(f.string_value("general.architecture") == "gpt2");
    CHECK(f.string_value("general.name") == "sample \xE2\x9C\x93 \xE5\x8C\x97\xE4\xBA\xAC");
    CHECK(f.unsigned_value("test.u8") == 200);
    CHECK(f.find("test.i8")->signed_value == -100);
    CHECK(f.unsigned_value("test.u16") == 60000);
    CHECK(f.find("test.i16")->signed_value == -30000);
    CHECK(f.unsigned_value("test.u32") == 4000000000u);
    CHECK(f.find("test.i32")->signed_value == -2000000000);
    CHECK(f.real_value("test.f32") == 0.25);
    CHECK(f.find("test.bool")->unsigned_value == 1);
    CHECK(f.unsigned_value("test.u64") == (std::uint64_t{1} << 63) + 5);
    CHECK(f.find("test.i64")->signed_value == -(std::int64_t{1} << 62));
    CHECK(f.real_value("test.f64") == -1.5e300);
    const auto& tokens = f.array_value("tokenizer.ggml.tokens", GgufValue::Type::string);
    REQUIRE(tokens.size() == 3);
    CHECK(tokens[1].text == "\xC4\xA0" "b");
    CHECK(f.array_value("tokenizer.ggml.token_type", GgufValue::Type::i32)[2].signed_value == 3);
    const auto& nested = f.array_value("test.nested", GgufValue::Type::array);
    REQUIRE(nested.size() == 2);
    CHECK(nested[0].elements[1].unsigned_value == 2);
    CHECK(nested[1].elements.empty());
    CHECK_THROWS_WITH(f.unsigned_value("test.f32"), Catch::EndsWith("sample.gguf: metadata 'test.f32' is not an unsigned integer"));
    CHECK_THROWS_WITH(f.string_value("nope"), Catch::EndsWith("metadata 'nope' is missing"));

    REQUIRE(f.tensors().size() == 6);
    const auto& t = f.tensor("f32");
    CHECK(t.type == GgmlType::f32);
    CHECK(t.ne == std::vector<std::uint64_t>{4, 3});
    CHECK(t.bytes == 48);
    std::vector<float> values(12);
    f.read(t, std::as_writable_bytes(std::span(values)));
    for (std::size_t i = 0; i < 12; ++i) CHECK(values[i] == static_cast<float>(i) * 0.5f - 2.0f);
    CHECK(f.tensor("f16").bytes == 8);
    CHECK(f.tensor("bf16").bytes == 10);
    // The Q8_0 blocks numpy wrote are the blocks tessera makes of the same weights.
    const auto& q = f.tensor("q8_0");
    CHECK(q.type == GgmlType::q8_0);
    REQUIRE(q.bytes == 68);
    std::vector<tessera::Q8_0> blocks(2);
    f.read(q, std::as_writable_bytes(std::span(blocks)));
    std::vector<float> x(64);
    for (std::size_t i = 0; i < 64; ++i) x[i] = static_cast<float>(-1.0 + static_cast<double>(i) * (2.0 / 63.0));
    x[63] = 1.0f;  // numpy's linspace ends exactly at the stop
    std::vector<tessera::Q8_0> mine(2);
    tessera::WeightFormat<tessera::Q8_0>::quantize(x.data(), mine.data(), 64);
    CHECK(std::memcmp(blocks.data(), mine.data(), 68) == 0);
    // Q6_K of random bytes reads as the floats numpy read from them (which are ggml's too).
    const auto& q6 = f.tensor("q6_k");
    CHECK(q6.type == GgmlType::q6_k);
    CHECK(q6.bytes == 420);
    std::vector<float> got(512), want(512);
    f.read_float_range(q6, 0, got);
    f.read_float_range(f.tensor("q6_k.expected"), 0, want);
    CHECK(got == want);
    std::vector<float> second(256);
    f.read_float_range(q6, 256, second);  // the second super-block alone
    CHECK(std::equal(second.begin(), second.end(), want.begin() + 256));
    CHECK_THROWS_WITH(f.read_float_range(q6, 32, second), Catch::Contains("in blocks of 256, not [32, 288)"));
    CHECK_THROWS_WITH(f.tensor("missing"), Catch::EndsWith("tensor 'missing' is missing"));
}

TEST_CASE("GGUF: every truncation is a clear error", "[gguf]") {
    const std::string bytes = sample_bytes();
    const GgufFile whole(sample_path);
    std::uint64_t data_end = 0;  // the end of the last tensor (padding may follow)
    for (const auto& t : whole.tensors()) data_end = std::max(data_end, whole.data_offset() + t.offset + t.bytes);
    REQUIRE(data_end <= bytes.size());
    for (std::size_t n = 0; n < data_end; ++n) {
        INFO("first " << n << " bytes");
        const std::string e = error_of(bytes.substr(0, n));
        CHECK(e.find("sample") == std::string::npos);  // (the temporary file's name)
        CHECK(e.find("tessera_gguf_") != std::string::npos);
        CHECK(e != "no error");
    }
}

TEST_CASE("GGUF: corrupt headers, counts, types and offsets are refused by name", "[gguf]") {
    const std::string ok = sample_bytes();
    REQUIRE(error_of(ok) == "no error");
    std::string bad = ok;
    bad[0] = 'X';
    CHECK_THAT(error_of(bad), Catch::EndsWith("not a GGUF file (it does not start with \"GGUF\")"));
    bad = ok;
    bad[4] = 2;
    CHECK_THAT(error_of(bad), Catch::EndsWith("GGUF version 2 is not supported (version 3 is)"));
    CHECK_THAT(error_of(with_u64_after(ok, "GGUF", 4 + 8, 1ull << 60)),
               Catch::Contains("the header claims 1152921504606846976 metadata entries"));
    CHECK_THAT(error_of(with_u64_after(ok, "GGUF", 4, 1ull << 60)), Catch::Contains("the header claims 1152921504606846976 tensors"));
    // tokenizer.ggml.tokens: an array of 2^40 strings in a 1 KB file
    CHECK_THAT(error_of(with_u64_after(ok, "tokenizer.ggml.tokens", 8, 1ull << 40)),
               Catch::Contains("metadata 'tokenizer.ggml.tokens' claims 1099511627776 elements"));
    CHECK_THAT(error_of(with_u32_after(ok, "test.u8", 0, 13)), Catch::EndsWith("metadata 'test.u8' has unknown value type 13"));
    CHECK_THAT(error_of(with_u32_after(ok, "tokenizer.ggml.tokens", 4, 99)),
               Catch::Contains("metadata 'tokenizer.ggml.tokens' is an array of unknown type 99"));
    // a string whose length runs past the end
    CHECK_THAT(error_of(with_u64_after(ok, "general.architecture", 4, 1ull << 50)), Catch::Contains("truncated"));
    // "test.i8" renamed "test.u8": the same key twice
    bad = ok;
    bad.replace(bad.find("test.i8"), 7, "test.u8");
    CHECK_THAT(error_of(bad), Catch::EndsWith("metadata 'test.u8' appears twice"));
    bad = ok;  // invalid UTF-8 in a key
    bad[bad.find("test.u16") + 5] = '\xFF';
    CHECK_THAT(error_of(bad), Catch::Contains("is not valid UTF-8"));
    // tensors: the f32 tensor's dimension count, first dimension, type, offset
    const std::string f32 = std::string("\x03\x00\x00\x00\x00\x00\x00\x00", 8) + "f32";
    CHECK_THAT(error_of(with_u32_after(ok, f32, 0, 5)), Catch::EndsWith("tensor 'f32' has 5 dimensions (1 to 4 are allowed)"));
    CHECK_THAT(error_of(with_u64_after(ok, f32, 4, 0)), Catch::Contains("tensor 'f32' has a dimension of 0"));
    CHECK_THAT(error_of(with_u32_after(ok, f32, 4 + 16, 10)), Catch::Contains("tensor 'f32' has ggml type 10, which is not supported"));  // Q2_K
    CHECK_THAT(error_of(with_u32_after(ok, f32, 4 + 16, 12)), Catch::Contains("tensor 'f32' is Q4_K but its rows of 4 are not whole blocks of 256"));
    CHECK_THAT(error_of(with_u32_after(ok, f32, 4 + 16, 8)), Catch::Contains("tensor 'f32' is Q8_0 but its rows of 4 are not whole blocks of 32"));
    CHECK_THAT(error_of(with_u64_after(ok, f32, 4 + 16 + 4, 7)), Catch::Contains("tensor 'f32' has offset 7, not a multiple of the alignment 32"));
    CHECK_THAT(error_of(with_u64_after(ok, f32, 4 + 16 + 4, 1ull << 40)), Catch::Contains("tensor 'f32' (48 bytes at offset 1099511627776) runs past the end"));
    CHECK_THAT(error_of(with_u64_after(ok, f32, 4 + 16 + 4, 64)), Catch::Contains("overlap"));
    bad = ok;  // two tensors named alike
    bad.replace(bad.find("f16"), 3, "f32");
    CHECK_THAT(error_of(bad), Catch::EndsWith("tensor 'f32' appears twice"));
}

namespace {
// A GGUF file with no tensors and one metadata array: `count` elements of `element_type`,
// each encoded as `element` (its bytes).
std::string gguf_with_array(const std::string& key, std::uint32_t element_type, std::uint64_t count, const std::string& element) {
    std::string b = "GGUF";
    const auto put = [&b](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(std::uint32_t{3});
    put(std::uint64_t{0});  // tensors
    put(std::uint64_t{1});  // metadata
    put(std::uint64_t{key.size()});
    b += key;
    put(std::uint32_t{9});  // array
    put(element_type);
    put(count);
    b.reserve(b.size() + count * element.size());
    for (std::uint64_t i = 0; i < count; ++i) b += element;
    b.resize((b.size() + 31) / 32 * 32);  // the (empty) tensor data starts at the alignment
    return b;
}
fs::path written(const std::string& name, const std::string& bytes) {
    const fs::path path = fs::temp_directory_path() / ("tessera_gguf_" + std::to_string(::getpid()) + "_" + name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}
}  // namespace

// An address-space cap and AddressSanitizer's shadow memory do not mix: this case exists only
// in the plain build (test_gguf), not in test_gguf_asan.
#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE("GGUF: a 20 MB metadata array opens in bounded memory, and reading it whole where memory runs out names the key", "[gguf]") {
    // 20 million u8: as GgufValues they took 2 GB; opening now needs none of that, and reading
    // the array whole where memory is short is an error naming the key.
    const fs::path big = written("big.gguf", gguf_with_array("junk.bytes", 0, 20'000'000, std::string(1, '\x07')));
    const int opened = tessera::test::exit_code_with_address_space_headroom(std::size_t{96} << 20, 60, [&] {
        const GgufFile f(big);
        return f.find("junk.bytes")->array_length == 20'000'000 && f.find("junk.bytes")->is_unread_array() ? 0 : 1;
    });
    CHECK(opened == 0);
    const int read_whole = tessera::test::exit_code_with_address_space_headroom(std::size_t{96} << 20, 60, [&] {
        const GgufFile f(big);
        try {
            (void)f.value("junk.bytes");
        } catch (const FormatError& e) {
            return std::string(e.what()).ends_with("metadata 'junk.bytes' (an array of 20000000 elements) does not fit in memory") ? 0 : 2;
        }
        return 1;
    });
    CHECK(read_whole == 0);
    fs::remove(big);
}
#endif

TEST_CASE("GGUF: metadata arrays are checked on opening and read when asked for", "[gguf]") {
    const fs::path small = written("small.gguf", gguf_with_array("words", 8, 3, std::string("\x02\0\0\0\0\0\0\0hi", 10)));
    const GgufFile f(small);
    CHECK(f.find("words")->is_unread_array());
    CHECK(f.find("words")->array_length == 3);
    CHECK(f.string_array("words") == std::vector<std::string>{"hi", "hi", "hi"});
    const GgufValue whole = f.value("words");
    CHECK_FALSE(whole.is_unread_array());
    REQUIRE(whole.elements.size() == 3);
    CHECK(whole.elements[2].text == "hi");
    CHECK(f.array_value("words", GgufValue::Type::string).size() == 3);
    CHECK_THROWS_WITH(f.string_array("nope"), Catch::EndsWith("metadata 'nope' is missing"));
    CHECK_THROWS_WITH(f.array_value("words", GgufValue::Type::u8), Catch::EndsWith("metadata 'words' is not an array of the expected type"));
    fs::remove(small);
    // Elements are still checked on opening: strings as UTF-8, bools as 0 or 1, the count
    // against the bytes there are.
    CHECK_THAT(error_of(gguf_with_array("words", 8, 2, std::string("\x01\0\0\0\0\0\0\0\xff", 9))),
               Catch::Contains("metadata 'words' is not valid UTF-8"));
    CHECK_THAT(error_of(gguf_with_array("flags", 7, 2, std::string(1, '\x02'))), Catch::Contains("metadata 'flags' is a bool of value 2"));
    const std::string three = gguf_with_array("cut", 5, 3, std::string(4, '\0'));  // 12 bytes, then 1 of padding
    CHECK_THAT(error_of(three.substr(0, three.size() - 6)), Catch::Contains("metadata 'cut' claims 3 elements but 7 bytes are left"));
}
