// GPT-2 from GGUF files in llama.cpp's layout, written by an independent converter
// (tools/hf_to_gguf.py: numpy, its own GGUF writer and quantizer; fixtures in
// gpt2_fixtures/gguf), and by tessera's own writer (write_gpt2_gguf, examples/quantize).
//
// Exactness: a GGUF file holds the same weights as its safetensors twin loaded with the same
// format (the converter quantizes with GGML's reference algorithm, as tessera does), so the
// logits must be equal bit for bit: any difference in names, transposition, row order, block
// bytes or the head's tying changes them. The f32 files are also held to the float64
// reference (1e-4, as test_gpt2.cpp). Bad files: a FormatError naming the file and the key or
// tensor, before anything runs.
#include <catch2/catch.hpp>

#include <unistd.h>  // getpid

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <tessera/models/load_gpt2.hpp>
#include <tessera/models/open_tokenizer.hpp>
#include <tessera/models/write_gpt2_gguf.hpp>
#include <tessera/tessera.hpp>

#include "gpt2_fixtures.hpp"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

const std::string& fixtures = test::gpt2_fixtures;
std::string gguf(const std::string& name) { return fixtures + "/gguf/" + name; }

fs::path temporary(const std::string& name) {
    return fs::temp_directory_path() / ("tessera_" + std::to_string(::getpid()) + "_" + name);
}

// Every position's logits (prefill_all), then decode steps after an 8-token prompt: all of them.
std::vector<float> logits_of(LanguageModel& model) {
    return test::prefill_then_decode_logits(model, test::fixture_tokens(), 8);
}

// A copy of GGUF file `from` with its metadata and tensors changed: edit_metadata(key, value)
// returns false to drop the key; edit_tensor(name, type, ne, bytes) may also rename a tensor.
using MetadataEdit = std::function<bool(const std::string&, io::GgufValue&)>;
using TensorEdit = std::function<bool(std::string&, io::GgmlType&, std::vector<std::uint64_t>&, std::vector<std::byte>&)>;
fs::path rewritten(const std::string& from, const std::string& name, const MetadataEdit& edit_metadata,
                   const TensorEdit& edit_tensor = {}) {
    const io::GgufFile source(from);
    io::GgufWriter w;
    for (const auto& entry : source.metadata()) {
        io::GgufValue value = source.value(entry.first);
        if (edit_metadata(entry.first, value)) w.add(entry.first, value);
    }
    for (const io::GgufTensorInfo& t : source.tensors()) {
        std::vector<std::byte> bytes(t.bytes);
        source.read(t, bytes);
        std::string name = t.name;
        io::GgmlType type = t.type;
        std::vector<std::uint64_t> ne = t.ne;
        if (edit_tensor && !edit_tensor(name, type, ne, bytes)) continue;
        w.add_tensor(name, type, ne, [bytes] { return bytes; });
    }
    const fs::path path = temporary(name);
    w.write(path.string());
    return path;
}
const MetadataEdit keep = [](const std::string&, io::GgufValue&) { return true; };

std::string load_error(const fs::path& path) {
    Cpu cpu(1);
    try {
        open_gpt2(cpu, path);
    } catch (const FormatError& e) {
        fs::remove(path);
        return e.what();
    }
    fs::remove(path);
    return "no error";
}

}  // namespace

TEST_CASE("GGUF: each format gives exactly the logits of its safetensors twin", "[gguf]") {
    struct Case {
        const char* file;
        const char* twin;
        std::optional<WeightFormatId> twin_format;
        const char* format;
    };
    const Case c = GENERATE(Case{"tiny-f32.gguf", "tiny", std::nullopt, "f32"},
                            Case{"tiny-f16.gguf", "tiny-f16", std::nullopt, "f32"},  // F16 widens to float
                            Case{"tiny-bf16.gguf", "tiny", WeightFormatId::bf16, "bf16"},
                            Case{"tiny-q8_0.gguf", "tiny", WeightFormatId::q8_0, "q8_0"},
                            Case{"tiny-q4_0.gguf", "tiny", WeightFormatId::q4_0, "q4_0"},
                            Case{"tiny-prefixed.gguf", "tiny-prefixed", std::nullopt, "f32"});  // untied: output.weight
    INFO(c.file);
    Cpu cpu(2);
    const auto from_gguf = open_gpt2(cpu, gguf(c.file));
    const auto from_safetensors = open_gpt2(cpu, fixtures + "/" + c.twin, nullptr, c.twin_format);
    CHECK(from_gguf->weight_format() == c.format);
    CHECK(from_gguf->context_length() == from_safetensors->context_length());
    const auto got = logits_of(*from_gguf), want = logits_of(*from_safetensors);
    REQUIRE(got.size() == want.size());
    std::size_t first_difference = 0;
    while (first_difference < got.size() && got[first_difference] == want[first_difference]) ++first_difference;
    INFO("first difference at " << first_difference << " of " << got.size());
    CHECK(first_difference == got.size());
}

