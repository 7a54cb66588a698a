// The Llama family (llama, qwen2, qwen3) on the CPU against the float64 numpy reference
// (tools/llama_reference.py), on random checkpoints built by tools/make_llama_fixtures.sh (ctest
// fixture `llama_fixtures`): each from its Hugging Face directory (rope over halves) and from
// the GGUF file llama.cpp's converter would write (for llama: q and k rows permuted, rope over
// adjacent pairs; Llama 3's scaling as rope_freqs.weight). The fixtures exercise grouped-query
// (2 query heads per key/value head) and multi-query attention, an untied head, q/k/v biases,
// per-head q/k norms with head_dim apart from C / H, and Llama 3's rope scaling.
//
// Tolerances as GPT-2's (test_gpt2.cpp): all-position logits within 1e-4 max abs of float64
// (float accumulation over <= 128-term products; a permuted row, a missing bias or the wrong
// rope pairing moves logits by > 1e-2); decode steps and batched steps likewise against the
// reference. Stored formats against the reference over the weights each format holds: products
// on float activations within 1e-4 (measured 6e-6 to 1.1e-5 with the portable kernels); on
// 8-bit activations (Q8_0 and Q4_0 decode steps, and prompts where the CPU has VNNI, as
// llama.cpp computes them) within 5e-2 of the largest |logit|: measured 3.1% (llama, Q8_0),
// 2.4% (llama, Q4_0), 2.3% (qwen2, Q8_0) on these random weights, whose large embeddings and
// biases leave no outliers to hide behind; a wrong block layout or scale moves logits by their
// own size.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>  // getpid

#include "allocation_counter.hpp"
#include "llama_fixtures.hpp"

#include <tessera/backend/cpu.hpp>
#include <tessera/io/read_only_file.hpp>
#include <tessera/models/kl_divergence.hpp>
#include <tessera/models/load_llama.hpp>
#include <tessera/models/open_tokenizer.hpp>
#include <tessera/models/perplexity.hpp>
#include <tessera/models/write_llama_gguf.hpp>

using namespace tessera;

namespace {

using test::llama::fixtures;
using test::llama::fixture_tokens;
using test::llama::reference_logits;
const std::string trained_llama = std::string(TESSERA_TEST_DATA_DIR) + "/fortunes-llama";

// The largest |got[i] - want[offset + i]|, and the largest |want| (at least 1).
struct Difference {
    double worst = 0, scale = 1;
};
Difference compare(std::span<const float> got, const std::vector<double>& want, std::size_t offset = 0) {
    Difference d;
    for (std::size_t i = 0; i < got.size(); ++i) {
        d.worst = std::max(d.worst, std::fabs(got[i] - want[offset + i]));
        d.scale = std::max(d.scale, std::fabs(want[offset + i]));
    }
    return d;
}

// `good` with its first `from` replaced by `to`, written to `file` (a bad-input variant of a fixture).
void write_edited(const std::string& good, const std::string& from, const std::string& to, const std::filesystem::path& file) {
    std::string text = good;
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    std::ofstream(file) << text;
}

// The model at `path`'s logits at every position of the fixture tokens against `want`: within
// 1e-4.
void check_all_positions(const std::string& path, const std::vector<double>& want) {
    INFO(path);
    Cpu cpu(2);
    const auto model = open_llama(cpu, path);
    const auto got = model->prefill_all(fixture_tokens());
    REQUIRE(got.size() == want.size());
    const Difference d = compare(got, want);
    INFO("max abs difference " << d.worst << ", largest |logit| " << d.scale);
    CHECK(d.worst <= 1e-4);
}

}  // namespace

TEST_CASE("Llama family: all-position logits match the float64 reference", "[llama]") {
    const std::string config = GENERATE(as<std::string>{}, "llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen2-yarn-tiny");
    const std::string source = GENERATE(as<std::string>{}, "hf", "gguf");
    check_all_positions(source == "hf" ? fixtures + "/" + config : fixtures + "/" + config + "-f32.gguf", reference_logits(config));
}

