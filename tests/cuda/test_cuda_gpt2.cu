// GPT2<Config, Cuda> against GPT2<Config, Cpu> on the same checkpoints (the random HF-layout
// fixtures of tools/make_gpt2_fixtures.sh, the 124M shape included). Without a device every
// test is skipped (exit code 77).
//
// Tolerances: all-position logits within 1e-3 max abs of the CPU backend and of the float64
// reference (both fp32 with different summation orders: ~1e-6 on the small fixtures, a few
// 1e-5 on the 124M shape; a wrong layout or a dropped term moves logits by > 1e-2). Greedy
// tokens identical. KV-cache decoding against full recomputation within 1e-5 of the largest
// logit magnitude, as on the CPU (decode uses the skinny kernel, prefill cuBLAS: different
// summation orders, so agreement is a few float ulps of the logits). A decode step replayed as
// a CUDA graph equals the same step launched kernel by kernel exactly: the same kernels on the
// same data.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <tessera/backend/cuda/cuda.cuh>
#include <tessera/models/load_gpt2.hpp>  // HfGpt2Config
#include <tessera/models/perplexity.hpp>
#include <tessera/tessera.hpp>

#include "../gpt2_fixtures.hpp"

using namespace tessera;

namespace {

Cpu& host() {
    static Cpu instance(2);
    return instance;
}
Cuda& device() {
    static Cuda instance;
    return instance;
}

// check(cpu_model, cuda_model) on the fixture, both loaded from the same checkpoint as the
// run-time-shaped GPT2<GPT2Dynamic, B> (one instantiation per backend serves every fixture).
template <class F>
void with_models(const std::string& name, F&& check) {
    const std::string dir = test::gpt2_fixtures + "/" + name;
    const io::SafetensorsFile weights(dir + "/model.safetensors");
    const HfGpt2Config cfg = HfGpt2Config::read(dir + "/config.json");
    GPT2<GPT2Dynamic, Cpu> cpu(host(), cfg.shape);
    GPT2<GPT2Dynamic, Cuda> gpu(device(), cfg.shape);
    cpu.load(weights, cfg.layer_norm_epsilon, cfg.tie_word_embeddings);
    gpu.load(weights, cfg.layer_norm_epsilon, cfg.tie_word_embeddings);
    check(cpu, gpu);
}

template <class A, class B>
double max_abs_difference(const A& a, const B& b) {
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    return worst;
}

template <class Span>
TokenId argmax(const Span& logits) {
    return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

TEST_CASE("CUDA all-position logits match the CPU backend and the float64 reference", "[cuda][gpt2]") {
    const std::string name = GENERATE(as<std::string>{}, "tiny", "tiny-prefixed", "odd-heads", "vocab", "free", "gpt2-124m");
    INFO("fixture " << name);
    const auto tokens = test::fixture_tokens();
    const auto reference = test::reference_logits(name);
    with_models(name, [&](auto& cpu, auto& gpu) {
        const auto want = cpu.prefill_all(tokens);
        const auto got = gpu.prefill_all(tokens);
        REQUIRE(got.size() == want.size());
        REQUIRE(got.size() == reference.size());
        const double vs_cpu = max_abs_difference(got, want), vs_reference = max_abs_difference(got, reference);
        INFO("max abs difference: " << vs_cpu << " vs CPU, " << vs_reference << " vs float64");
        CHECK(vs_cpu <= 1e-3);
        CHECK(vs_reference <= 1e-3);
        // The last position through prefill (skinny head product) agrees too.
        gpu.reset();
        const auto last = gpu.prefill(tokens);
        const std::size_t v = last.size();
        CHECK(max_abs_difference(last, std::vector<float>(want.end() - static_cast<std::ptrdiff_t>(v), want.end())) <= 1e-3);
    });
}

TEST_CASE("CUDA greedy decoding gives the CPU's tokens for 64 steps", "[cuda][gpt2]") {
    const std::string name = GENERATE(as<std::string>{}, "tiny", "odd-heads", "gpt2-124m");
    INFO("fixture " << name);
    with_models(name, [&](auto& cpu, auto& gpu) {
        std::vector<TokenId> cpu_tokens{1, 2, 3}, gpu_tokens{1, 2, 3};
        auto cpu_logits = cpu.prefill(cpu_tokens);
        auto gpu_logits = gpu.prefill(gpu_tokens);
        const std::size_t steps = std::min<std::size_t>(64, cpu.context_length() - 3);
        for (std::size_t i = 0; i < steps; ++i) {
            cpu_tokens.push_back(argmax(cpu_logits));
            gpu_tokens.push_back(argmax(gpu_logits));
            if (cpu.position() == cpu.context_length()) break;
            cpu_logits = cpu.decode(cpu_tokens.back());
            gpu_logits = gpu.decode(gpu_tokens.back());
        }
        CHECK(gpu_tokens == cpu_tokens);
        if (name != "gpt2-124m") {  // the float64 reference's continuation, where one was made
            const auto want = test::reference_greedy(name);
            CHECK(std::vector<TokenId>(gpu_tokens.begin(), gpu_tokens.begin() + static_cast<std::ptrdiff_t>(want.size())) == want);
        }
    });
}

// Greedy decoding with the argmax on the device (one id copied back per token) picks what the
// CPU's logits pick.
TEST_CASE("CUDA greedy tokens found on the device equal the CPU's", "[cuda][gpt2][argmax]") {
    with_models("gpt2-124m", [&](auto& cpu, auto& gpu) {
        std::vector<TokenId> want{1, 2, 3}, got{1, 2, 3};
        want.push_back(argmax(cpu.prefill(want)));
        got.push_back(*gpu.prefill_argmax(got));
        for (int i = 0; i < 32; ++i) {
            want.push_back(argmax(cpu.decode(want.back())));
            const auto id = gpu.prefill_argmax(std::span<const TokenId>(&got.back(), 1));
            REQUIRE(id.has_value());
            got.push_back(*id);
        }
        CHECK(got == want);
        CHECK(gpu.last_logits().size() == gpu.vocabulary_size());
    });
}

TEST_CASE("CUDA KV-cache decoding equals full recomputation", "[cuda][gpt2]") {
    const std::string name = GENERATE(as<std::string>{}, "tiny", "odd-heads", "gpt2-124m");
    const auto tokens = test::fixture_tokens();
    with_models(name, [&](auto&, auto& gpu) {
        const auto r = test::decode_vs_full_recomputation(gpu, tokens, 5);
        INFO("fixture " << name << ", max abs difference " << r.worst << ", largest |logit| " << r.scale);
        CHECK(r.worst <= 1e-5 * r.scale);
        CHECK(gpu.position() == tokens.size());
    });
}

TEST_CASE("A decode step replayed as a CUDA graph equals the kernels launched one by one", "[cuda][gpt2]") {
    const auto tokens = test::fixture_tokens();
    with_models("gpt2-124m", [&](auto&, auto& gpu) {
        const auto decode_all = [&](bool graphs) {
            device().use_graphs(graphs);
            gpu.reset();
            std::vector<float> out;
            auto logits = gpu.prefill(std::span<const TokenId>(tokens.data(), 2));
            for (std::size_t i = 2; i < tokens.size(); ++i) {
                logits = gpu.decode(tokens[i]);
                out.insert(out.end(), logits.begin(), logits.end());
            }
            return out;
        };
        const auto with_graphs = decode_all(true);
        const auto without = decode_all(false);
        device().use_graphs(true);
        CHECK(with_graphs == without);
    });
}

TEST_CASE("Errors inside a captured decode step leave the CUDA model usable", "[cuda][gpt2][errors]") {
    with_models("tiny", [&](auto& cpu, auto& gpu) {
        const std::vector<TokenId> prompt{1, 2, 3};
        gpu.prefill(prompt);
        cpu.prefill(prompt);
        // The id check runs inside the captured step: the capture is abandoned, nothing advances.
        CHECK_THROWS_WITH(gpu.decode(512), "token id 512 at position 0 is outside the model's vocabulary of 512");
        CHECK(gpu.position() == 3);
        const auto got = gpu.decode(4);
        const auto want = cpu.decode(4);
        CHECK(max_abs_difference(got, want) <= 1e-3);
        gpu.reset();
        const std::vector<TokenId> fits(128, 1);
        gpu.prefill(fits);
        CHECK_THROWS_WITH(gpu.decode(1), Catch::Contains("1 tokens at position 128 exceed the context"));
    });
}

TEST_CASE("CUDA perplexity equals the CPU's", "[cuda][gpt2]") {
    std::vector<TokenId> text(300);
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<TokenId>((i * 37) % 512);
    with_models("tiny", [&](auto& cpu, auto& gpu) {
        const auto none = [](std::size_t, std::span<const float>) {};
        const auto want = evaluate_perplexity(cpu, text, 64, none);
        const auto got = evaluate_perplexity(gpu, text, 64, none);
        CHECK(got.windows == want.windows);
        CHECK(got.total_nll == Approx(want.total_nll).epsilon(1e-5));
    });
}