TEST_CASE("GGUF: f32 and f16 files match the float64 reference", "[gguf]") {
    const auto [file, fixture] = GENERATE(std::pair{"tiny-f32.gguf", "tiny"}, std::pair{"tiny-f16.gguf", "tiny-f16"},
                                          std::pair{"tiny-prefixed.gguf", "tiny-prefixed"}, std::pair{"vocab-f32.gguf", "vocab"});
    INFO(file);
    const auto want = test::reference_logits(fixture);
    Cpu cpu(2);
    const auto model = open_gpt2(cpu, gguf(file));
    const auto got = model->prefill_all(test::fixture_tokens());
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    INFO("max abs difference " << worst);
    CHECK(worst <= 1e-4);
}

TEST_CASE("GGUF: --weights converts a file to another format", "[gguf]") {
    // q8_0 blocks widened to float, and f32 quantized to q4_0: the same as from safetensors.
    Cpu cpu(2);
    const auto q4 = open_gpt2(cpu, gguf("tiny-f32.gguf"), nullptr, WeightFormatId::q4_0);
    const auto twin = open_gpt2(cpu, fixtures + "/tiny", nullptr, WeightFormatId::q4_0);
    CHECK(q4->weight_format() == "q4_0");
    const auto a = logits_of(*q4), b = logits_of(*twin);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    const auto widened = open_gpt2(cpu, gguf("tiny-q8_0.gguf"), nullptr, WeightFormatId::f32);
    CHECK(widened->weight_format() == "f32");
    const auto want = test::reference_logits("tiny", "logits-q8_0.f64");
    const auto got = widened->prefill_all(test::fixture_tokens());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    CHECK(worst <= 1e-4);
}

// llama-quantize's Q4_0 files keep the embedding in Q6_K, and so does tessera's Q4_0 model
// where the width is whole super-blocks (wide: 256): loaded with f32 weights, the logits are
// the reference's for Q4_0 matrices and that Q6_K embedding (1e-4, as the f32 parity); loaded
// as stored, the same weights with 8-bit activations (within 2e-2 of the largest |logit|, the
// bound of the decode-step test in test_gpt2.cpp), the Q6_K blocks used as they are.
TEST_CASE("GGUF: a Q4_0 file with a Q6_K embedding, as llama-quantize writes it", "[gguf]") {
    const auto want = test::reference_logits("wide", "logits-q4_0-q6_k.f64");
    const auto tokens = test::fixture_tokens();
    Cpu cpu(2);
    const auto widened = open_gpt2(cpu, gguf("wide-q4_0-q6_k.gguf"), nullptr, WeightFormatId::f32);
    const auto as_stored = open_gpt2(cpu, gguf("wide-q4_0-q6_k.gguf"));
    CHECK(as_stored->weight_format() == "q4_0");
    CHECK(as_stored->description().find("weights q4_0 (head q6_k)") != std::string::npos);
    const auto a = widened->prefill_all(tokens), b = as_stored->prefill_all(tokens);
    REQUIRE(a.size() == want.size());
    double worst = 0, worst_stored = 0, scale = 1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::fabs(a[i] - want[i]));
        worst_stored = std::max(worst_stored, std::fabs(b[i] - want[i]));
        scale = std::max(scale, std::fabs(want[i]));
    }
    INFO("f32: max abs difference " << worst << "; as stored: " << worst_stored << ", largest |logit| " << scale);
    CHECK(worst <= 1e-4);
    CHECK(worst_stored <= 2e-2 * scale);
    // Decoding (one row: the one-row Q6_K kernel) continues the prefill's logits.
    as_stored->reset();
    as_stored->prefill(std::span<const TokenId>(tokens).first(tokens.size() - 1));
    const auto last = as_stored->decode(tokens.back());
    const std::size_t v = as_stored->vocabulary_size();
    double worst_decode = 0;
    for (std::size_t i = 0; i < v; ++i) worst_decode = std::max(worst_decode, std::fabs(last[i] - want[want.size() - v + i]));
    INFO("decode: max abs difference " << worst_decode);
    CHECK(worst_decode <= 2e-2 * scale);
}

