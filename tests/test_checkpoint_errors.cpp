// Corrupt and mismatched checkpoints: each is a FormatError whose message names the file and
// the tensor or value, never a crash or an out-of-bounds read (this test also runs under
// AddressSanitizer: test_checkpoint_errors_asan).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>  // getpid

#include <tessera/models/load_gpt2.hpp>
#include <tessera/tessera.hpp>

using namespace tessera;
namespace fs = std::filesystem;

namespace {

const fs::path tiny = fs::path(TESSERA_GPT2_FIXTURES) / "tiny";

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write(const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
}

// A scratch model directory: tiny's config.json and a checkpoint with the given bytes.
fs::path model_dir(const std::string& name, const std::string& safetensors, const std::string& config = read(tiny / "config.json")) {
    // The pid keeps the plain and the sanitizer build apart when ctest runs them side by side.
    const fs::path dir = fs::temp_directory_path() / ("tessera_bad_" + std::to_string(::getpid()) + "_" + name);
    fs::create_directories(dir);
    write(dir / "model.safetensors", safetensors);
    write(dir / "config.json", config);
    return dir;
}

// tiny's checkpoint with its JSON header edited by `edit` (the length prefix is rewritten).
template <class Edit>
std::string with_header(Edit edit) {
    const std::string bytes = read(tiny / "model.safetensors");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    std::string header = bytes.substr(8, n);
    edit(header);
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + bytes.substr(8 + n);
}

void replace(std::string& s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
}

void load(const fs::path& dir) {
    Cpu cpu(1);
    load_gpt2(cpu, dir, [](auto&) {});
}

}  // namespace

TEST_CASE("A valid checkpoint loads (the baseline of the corruptions below)", "[checkpoint]") {
    CHECK_NOTHROW(load(model_dir("valid", read(tiny / "model.safetensors"))));
}

TEST_CASE("Truncated files and impossible header lengths", "[checkpoint]") {
    const std::string full = read(tiny / "model.safetensors");
    CHECK_THROWS_WITH(load(model_dir("short", full.substr(0, 5))),
                      Catch::Contains("model.safetensors: truncated: 5 bytes"));
    CHECK_THROWS_WITH(load(model_dir("header_past_end", std::string("\xff\xff\x00\x00\x00\x00\x00\x00", 8) + "{}")),
                      Catch::Contains("header length 65535 runs past the end of the file (10 bytes)"));
    // The data region cut short: offsets now point past the end.
    CHECK_THROWS_WITH(load(model_dir("cut_data", full.substr(0, full.size() - 100))),
                      Catch::Contains("lie outside the data region"));
}

TEST_CASE("Malformed headers", "[checkpoint]") {
    CHECK_THROWS_WITH(load(model_dir("bad_json", with_header([](std::string& h) { h[0] = 'x'; }))),
                      Catch::Contains("model.safetensors: header: not valid JSON: expected a value at byte 0"));
    CHECK_THROWS_WITH(load(model_dir("bad_dtype", with_header([](std::string& h) {
                          replace(h, R"("ln_f.bias":{"dtype":"F32")", R"("ln_f.bias":{"dtype":"F64")");
                      }))),
                      Catch::Contains("tensor 'ln_f.bias': dtype F64 is not supported"));
    CHECK_THROWS_WITH(load(model_dir("bad_size", with_header([](std::string& h) {
                          replace(h, R"("ln_f.bias":{"dtype":"F32","shape":[64])", R"("ln_f.bias":{"dtype":"F32","shape":[65])");
                      }))),
                      Catch::Contains("tensor 'ln_f.bias': holds 256 bytes but shape [65] of F32 needs 260"));
}

TEST_CASE("Overlapping and out-of-range data offsets", "[checkpoint]") {
    const std::string two = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    std::string file(8, '\0');
    file[0] = static_cast<char>(two.size());
    CHECK_THROWS_WITH(io::SafetensorsFile(model_dir("overlap", file + two + std::string(16, '\0')) / "model.safetensors"),
                      Catch::Contains("tensors 'a' and 'b' overlap"));
    const std::string far = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
    std::string file2(8, '\0');
    file2[0] = static_cast<char>(far.size());
    CHECK_THROWS_WITH(io::SafetensorsFile(model_dir("far", file2 + far + std::string(8, '\0')) / "model.safetensors"),
                      Catch::Contains("tensor 'a': data_offsets [8, 16] lie outside the data region (8 bytes)"));
}