TEST_CASE("Llama family: decoding with the KV cache matches the reference at every step", "[llama]") {
    const std::string config = GENERATE(as<std::string>{}, "llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen2-yarn-tiny");
    INFO(config);
    const auto tokens = fixture_tokens();
    const auto want = reference_logits(config);
    Cpu cpu(2);
    const auto model = open_llama(cpu, fixtures + "/" + config + "-f32.gguf");
    const std::size_t v = model->vocabulary_size(), prompt = 5;
    Difference d = compare(model->prefill(std::span(tokens).first(prompt)), want, (prompt - 1) * v);
    for (std::size_t i = prompt; i < tokens.size(); ++i) {
        const Difference step = compare(model->decode(tokens[i]), want, i * v);
        d.worst = std::max(d.worst, step.worst);
    }
    INFO("max abs difference " << d.worst);
    CHECK(d.worst <= 1e-4);
}

// Two sequences in one step each over its own cache (one mid-prompt, one decoding), with a bf16
// cache for a third: the f32 ones within 1e-4 of the reference; the bf16 one within 1e-2 of the
// largest |logit| (keys and values rounded to 8 significant bits).
TEST_CASE("Llama family: batched steps over sequences of their own match the reference", "[llama]") {
    const std::string config = GENERATE(as<std::string>{}, "llama-tiny", "qwen2-tiny", "qwen3-tiny");
    INFO(config);
    const auto tokens = fixture_tokens();
    const auto want = reference_logits(config);
    Cpu cpu(2);
    const auto model = open_llama(cpu, fixtures + "/" + config + "-f32.gguf");
    const std::size_t v = model->vocabulary_size();
    auto a = model->new_sequence(), b = model->new_sequence();
    model->use_kv_cache(KvPrecision::bf16);
    auto c = model->new_sequence();
    const std::span<const TokenId> all(tokens);
    std::vector<SequenceTokens> step{{a.get(), all.first(7)}, {b.get(), all.first(3)}, {c.get(), all.first(4)}};
    auto logits = model->step(step);
    CHECK(compare(logits.subspan(0, v), want, 6 * v).worst <= 1e-4);
    CHECK(compare(logits.subspan(v, v), want, 2 * v).worst <= 1e-4);
    // then a decodes one token, b prefills four more, c decodes one
    step = {{a.get(), all.subspan(7, 1)}, {b.get(), all.subspan(3, 4)}, {c.get(), all.subspan(4, 1)}};
    logits = model->step(step);
    CHECK(compare(logits.subspan(0, v), want, 7 * v).worst <= 1e-4);
    CHECK(compare(logits.subspan(v, v), want, 6 * v).worst <= 1e-4);
    const Difference bf16_cache = compare(logits.subspan(2 * v, v), want, 4 * v);
    INFO("bf16 cache: max abs difference " << bf16_cache.worst << ", largest |logit| " << bf16_cache.scale);
    CHECK(bf16_cache.worst <= 1e-2 * bf16_cache.scale);
}

// A q8_0 cache holds each head in blocks of 32 values: qwen3-tiny's heads of 32 run with it
// (each key and value within 1/254 of its block's largest magnitude: the logits within 2e-2 of
// the largest |logit|, measured 8.6e-3 and 1.0e-2), the others' heads of 16 are refused naming head_dim.
TEST_CASE("Llama family: a q8_0 KV cache where head_dim is a multiple of 32, refused elsewhere", "[llama][kv]") {
    const auto tokens = fixture_tokens();
    Cpu cpu(2);
    for (const std::string config : {"llama-tiny", "qwen2-tiny"}) {
        const auto model = open_llama(cpu, fixtures + "/" + config + "-f32.gguf");
        CHECK_THROWS_WITH(model->use_kv_cache(KvPrecision::q8_0), Catch::Contains("head_dim is 16"));
        CHECK(model->kv_cache() == KvPrecision::f32);
    }
    const auto want = reference_logits("qwen3-tiny");
    const auto model = open_llama(cpu, fixtures + "/qwen3-tiny-f32.gguf");
    const std::size_t v = model->vocabulary_size();
    model->use_kv_cache(KvPrecision::q8_0);
    auto a = model->new_sequence(), b = model->new_sequence();
    const std::span<const TokenId> all(tokens);
    std::vector<SequenceTokens> step{{a.get(), all.first(7)}, {b.get(), all.first(3)}};
    auto logits = model->step(step);
    step = {{a.get(), all.subspan(7, 1)}, {b.get(), all.subspan(3, 4)}};
    logits = model->step(step);
    for (const auto& [at, position] : {std::pair<std::size_t, std::size_t>{0, 7}, {v, 6}}) {
        const Difference d = compare(logits.subspan(at, v), want, position * v);
        INFO("q8_0 cache at position " << position << ": max abs difference " << d.worst << ", largest |logit| " << d.scale);
        CHECK(d.worst <= 2e-2 * d.scale);
        CHECK(d.worst > 0);  // rounded
    }
}