namespace {
// A K-quant file run as stored (the default: KQuantMix, each matrix in its file's type, 8-bit
// activations per block of 32 as for Q8_0 / Q4_0): every position, and decode steps after an
// 8-token prompt, within 5% of the largest logit of the float64 reference over the file's
// weights, the bound of the Q8_0 / Q4_0 models' 8-bit activations (measured 0.5-2.4% on these
// random-weight models; a wrong scale, min or group moves them by far more).
void check_as_stored(Cpu& cpu, const fs::path& path, const std::vector<double>& want) {
    const auto model = open_gpt2(cpu, path.string());
    CHECK(model->weight_format() == "k-quant mix");
    const std::vector<TokenId> tokens = test::fixture_tokens();
    const std::size_t v = model->vocabulary_size();
    double scale = 0, all = 0, steps = 0;
    const auto got = model->prefill_all(tokens);
    for (std::size_t i = 0; i < got.size(); ++i) {
        scale = std::max(scale, std::fabs(want[i]));
        all = std::max(all, std::fabs(got[i] - want[i]));
    }
    model->reset();
    model->prefill(std::span(tokens).first(8));
    for (std::size_t t = 8; t < tokens.size(); ++t) {
        const auto logits = model->decode(tokens[t]);
        for (std::size_t i = 0; i < v; ++i) steps = std::max(steps, std::fabs(logits[i] - want[t * v + i]));
    }
    INFO("as stored: all positions " << all << ", decode steps " << steps << ", largest |logit| " << scale);
    CHECK(all <= 5e-2 * scale);
    CHECK(steps <= 5e-2 * scale);
}
// Widened to float (the weights the file holds, alone): within 1e-4 of the reference; then as stored.
void check_widened_and_as_stored(Cpu& cpu, const fs::path& path, const std::vector<double>& want) {
    const auto got = open_gpt2(cpu, path.string(), nullptr, WeightFormatId::f32)->prefill_all(test::fixture_tokens());
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    INFO("widened: max abs difference " << worst);
    CHECK(worst <= 1e-4);
    check_as_stored(cpu, path, want);
}
}  // namespace

// K-quant files (Q4_K with a Q6_K embedding, as a Q4_K_M file keeps its output; Q5_K), written by
// the independent converter with the numpy port of GGML's quantizers: widened to float as they
// load, the logits are the f32 model's over those weights: within 1e-4 of the float64 reference
// over the same dequantized weights (the f32 parity bound); as stored, check_as_stored's bound.
TEST_CASE("GGUF: Q4_K, Q5_K and Q6_K files load, widened to the weights they hold or as stored", "[gguf]") {
    struct Case {
        const char* file;
        const char* logits;
    };
    const Case c = GENERATE(Case{"wide-q4_k-q6_k.gguf", "logits-q4_k-q6_k.f64"}, Case{"wide-q5_k.gguf", "logits-q5_k.f64"});
    INFO(c.file);
    const auto want = test::reference_logits("wide", c.logits);
    const auto f32 = test::reference_logits("wide", "logits.f64");
    double quantization = 0;
    for (std::size_t i = 0; i < want.size(); ++i) quantization = std::max(quantization, std::fabs(want[i] - f32[i]));
    INFO("the quantization itself moved the logits by up to " << quantization);
    CHECK(quantization > 1e-3);  // the reference is the quantized model's, not the f32 one's
    Cpu cpu(2);
    check_widened_and_as_stored(cpu, gguf(c.file), want);
}

// A width that is not whole super-blocks (tiny: 64) keeps a Q8_0 head, as llama-quantize does.
TEST_CASE("GGUF: a Q4_0 model narrower than a Q6_K super-block keeps a Q8_0 head", "[gguf]") {
    Cpu cpu(2);
    const auto q4 = open_gpt2(cpu, gguf("tiny-q4_0.gguf"));
    CHECK(q4->description().find("weights q4_0 (head q8_0)") != std::string::npos);
    const auto converted = open_gpt2(cpu, gguf("wide-q4_0-q6_k.gguf"), nullptr, WeightFormatId::q4_0);
    CHECK(converted->description().find("(head q6_k)") != std::string::npos);
}