TEST_CASE("Missing tensors and shapes that disagree with config.json", "[checkpoint]") {
    CHECK_THROWS_WITH(load(model_dir("missing", with_header([](std::string& h) { replace(h, "\"ln_f.bias\"", "\"ln_f.bXas\""); }))),
                      Catch::Contains("model.safetensors: tensor 'ln_f.bias' is missing"));
    CHECK_THROWS_WITH(load(model_dir("transposed", with_header([](std::string& h) {
                          replace(h, R"("h.0.attn.c_attn.weight":{"dtype":"F32","shape":[64,192])",
                                  R"("h.0.attn.c_attn.weight":{"dtype":"F32","shape":[192,64])");
                      }))),
                      Catch::Contains("tensor 'h.0.attn.c_attn.weight' has shape [192, 64] but config.json implies [64, 192]"));
}

TEST_CASE("config.json problems", "[checkpoint]") {
    const std::string weights = read(tiny / "model.safetensors");
    std::string config = read(tiny / "config.json");
    replace(config, "\"n_layer\": 2", "\"n_layer\": 7");  // any shape loads, so the weights run out
    CHECK_THROWS_WITH(load(model_dir("more_layers", weights, config)),
                      Catch::Contains("config.json: the shape it gives (n_layer 7, n_head 4") &&
                          Catch::Contains("but ") && Catch::Contains("model.safetensors holds only"));
    // Refused before the model is allocated: 10^9 layers would ask for ~200 TB.
    replace(config, "\"n_layer\": 7", "\"n_layer\": 1000000000");
    CHECK_THROWS_WITH(load(model_dir("huge", weights, config)), Catch::Contains("model.safetensors holds only"));
    CHECK_THROWS_WITH(load(model_dir("bad_config_json", weights, "{\"n_layer\": ")), Catch::Contains("config.json: not valid JSON"));
    std::string no_heads = read(tiny / "config.json");
    replace(no_heads, "\"n_head\": 4", "\"n_head\": \"four\"");
    CHECK_THROWS_WITH(load(model_dir("bad_heads", weights, no_heads)), Catch::Contains("missing or invalid 'n_head'"));
    const fs::path dir = model_dir("no_config", weights);
    fs::remove(dir / "config.json");
    CHECK_THROWS_WITH(load(dir), Catch::Contains("cannot open") && Catch::Contains("no_config/config.json"));
    const fs::path dir2 = model_dir("no_weights", weights);
    fs::remove(dir2 / "model.safetensors");
    CHECK_THROWS_WITH(load(dir2), Catch::Contains("cannot open") && Catch::Contains("no_weights/model.safetensors"));
}