// Decoding allocates nothing, as GPT-2's (test_gpt2.cpp), with grouped-query attention too: the
// model reserves attention's scratch for a group of query heads per key/value head (llama-tiny
// and qwen3-tiny: 2, qwen2-tiny: 4), in each cache precision (bf16 and q8_0 widen keys and values
// in scratch).
TEST_CASE("Llama family: decode steps allocate nothing, grouped-query attention included", "[llama][kv]") {
    for (const auto& [config, kv] : {std::pair<std::string, KvPrecision>{"llama-tiny", KvPrecision::f32},
                                     {"llama-tiny", KvPrecision::bf16}, {"qwen2-tiny", KvPrecision::f32},
                                     {"qwen3-tiny", KvPrecision::q8_0}}) {
        INFO(config << ", cache " << static_cast<int>(kv));
        Cpu cpu(2);  // a backend of its own: no scratch grown by another model
        const auto model = open_llama(cpu, fixtures + "/" + config + "-f32.gguf");
        model->use_kv_cache(kv);
        const std::vector<TokenId> prompt{1, 2, 3};
        model->prefill(prompt);
        model->decode(4);
        test::allocations = 0;
        test::counting_allocations = true;
        for (TokenId t = 5; model->position() < model->context_length(); ++t) model->decode(t % 50);
        test::counting_allocations = false;
        CHECK(test::allocations == 0);
    }
}

TEST_CASE("Llama family: stored formats match the reference of the weights each holds", "[llama][formats]") {
    const std::string config = GENERATE(as<std::string>{}, "llama-tiny", "qwen2-tiny", "qwen3-tiny");
    const auto tokens = fixture_tokens();
    for (const WeightFormatId format : {WeightFormatId::bf16, WeightFormatId::q8_0, WeightFormatId::q4_0}) {
        const std::string name(weight_format_name(format));
        INFO(config << " as " << name);
        const auto want = reference_logits(config, "logits-" + name + ".f64");
        Cpu cpu(2);
        // q8_0 from the file's own blocks; the others quantized from f32 as they load.
        const auto model = open_llama(cpu, fixtures + "/" + config + (format == WeightFormatId::q8_0 ? "-q8_0.gguf" : "-f32.gguf"),
                                      nullptr, format);
        CHECK(model->weight_format() == name);
        const std::size_t v = model->vocabulary_size();
        const Difference all = compare(model->prefill_all(tokens), want);
        INFO("all positions: max abs difference " << all.worst << ", largest |logit| " << all.scale);
        const bool rounded = with_weight_type(format, [&]<class W>() {
            return cpu::arranged_activation_precision<W>(tokens.size()) != cpu::ActivationPrecision::f32;
        });
        CHECK(all.worst <= (rounded ? 5e-2 * all.scale : 1e-4));
        model->reset();
        model->prefill(std::span(tokens).first(8));
        double worst = 0;
        for (std::size_t i = 8; i < tokens.size(); ++i) worst = std::max(worst, compare(model->decode(tokens[i]), want, i * v).worst);
        INFO("decode steps: max abs difference " << worst);
        // One row: 8-bit activations for Q8_0 / Q4_0; bf16-rounded ones for bf16 with AVX-512 BF16
        // (2^-9 relative per input: under 1% of the largest logit on the Intel Xeons this ran on
        // first, 1.02% on an AMD EPYC), else float activations.
        const bool int8 = format != WeightFormatId::bf16;
        const bool bf16_rows = with_weight_type(format, [&]<class W>() {
            return cpu::arranged_activation_precision<W>(1) == cpu::ActivationPrecision::bf16;
        });
        CHECK(worst <= (int8 ? 5e-2 : bf16_rows ? 2e-2 : 1e-2) * all.scale);
    }
}

TEST_CASE("Llama family: a bf16 safetensors checkpoint loads as float", "[llama]") {
    check_all_positions(fixtures + "/llama-tiny-bf16", reference_logits("llama-tiny-bf16"));
}