TEST_CASE("GGUF: the tokenizer in the file is the tokenizer of the directory", "[gguf]") {
    const BpeTokenizer from_file = open_tokenizer(gguf("vocab-f32.gguf"));
    const BpeTokenizer from_directory = open_tokenizer(fixtures + "/vocab");
    REQUIRE(from_file.vocab_size() == 50257);
    CHECK(from_file.eos_id() == from_directory.eos_id());
    for (const char* text : {"Hello, my name is", " naïve café 北京 🎉 <|endoftext|>", "'s 've 're   \n\n\tx", "12345 3.14"}) {
        INFO(text);
        CHECK(from_file.encode(text) == from_directory.encode(text));
        CHECK(from_file.encode(text, SpecialTokens::allowed) == from_directory.encode(text, SpecialTokens::allowed));
    }
    CHECK(from_file.merge_texts() == from_directory.merge_texts());
    CHECK(from_file.token_text(220) == "Ġ");
}

TEST_CASE("GGUF: tessera's writer and the independent converter write the same tensors", "[gguf]") {
    const auto format = GENERATE(WeightFormatId::f32, WeightFormatId::q8_0);
    const std::string name(weight_format_name(format));
    INFO(name);
    const fs::path path = temporary("written-" + name + ".gguf");
    const BpeTokenizer tokenizer = open_tokenizer(fixtures + "/vocab");
    write_gpt2_gguf(Gpt2Files(fixtures + "/vocab"), &tokenizer, GgufFileFormat(format), path.string(), "vocab");
    const io::GgufFile ours(path), theirs(gguf("vocab-" + name + ".gguf"));
    CHECK(ours.tensors().size() == theirs.tensors().size());
    for (const io::GgufTensorInfo& t : theirs.tensors()) {
        INFO(t.name);
        const io::GgufTensorInfo* mine = ours.find_tensor(t.name);
        REQUIRE(mine != nullptr);
        CHECK(mine->type == t.type);
        CHECK(mine->ne == t.ne);
        std::vector<std::byte> a(t.bytes), b(mine->bytes);
        theirs.read(t, a);
        ours.read(*mine, b);
        CHECK(a == b);
    }
    for (const char* key : {"general.architecture", "tokenizer.ggml.model", "tokenizer.ggml.pre"}) {
        CHECK(ours.string_value(key) == theirs.string_value(key));
    }
    for (const char* key : {"gpt2.block_count", "gpt2.context_length", "gpt2.embedding_length", "gpt2.feed_forward_length",
                            "gpt2.attention.head_count", "general.file_type", "tokenizer.ggml.eos_token_id"}) {
        INFO(key);
        CHECK(ours.unsigned_value(key) == theirs.unsigned_value(key));
    }
    CHECK(ours.real_value("gpt2.attention.layer_norm_epsilon") == theirs.real_value("gpt2.attention.layer_norm_epsilon"));
    CHECK(open_tokenizer(path).merge_texts() == open_tokenizer(gguf("vocab-f32.gguf")).merge_texts());
    // Read back, it is the same model.
    Cpu cpu(2);
    const auto a = logits_of(*open_gpt2(cpu, path)), b = logits_of(*open_gpt2(cpu, gguf("vocab-" + name + ".gguf")));
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    fs::remove(path);
}