// Every config.json field that changes the computation is supported or refused by name.
TEST_CASE("config.json fields that change the network are refused by name", "[checkpoint]") {
    const std::string weights = read(tiny / "model.safetensors");
    const std::string base = read(tiny / "config.json");
    const auto with = [&](const std::string& from, const std::string& to) {
        std::string c = base;
        replace(c, from, to);
        return c;
    };
    const auto act = [&](const std::string& value) {
        return with("\"activation_function\": \"gelu_new\"", "\"activation_function\": " + value);
    };
    const auto extra = [&](const std::string& field) { return with("\"n_layer\": 2", field + ", \"n_layer\": 2"); };
    CHECK_THROWS_WITH(load(model_dir("relu", weights, act("\"relu\""))),
                      Catch::Contains("config.json: activation_function 'relu' is not supported"));
    CHECK_THROWS_WITH(load(model_dir("erf_gelu", weights, act("\"gelu\""))),
                      Catch::Contains("activation_function 'gelu' is not supported"));
    CHECK_THROWS_WITH(load(model_dir("act_number", weights, act("3"))),
                      Catch::Contains("'activation_function' must be a string, got 3"));
    CHECK_NOTHROW(load(model_dir("pytorch_tanh", weights, act("\"gelu_pytorch_tanh\""))));
    CHECK_THROWS_WITH(load(model_dir("llama", weights, with("\"model_type\": \"gpt2\"", "\"model_type\": \"llama\""))),
                      Catch::Contains("model_type 'llama' is not GPT-2"));
    CHECK_THROWS_WITH(load(model_dir("unscaled", weights, extra("\"scale_attn_weights\": false"))),
                      Catch::Contains("scale_attn_weights false"));
    CHECK_NOTHROW(load(model_dir("scaled", weights, extra("\"scale_attn_weights\": true"))));
    CHECK_THROWS_WITH(load(model_dir("inverse_idx", weights, extra("\"scale_attn_by_inverse_layer_idx\": true"))),
                      Catch::Contains("scale_attn_by_inverse_layer_idx true is not supported"));
    CHECK_NOTHROW(load(model_dir("upcast", weights, extra("\"reorder_and_upcast_attn\": true"))));
    CHECK_THROWS_WITH(load(model_dir("upcast_text", weights, extra("\"reorder_and_upcast_attn\": \"yes\""))),
                      Catch::Contains("'reorder_and_upcast_attn' must be true or false, got \"yes\""));
    // n_inner: null means 4 * n_embd; another width must match the weights.
    CHECK_NOTHROW(load(model_dir("inner_null", weights, extra("\"n_inner\": null"))));
    CHECK_THROWS_WITH(load(model_dir("inner_128", weights, extra("\"n_inner\": 128"))),
                      Catch::Contains("tensor 'h.0.mlp.c_fc.weight' has shape [64, 256] but config.json implies [64, 128]"));
    // An untied head needs lm_head.weight; a tied one ignores it.
    CHECK_THROWS_WITH(load(model_dir("untied", weights, extra("\"tie_word_embeddings\": false"))),
                      Catch::Contains("tensor 'lm_head.weight' is missing"));
    for (const std::string eps : {"0", "-1e-5", "1e-50", "1e39", "\"1e-5\""}) {
        INFO("layer_norm_epsilon " << eps);
        CHECK_THROWS_WITH(load(model_dir("eps", weights, with("\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": " + eps))),
                          Catch::Contains("'layer_norm_epsilon' must be a positive number that a float can hold"));
    }
    CHECK_THROWS_WITH(load(model_dir("heads", weights, with("\"n_head\": 4", "\"n_head\": 5"))),
                      Catch::Contains("n_embd 64 is not a multiple of n_head 5"));
    CHECK_THROWS_WITH(load(model_dir("array", weights, "[1, 2]")), Catch::Contains("config.json: not a JSON object"));
}

TEST_CASE("A directory or a device where a file belongs is named in the error", "[checkpoint]") {
    const fs::path dir = model_dir("config_is_dir", read(tiny / "model.safetensors"));
    fs::remove(dir / "config.json");
    fs::create_directory(dir / "config.json");
    CHECK_THROWS_WITH(load(dir), Catch::Contains("config_is_dir/config.json: not a regular file"));
    CHECK_THROWS_WITH(HfGpt2Config::read("/dev/zero"), Catch::Contains("/dev/zero: not a regular file"));
}

TEST_CASE("NaN or infinity in a weight is an error naming the tensor", "[checkpoint]") {
    std::string bytes = read(tiny / "model.safetensors");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    const io::SafetensorsFile file(tiny / "model.safetensors");
    const auto& bias = file.info("h.1.mlp.c_fc.bias");
    const std::size_t at = 8 + n + bias.begin + 4 * 17;  // element 17
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::memcpy(bytes.data() + at, &nan, 4);
    CHECK_THROWS_WITH(load(model_dir("nan", bytes)), Catch::Contains("tensor 'h.1.mlp.c_fc.bias' holds NaN at element 17"));
    std::memcpy(bytes.data() + at, &inf, 4);
    CHECK_THROWS_WITH(load(model_dir("inf", bytes)), Catch::Contains("tensor 'h.1.mlp.c_fc.bias' holds an infinity"));
}

// A checkpoint that shrinks while it loads: a FormatError naming the file, not SIGBUS (the
// reads are positioned reads, not a memory map). The file is cut after it was opened and its
// header read, before the weights are.
TEST_CASE("A checkpoint truncated while it loads is an error, not a crash", "[checkpoint]") {
    const fs::path dir = model_dir("shrinking", read(tiny / "model.safetensors"));
    const io::SafetensorsFile file(dir / "model.safetensors");
    fs::resize_file(dir / "model.safetensors", 1000);
    Cpu cpu(1);
    GPT2<GPT2TestTiny, Cpu> model(cpu);
    CHECK_THROWS_WITH(model.load(file), Catch::Contains("shrinking/model.safetensors: the file ends at byte") &&
                                            Catch::Contains("truncated or changed while being read"));
}