// A checkpoint in shards (model.safetensors.index.json and its files, as transformers'
// save_pretrained writes one past its size limit) is the same weights as in one file.
TEST_CASE("Llama family: a sharded safetensors checkpoint loads as the one-file one", "[llama]") {
    check_all_positions(fixtures + "/llama-tiny-sharded", reference_logits("llama-tiny"));
    const auto files = model_files(fixtures + "/llama-tiny-sharded");  // what writing programs never overwrite
    CHECK(std::count_if(files.begin(), files.end(), [](const auto& f) { return f.filename().string().starts_with("model-0000"); }) == 3);
}

// A bad index is refused naming the index and what is wrong, before a weight is read.
TEST_CASE("Llama family: a bad safetensors index is refused naming it", "[llama][errors]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("tessera_llama_shards_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(fixtures + "/llama-tiny-sharded", dir);
    const std::string good = io::read_whole_file(dir / "model.safetensors.index.json", 1 << 20);
    Cpu cpu(1);
    const auto refused = [&](const std::string& from, const std::string& to, const std::string& message) {
        write_edited(good, from, to, dir / "model.safetensors.index.json");
        INFO(to);
        CHECK_THROWS_WITH(open_llama(cpu, dir), Catch::Contains(message) && Catch::Contains("model.safetensors.index.json"));
    };
    const std::string first = "\"model.embed_tokens.weight\": \"model-00001-of-00003.safetensors\"";
    refused(first, "\"model.embed_tokens.weight\": \"../model-00001-of-00003.safetensors\"", "not the name of a file in the model's directory");
    refused(first, "\"model.embed_tokens.weight\": \"model-00009-of-00009.safetensors\"", "shard 'model-00009-of-00009.safetensors' (of tensor 'model.embed_tokens.weight') does not exist");
    refused(first, "\"model.embed_tokens.weight\": \"model-00003-of-00003.safetensors\"", "puts tensor 'model.embed_tokens.weight' in");
    refused("\"weight_map\"", "\"weights\"", "no \"weight_map\" object");
    refused(first, "\"model.embed_tokens.weight\": 7", "weight_map[\"model.embed_tokens.weight\"] is 7, not a file name");
    fs::remove_all(dir);
}

// quantize's GGUF files of a Llama-family model hold the tensors llama.cpp's converter writes
// (tools/llama_reference.py gguf: the converter's names, "llama"'s q/k permutation, GGML's
// reference quantization), byte for byte, from the Hugging Face directory and from the GGUF
// file alike (a GGUF file's q/k rows are not permuted twice); Llama 3's rope_freqs within float
// rounding (the reference computes the factors from float32 frequencies). The metadata
// reads back as the same shape.
namespace {
// got's tensors equal want's: names, types, shapes and bytes (rope_freqs within float rounding).
void check_same_tensors(const io::GgufFile& got, const io::GgufFile& want) {
    REQUIRE(got.tensors().size() == want.tensors().size());
    for (const io::GgufTensorInfo& w : want.tensors()) {
        INFO(w.name);
        const io::GgufTensorInfo* g = got.find_tensor(w.name);
        REQUIRE(g != nullptr);
        CHECK(io::ggml_type_name(g->type) == io::ggml_type_name(w.type));
        CHECK(g->ne == w.ne);
        std::vector<std::byte> a(g->bytes), b(w.bytes);
        got.read(*g, a);
        want.read(w, b);
        if (w.name != "rope_freqs.weight") {
            CHECK(a == b);
            continue;
        }
        std::vector<float> x(w.elements()), y(w.elements());
        got.read_float_range(*g, 0, x);
        want.read_float_range(w, 0, y);
        for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i] - y[i]) <= 1e-6f * std::fabs(y[i]));
    }
}
}  // namespace

TEST_CASE("Llama family: quantize writes the converter's tensors", "[llama][quantize]") {
    namespace fs = std::filesystem;
    const std::string config = GENERATE(as<std::string>{}, "llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen2-yarn-tiny");
    const std::string format = GENERATE(as<std::string>{}, "f32", "q8_0");
    const std::string source = GENERATE(as<std::string>{}, "directory", "gguf");
    if (source == "gguf" && format == "f32") return;  // the f32 file is the source then
    INFO(config << " as " << format << " from the " << source);
    const fs::path out = fs::temp_directory_path() / ("tessera_llama_quantize_" + std::to_string(::getpid()) + ".gguf");
    {
        const LlamaFiles files(fixtures + "/" + config + (source == "gguf" ? "-f32.gguf" : ""));
        write_llama_gguf(files, nullptr, *GgufFileFormat::named(format), out, config);
    }
    const io::GgufFile got(out), want(fixtures + "/" + config + "-" + format + ".gguf");
    LlamaShape got_shape = gguf_llama_shape(got), want_shape = gguf_llama_shape(want);
    got_shape.rope.scaling.pair_factors.clear();  // compared by check_same_tensors, within float rounding
    want_shape.rope.scaling.pair_factors.clear();
    CHECK(got_shape == want_shape);
    check_same_tensors(got, want);
    fs::remove(out);
}