// llama-quantize's K-quant mixes, per tensor as its llama_tensor_get_type chooses for gpt2
// (models/gguf_file_format.hpp), against the independent converter's (tools/hf_to_gguf.py with
// quantize_reference.k_mix_type and the numpy quantizers): the same types, the same bytes; read
// back, logits within 1e-4 of the float64 reference over the weights the file holds.
TEST_CASE("GGUF: q4_k_m, q5_k_m and q6_k files hold llama-quantize's types and GGML's bytes", "[gguf]") {
    const std::string mix = GENERATE("q4_k_m", "q5_k_m", "q6_k");
    INFO(mix);
    const fs::path path = temporary("written-" + mix + ".gguf");
    const auto format = GgufFileFormat::named(mix);
    REQUIRE(format);
    write_gpt2_gguf(Gpt2Files(fixtures + "/wide-8"), nullptr, *format, path.string(), "wide-8");
    const io::GgufFile ours(path), theirs(gguf("wide-8-" + mix + ".gguf"));
    CHECK(ours.unsigned_value("general.file_type") == theirs.unsigned_value("general.file_type"));
    REQUIRE(ours.tensors().size() == theirs.tensors().size());
    for (const io::GgufTensorInfo& t : theirs.tensors()) {
        INFO(t.name);
        const io::GgufTensorInfo* mine = ours.find_tensor(t.name);
        REQUIRE(mine != nullptr);
        CHECK(io::ggml_type_name(mine->type) == io::ggml_type_name(t.type));
        std::vector<std::byte> a(t.bytes), b(mine->bytes);
        theirs.read(t, a);
        ours.read(*mine, b);
        CHECK(a == b);
    }
    // The choices themselves, over eight layers: the head; ffn_down and attn_qkv in layers 0 and
    // 7 (use_more_bits: the first and last eighth) and 3 and 6 (every third between), not in the
    // others (llama.cpp 80fb11a treats attn_qkv as attn_v; older versions gave it Q5_K throughout).
    const auto type = [&](const std::string& name) { return std::string(io::ggml_type_name(ours.tensor(name).type)); };
    const std::string own = mix == "q4_k_m" ? "Q4_K" : mix == "q5_k_m" ? "Q5_K" : "Q6_K";
    CHECK(type("token_embd.weight") == "Q6_K");
    for (int layer = 0; layer < 8; ++layer) {
        INFO("layer " << layer);
        const bool more = layer == 0 || layer == 3 || layer == 6 || layer == 7;
        CHECK(type("blk." + std::to_string(layer) + ".ffn_down.weight") == (more ? "Q6_K" : own));
        CHECK(type("blk." + std::to_string(layer) + ".attn_qkv.weight") == (more ? "Q6_K" : own));  // attn_v-like
    }
    CHECK(type("blk.1.attn_output.weight") == own);
    CHECK(type("blk.1.ffn_up.weight") == own);
    CHECK(type("position_embd.weight") == "F32");
    Cpu cpu(2);
    const auto want = test::reference_logits("wide-8", "logits-" + mix + ".f64");
    check_widened_and_as_stored(cpu, path, want);
    fs::remove(path);
}

// llama-quantize's fallbacks where rows are not whole super-blocks (tiny: 64): Q4_K to Q5_0, Q6_K
// to Q8_0 (Q5_K to Q5_1: test_llama); the file runs, within 1e-4 of the float64 reference over the weights it
// holds (tools/gpt2_reference.py --weights q4_k_m, quantize_reference.py's independent
// fallbacks and Q5_0 / Q5_1 quantizers).
TEST_CASE("GGUF: a K-quant mix of rows that are not whole super-blocks falls back as llama-quantize does", "[gguf]") {
    const fs::path path = temporary("narrow-k.gguf");
    write_gpt2_gguf(Gpt2Files(fixtures + "/tiny"), nullptr, *GgufFileFormat::named("q4_k_m"), path.string(), "x");
    const io::GgufFile written(path);
    CHECK(written.tensor("blk.0.attn_qkv.weight").type == io::GgmlType::q5_0);
    CHECK(written.tensor("blk.1.attn_qkv.weight").type == io::GgmlType::q8_0);  // use_more_bits: Q6_K's fallback
    CHECK(written.tensor("blk.0.attn_output.weight").type == io::GgmlType::q5_0);
    CHECK(written.tensor("token_embd.weight").type == io::GgmlType::q8_0);
    Cpu cpu(2);
    const auto want = test::reference_logits("tiny", "logits-q4_k_m.f64");
    check_widened_and_as_stored(cpu, path, want);
    fs::remove(path);
}

TEST_CASE("GGUF: the writer refuses what the format cannot hold and a tokenizer of another model", "[gguf][errors]") {
    const fs::path path = temporary("never.gguf");
    const BpeTokenizer gpt2 = open_tokenizer(fixtures + "/vocab");
    CHECK_THROWS_WITH(write_gpt2_gguf(Gpt2Files(fixtures + "/odd-heads"), &gpt2, GgufFileFormat(WeightFormatId::q8_0), path.string(), "x"),
                      Catch::Contains("wte.weight: 48 weights per row are not a whole number of q8_0 blocks of 32"));
    CHECK_THROWS_WITH(write_gpt2_gguf(Gpt2Files(fixtures + "/tiny"), &gpt2, GgufFileFormat(WeightFormatId::q8_0), path.string(), "x"),
                      Catch::Contains("the tokenizer has 50257 tokens but the model's vocab_size is 512"));
    CHECK_FALSE(fs::exists(path));
    // A tensor that turns out bad while the file is written: nothing is left behind.
    const fs::path bad = rewritten(gguf("vocab-q8_0.gguf"), "nan-vocab.gguf", keep,
                                   [](std::string& name, auto&, auto&, std::vector<std::byte>& bytes) {
                                       if (name == "blk.1.ffn_down.weight") bytes[1] = std::byte{0x7e}, bytes[0] = std::byte{0};
                                       return true;
                                   });
    CHECK_THROWS_WITH(write_gpt2_gguf(Gpt2Files(bad), &gpt2, GgufFileFormat(WeightFormatId::q4_0), path.string(), "x"),
                      Catch::Contains("tensor 'blk.1.ffn_down.weight' holds NaN at element 0"));
    CHECK_FALSE(fs::exists(path));
    CHECK_FALSE(fs::exists(path.string() + ".tmp"));
    fs::remove(bad);
}

TEST_CASE("GGUF: re-quantizing a GGUF copies blocks already in the format", "[gguf]") {
    const fs::path path = temporary("again.gguf");
    const Gpt2Files source(gguf("vocab-q8_0.gguf"));
    CHECK(source.stored_format() == WeightFormatId::q8_0);
    const BpeTokenizer tokenizer = open_tokenizer(gguf("vocab-q8_0.gguf"));
    write_gpt2_gguf(source, &tokenizer, GgufFileFormat(WeightFormatId::q8_0), path.string(), "again");
    const io::GgufFile a(path), b(gguf("vocab-q8_0.gguf"));
    for (const io::GgufTensorInfo& t : b.tensors()) {
        std::vector<std::byte> x(t.bytes), y(t.bytes);
        b.read(t, x);
        a.read(a.tensor(t.name), y);
        INFO(t.name);
        CHECK(x == y);
    }
    fs::remove(path);
}

TEST_CASE("GGUF: a model that is not this network is refused, naming the key or tensor", "[gguf][errors]") {
    const std::string tiny = gguf("tiny-f32.gguf");
    const auto set_string = [](const char* key, const char* text) {
        return [=](const std::string& k, io::GgufValue& v) {
            if (k == key) v.text = text;
            return true;
        };
    };
    const auto set_number = [](const char* key, std::uint64_t n) {
        return [=](const std::string& k, io::GgufValue& v) {
            if (k == key) v.unsigned_value = n;
            return true;
        };
    };
    const auto drop = [](const char* key) { return [=](const std::string& k, io::GgufValue&) { return k != key; }; };
    CHECK_THAT(load_error(rewritten(tiny, "llama.gguf", set_string("general.architecture", "llama"))),
               Catch::Contains("llama.gguf: general.architecture is 'llama': only GPT-2 (\"gpt2\") runs here"));
    CHECK_THAT(load_error(rewritten(tiny, "no-layers.gguf", drop("gpt2.block_count"))),
               Catch::Contains("no-layers.gguf: metadata 'gpt2.block_count' is missing"));
    CHECK_THAT(load_error(rewritten(tiny, "zero.gguf", set_number("gpt2.attention.head_count", 0))),
               Catch::Contains("metadata 'gpt2.attention.head_count' is 0, not a positive size"));
    CHECK_THAT(load_error(rewritten(tiny, "heads.gguf", set_number("gpt2.attention.head_count", 5))),
               Catch::Contains("gpt2.embedding_length 64 is not a multiple of gpt2.attention.head_count 5"));
    CHECK_THAT(load_error(rewritten(tiny, "huge.gguf", set_number("gpt2.block_count", 1000000))),
               Catch::Contains("huge.gguf's metadata: the shape it gives") && Catch::Contains("holds only"));
    CHECK_THAT(load_error(rewritten(tiny, "eps.gguf",
                                    [](const std::string& k, io::GgufValue& v) {
                                        if (k == "gpt2.attention.layer_norm_epsilon") v.real_value = -1;
                                        return true;
                                    })),
               Catch::Contains("'gpt2.attention.layer_norm_epsilon' must be a positive number"));
    CHECK_THAT(load_error(rewritten(tiny, "eps-type.gguf",
                                    [](const std::string& k, io::GgufValue& v) {
                                        if (k == "gpt2.attention.layer_norm_epsilon") v = io::GgufValue{};  // a u8
                                        return true;
                                    })),
               Catch::Contains("metadata 'gpt2.attention.layer_norm_epsilon' is not a floating-point number"));
    // Misnamed (so that the file still holds as many weights as the shape needs).
    CHECK_THAT(load_error(rewritten(tiny, "missing.gguf", keep,
                                    [](std::string& name, auto&, auto&, auto&) {
                                        if (name == "blk.1.ffn_up.weight") name = "blk.1.ffn_up.weights";
                                        return true;
                                    })),
               Catch::Contains("missing.gguf: tensor 'blk.1.ffn_up.weight' is missing"));
    CHECK_THAT(load_error(rewritten(tiny, "dropped.gguf", keep,
                                    [](std::string& name, auto&, auto&, auto&) { return name != "blk.1.ffn_up.weight"; })),
               Catch::Contains("dropped.gguf's metadata: the shape it gives") && Catch::Contains("holds only"));
    CHECK_THAT(load_error(rewritten(tiny, "swapped.gguf", keep,
                                    [](std::string& name, auto&, std::vector<std::uint64_t>& ne, auto&) {
                                        if (name == "blk.0.ffn_down.weight") std::swap(ne[0], ne[1]);
                                        return true;
                                    })),
               Catch::Contains("tensor 'blk.0.ffn_down.weight' has dimensions [64, 256] (ggml order) but the file's gpt2.* "
                               "metadata implies [256, 64]"));
    CHECK_THAT(load_error(rewritten(tiny, "flat.gguf", keep,
                                    [](std::string& name, auto&, std::vector<std::uint64_t>& ne, auto&) {
                                        if (name == "token_embd.weight") ne = {ne[0] * ne[1]};
                                        return true;
                                    })),
               Catch::Contains("tensor 'token_embd.weight' is not a table of rows of gpt2.embedding_length 64"));
}