TEST_CASE("Llama family: quantize carries a directory's chat template into the GGUF file, and a GGUF file's on", "[llama][quantize][chat]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("tessera_llama_chat_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(std::string(TESSERA_TEST_DATA_DIR) + "/fortunes-smollm", dir, fs::copy_options::recursive);
    const std::string source = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
    std::ofstream(dir / "chat_template.jinja") << source;
    {
        const LlamaFiles files(dir);
        const auto tokenizer = open_any_tokenizer(dir);
        write_llama_gguf(files, tokenizer.get(), *GgufFileFormat::named("q8_0"), dir / "a.gguf", "chat");
    }
    {
        const LlamaFiles files(dir / "a.gguf");
        write_llama_gguf(files, nullptr, *GgufFileFormat::named("q8_0"), dir / "b.gguf", "chat");
    }
    for (const char* file : {"a.gguf", "b.gguf"}) {
        INFO(file);
        const auto chat = open_chat_template(dir / file);
        REQUIRE(chat);
        CHECK(chat->source() == source);
        CHECK(chat->eos_token() == "<|im_end|>");
    }
    fs::remove_all(dir);
}

// llama-quantize's mixes: each tensor's type as its llama_tensor_get_type picks it (the head Q6_K,
// attn_v and ffn_down Q6_K in use_more_bits's layers, the rest the mix's type; Q8_0, Q5_0 and
// Q5_1 where rows are not whole super-blocks), as the reference writer (tools/
// quantize_reference.py's independent llama_mix_type and quantizers) writes them, byte for byte;
// and the file runs: its logits near the float64 reference over the weights it holds (widened to
// float as they load: f32 products).
TEST_CASE("Llama family: quantize writes llama-quantize's K-quant mixes and they run", "[llama][quantize]") {
    namespace fs = std::filesystem;
    const std::string config = GENERATE(as<std::string>{}, "llama-tiny", "qwen2-tiny", "llama-256-tiny");
    const std::string mix = GENERATE(as<std::string>{}, "q4_k_m", "q5_k_m", "q6_k");
    INFO(config << " as " << mix);
    const fs::path out = fs::temp_directory_path() / ("tessera_llama_mix_" + std::to_string(::getpid()) + ".gguf");
    {
        const LlamaFiles files(fixtures + "/" + config);
        write_llama_gguf(files, nullptr, *GgufFileFormat::named(mix), out, config);
    }
    const io::GgufFile got(out), want(fixtures + "/" + config + "-" + mix + ".gguf");
    CHECK(gguf_llama_shape(got) == gguf_llama_shape(want));
    check_same_tensors(got, want);
    if (config == "llama-256-tiny") {  // the mix's own types, not fallbacks
        const auto type = [&](const std::string& name) { return std::string(io::ggml_type_name(got.tensor(name).type)); };
        const std::string own = mix == "q4_k_m" ? "Q4_K" : mix == "q5_k_m" ? "Q5_K" : "Q6_K";
        CHECK(type("output.weight") == "Q6_K");
        CHECK(type("token_embd.weight") == own);
        CHECK(type("blk.1.attn_q.weight") == own);
        CHECK(type("blk.1.attn_v.weight") == own);
        CHECK(type("blk.3.attn_v.weight") == "Q6_K");
        CHECK(type("blk.6.ffn_down.weight") == "Q6_K");
        CHECK(type("blk.5.ffn_down.weight") == own);
    }
    {
        Cpu cpu(2);
        const auto model = open_llama(cpu, out.string(), nullptr, WeightFormatId::f32);  // (all-Q8_0 files run Q8_0 by default)
        const Difference d = compare(model->prefill_all(fixture_tokens()), reference_logits(config, "logits-" + mix + ".f64"));
        INFO("max abs difference " << d.worst << ", largest |logit| " << d.scale);
        // f32 arithmetic: the 8-layer llama-256-tiny's own f32 checkpoint is 2.0e-4 (1.0e-5 of its
        // largest logit) from its reference; a wrong type or block moves logits by 1e-2 and more.
        CHECK(d.worst <= 2e-5 * d.scale);
    }
    {
        // As stored: each matrix in its file's type (KQuantMix; a file all Q8_0, as a q6_k mix of
        // narrow rows is, runs as Q8_0), multiplied with 8-bit activations per block of 32.
        Cpu cpu(2);
        const auto model = open_llama(cpu, out.string());
        const bool all_q8_0 = io::GgufFile(out).tensor("blk.0.attn_q.weight").type == io::GgmlType::q8_0;
        CHECK(model->weight_format() == (all_q8_0 ? "q8_0" : "k-quant mix"));
        const std::vector<TokenId> tokens = fixture_tokens();
        const std::vector<double> want = reference_logits(config, "logits-" + mix + ".f64");
        const Difference all = compare(model->prefill_all(tokens), want);
        model->reset();
        model->prefill(std::span(tokens).first(8));
        const std::size_t v = model->vocabulary_size();
        double worst = 0;
        for (std::size_t i = 8; i < tokens.size(); ++i) worst = std::max(worst, compare(model->decode(tokens[i]), want, i * v).worst);
        INFO("as stored: all positions " << all.worst << ", decode steps " << worst << ", largest |logit| " << all.scale);
        // The trained models: within 5% of the largest logit (measured 0.8-3.1%; 8-bit activations,
        // as Q8_0 / Q4_0 models have). llama-256-tiny's random 8 layers amplify any rounding: the
        // Q8_0 model of its own f32 checkpoint is 35% from it, so only a gross error shows there
        // (its Q4_K / Q5_K products are checked exactly in test_weight_formats, and at the model
        // level on GPT-2's wide-8 in test_gpt2_gguf).
        const double bound = config == "llama-256-tiny" ? 0.5 : 5e-2;
        CHECK(all.worst <= bound * all.scale);
        CHECK(worst <= bound * all.scale);
    }
    fs::remove(out);
}