TEST_CASE("GGUF: a file that disagrees with itself is refused, naming both numbers", "[gguf][errors]") {
    // block_count 1 over two blocks: running one of them is another network.
    const std::string tiny = gguf("tiny-f32.gguf");
    CHECK_THAT(load_error(rewritten(tiny, "one-block.gguf",
                                    [](const std::string& k, io::GgufValue& v) {
                                        if (k == "gpt2.block_count") v.unsigned_value = 1;
                                        return true;
                                    })),
               Catch::Contains("one-block.gguf: gpt2.block_count is 1 but the checkpoint holds tensors of 2 blocks"));
    // A tokenizer of 50,257 tokens over an embedding of 50,000 rows: ids past 49,999 mean nothing.
    const auto cut_rows = [](std::string& name, io::GgmlType&, std::vector<std::uint64_t>& ne, std::vector<std::byte>& bytes) {
        if (name == "token_embd.weight") {
            bytes.resize(bytes.size() / ne[1] * 50000);
            ne[1] = 50000;
        }
        return true;
    };
    CHECK_THAT(load_error(rewritten(gguf("vocab-f32.gguf"), "fewer-rows.gguf", keep, cut_rows)),
               Catch::Contains("fewer-rows.gguf: tokenizer.ggml.tokens has 50257 tokens but token_embd.weight has 50000 rows"));
}

TEST_CASE("GGUF: a NUL byte in a string from the file does not cut the message short", "[gguf][errors]") {
    const std::string tiny = gguf("tiny-f32.gguf");
    CHECK_THAT(load_error(rewritten(tiny, "nul.gguf",
                                    [](const std::string& k, io::GgufValue& v) {
                                        if (k == "general.architecture") v.text = std::string("gp\0t2", 5);
                                        return true;
                                    })),
               Catch::EndsWith("nul.gguf: general.architecture is 'gp\\x00t2': only GPT-2 (\"gpt2\") runs here"));
}

TEST_CASE("GgufWriter: nothing is written that the reader would refuse", "[gguf][errors]") {
    io::GgufWriter w;
    CHECK_THROWS_WITH(w.add_string("general.name", "tiny\xff"),
                      Catch::Equals("GgufWriter: the string of 'general.name' is not valid UTF-8 (at byte 4)"));
    CHECK_THROWS_WITH(w.add_u32("bad\xc3", 1), Catch::Contains("metadata key of 'bad"));
    CHECK_THROWS_WITH(w.add_strings("tokens", {"a", "b\xe2\x82"}), Catch::Contains("the string of 'tokens' is not valid UTF-8 (at byte 1)"));
    CHECK_THROWS_WITH(w.add_tensor("t\xff", io::GgmlType::f32, {1}, [] { return std::vector<std::byte>(4); }),
                      Catch::Contains("tensor name of 't"));
    // metadata() gives arrays without their elements: copying one needs GgufFile::value().
    const io::GgufFile source(gguf("vocab-f32.gguf"));
    const io::GgufValue unread = source.metadata().at("tokenizer.ggml.tokens");
    CHECK_THROWS_WITH(w.add("tokenizer.ggml.tokens", unread), Catch::Contains("is an array whose elements were not read"));
    CHECK_NOTHROW(w.add("tokenizer.ggml.tokens", source.value("tokenizer.ggml.tokens")));
}