// What tessera does not run is refused by name, before anything is allocated.
TEST_CASE("Llama family: unsupported GGUF metadata is refused naming the key", "[llama][errors]") {
    Cpu cpu(1);
    const auto refused = [&](const std::string& name, const std::string& message) {
        INFO(name);
        CHECK_THROWS_WITH(open_llama(cpu, fixtures + "/bad/" + name + ".gguf"), Catch::Contains(message));
    };
    refused("moe", "'llama.expert_count' is set: mixtures of experts are not supported");
    refused("sliding-window", "'llama.attention.sliding_window' is set: sliding-window attention");
    refused("longrope", "'llama.rope.scaling.type' is 'longrope'");
    refused("yarn-log-multiplier", "'llama.rope.scaling.yarn_log_multiplier' is 0.1");
    refused("partial-rope", "'llama.rope.dimension_count' is 8: rotary positions over part of a head");
    refused("falcon", "general.architecture is 'falcon'");
    refused("heads", "4 query heads are not a multiple of the 3 key/value heads");
}

TEST_CASE("Llama family: an unsupported config.json is refused naming the field", "[llama][errors]") {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tessera_llama_config_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(fixtures + "/llama-tiny/model.safetensors", dir / "model.safetensors",
                               std::filesystem::copy_options::overwrite_existing);
    const std::string good = io::read_whole_file(fixtures + "/llama-tiny/config.json", 1 << 20);
    Cpu cpu(1);
    const auto refused = [&](const std::string& from, const std::string& to, const std::string& message) {
        write_edited(good, from, to, dir / "config.json");
        INFO(to);
        CHECK_THROWS_WITH(open_llama(cpu, dir), Catch::Contains(message));
    };
    refused("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act \"gelu\" is not supported");
    refused("\"rope_type\": \"llama3\"", "\"rope_type\": \"longrope\"", "rope_scaling's rope_type \"longrope\" is not supported");
    // YaRN takes its own keys only (Llama 3's low_freq_factor here; DeepSeek's mscale alike)
    refused("\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\"", "rope_scaling.low_freq_factor 1.0 is not supported with yarn");
    refused("\"hidden_act\": \"silu\"", "\"hidden_act\": \"silu\", \"sliding_window\": 4096", "sliding_window 4096");
    refused("\"model_type\": \"llama\"", "\"model_type\": \"gemma\"", "model_type 'gemma' is not llama, mistral, qwen2 or qwen3");
    refused("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1", "the block count is 1 but the checkpoint holds tensors of 2 blocks");
    std::filesystem::remove_all(dir);
}

// A Llama trained on Debian's fortunes (tests/data/fortunes-llama, tools/train_small_gpt2.py
// --arch llama): its F16 checkpoint against the float64 reference over the same weights
// (tools/llama_reference.py, ctest fixture `llama_fixtures`), and what each weight format costs
// against f32 on held-out text, measured as llama.cpp's perplexity --kl-divergence reports it,
// with GPT-2's bounds (test_quality.cpp): bf16 top-1 agreement >= 99%, Q8_0 mean KLD <= 0.002,
// Q4_0 mean KLD <= 0.05, and more bits cost less. Measured values in bench/RESULTS.md.

TEST_CASE("Trained Llama: all-position logits match the float64 reference", "[llama][trained]") {
    check_all_positions(trained_llama, reference_logits(".", "fortunes-llama-logits.f64"));
}

TEST_CASE("Trained Llama: each format's distance from f32 on held-out text", "[llama][trained][quality]") {
    // The held-out fortunes, the same for every model trained on them (tools/train_small_gpt2.py).
    const std::string text = io::read_whole_file(std::string(TESSERA_TEST_DATA_DIR) + "/fortunes-gpt2/heldout.txt", std::size_t{1} << 24);
    std::vector<TokenId> ids = open_tokenizer(trained_llama).encode(text);
    ids.resize(std::min<std::size_t>(ids.size(), 4096));
    Cpu cpu(2);
    const auto base = open_llama(cpu, trained_llama);
    std::vector<std::vector<float>> base_logits;
    evaluate_perplexity(*base, ids, base->context_length(),
                        [&](std::size_t, std::span<const float> l) { base_logits.emplace_back(l.begin(), l.end()); });
    const auto cost = [&](WeightFormatId format, KvPrecision kv = KvPrecision::f32) {
        const auto model = open_llama(cpu, trained_llama, nullptr, format);
        model->use_kv_cache(kv);
        DistributionComparison c;
        evaluate_perplexity(*model, ids, model->context_length(), [&](std::size_t t, std::span<const float> logits) {
            if (t + 1 < ids.size()) c.add(base_logits[t], logits);
        });
        INFO(weight_format_name(format) << " + " << kv_precision_name(kv) << " KV: mean KLD " << c.mean() << ", top-1 "
                                        << c.top1_agreement());
        std::printf("trained llama, %s + %s KV cache: mean KLD %.6f, top-1 agreement %.4f\n",
                    std::string(weight_format_name(format)).c_str(), std::string(kv_precision_name(kv)).c_str(), c.mean(),
                    c.top1_agreement());
        return std::pair(c.mean(), c.top1_agreement());
    };
    const auto [bf16_kl, bf16_top1] = cost(WeightFormatId::bf16);
    const auto [q8_kl, q8_top1] = cost(WeightFormatId::q8_0);
    const auto [q4_kl, q4_top1] = cost(WeightFormatId::q4_0);
    CHECK(bf16_top1 >= 0.99);
    CHECK(q8_kl <= 0.002);
    CHECK(q4_kl <= 0.05);
    CHECK(bf16_kl < q4_kl);
    CHECK(q8_kl < q4_kl);
    CHECK(q4_kl > 0);
    // The KV cache's formats over f32 weights: each costs something, less than the same
    // format's weights do (a cache holds fewer values, and each is read by one head).
    const auto [kv_bf16_kl, kv_bf16_top1] = cost(WeightFormatId::f32, KvPrecision::bf16);
    const auto [kv_q8_kl, kv_q8_top1] = cost(WeightFormatId::f32, KvPrecision::q8_0);
    CHECK(kv_bf16_top1 >= 0.99);
    CHECK(kv_q8_top1 >= 0.99);
    CHECK(0 < kv_bf16_kl);
    CHECK(kv_bf16_kl < bf16_kl);
    CHECK(0 < kv_q8_kl);
    CHECK(kv_q8_kl < q8_kl);
    (void)q8_top1;
    (void)q4_top1;
}