TEST_CASE("GGUF: NaN or infinite weights are refused, also in blocks used as stored", "[gguf][errors]") {
    // A Q8_0 block's scale set to f16 NaN (0x7e00), and an F32 weight set to infinity.
    const auto nan_scale = rewritten(gguf("tiny-q8_0.gguf"), "nan.gguf", keep,
                                     [](std::string& name, auto&, auto&, std::vector<std::byte>& bytes) {
                                         if (name == "blk.1.attn_output.weight") bytes[34 * 5 + 1] = std::byte{0x7e}, bytes[34 * 5] = std::byte{0};
                                         return true;
                                     });
    CHECK_THAT(load_error(nan_scale), Catch::Contains("nan.gguf: tensor 'blk.1.attn_output.weight' holds NaN at element 160"));
    const auto infinite = rewritten(gguf("tiny-f32.gguf"), "inf.gguf", keep,
                                    [](std::string& name, auto&, auto&, std::vector<std::byte>& bytes) {
                                        const float inf = std::numeric_limits<float>::infinity();
                                        if (name == "position_embd.weight") std::memcpy(bytes.data() + 4 * 7, &inf, 4);
                                        return true;
                                    });
    CHECK_THAT(load_error(infinite), Catch::Contains("tensor 'position_embd.weight' holds an infinity at element 7"));
}

TEST_CASE("GGUF: a tokenizer that is not GPT-2's is refused, naming the key", "[gguf][errors]") {
    const std::string vocab = gguf("vocab-q8_0.gguf");
    const auto tokenizer_error = [](const fs::path& path) -> std::string {
        try {
            open_tokenizer(path);
        } catch (const FormatError& e) {
            fs::remove(path);
            return e.what();
        }
        fs::remove(path);
        return "no error";
    };
    CHECK_THAT(tokenizer_error(rewritten(vocab, "spm.gguf",
                                         [](const std::string& k, io::GgufValue& v) {
                                             if (k == "tokenizer.ggml.model") v.text = "llama";
                                             return true;
                                         })),
               Catch::Contains("spm.gguf: tokenizer.ggml.model is 'llama'"));
    CHECK_THAT(tokenizer_error(rewritten(vocab, "pre.gguf",
                                         [](const std::string& k, io::GgufValue& v) {
                                             if (k == "tokenizer.ggml.pre") v.text = "deepseek-coder";
                                             return true;
                                         })),
               Catch::Contains("tokenizer.ggml.pre is 'deepseek-coder', a pre-tokenizer not supported here"));
    CHECK_THAT(tokenizer_error(rewritten(vocab, "eos.gguf",
                                         [](const std::string& k, io::GgufValue& v) {
                                             if (k == "tokenizer.ggml.eos_token_id") v.unsigned_value = 13;
                                             return true;
                                         })),
               Catch::Contains("the EOS id 13 is the ordinary token \".\""));
    CHECK_THAT(tokenizer_error(rewritten(vocab, "merge.gguf",
                                         [](const std::string& k, io::GgufValue& v) {
                                             if (k == "tokenizer.ggml.merges") v.elements[3].text = "Ġt zzzzqq";
                                             return true;
                                         })),
               Catch::Contains("merge.gguf tokenizer.ggml.merges entry 3: \"Ġt zzzzqq\" uses or makes a token"));
    CHECK_THAT(tokenizer_error(rewritten(vocab, "twice.gguf",
                                         [](const std::string& k, io::GgufValue& v) {
                                             if (k == "tokenizer.ggml.tokens") v.elements[100].text = v.elements[101].text;
                                             return true;
                                         })),
               Catch::Contains("appears twice"));
    CHECK_THAT(tokenizer_error(rewritten(vocab, "none.gguf", [](const std::string& k, io::GgufValue&) {
                   return k != "tokenizer.ggml.tokens";
               })),
               Catch::Contains("none.gguf: metadata 'tokenizer.ggml.tokens' is missing"));
}
