// GPT-2 on the CPU against the float64 numpy reference (tools/gpt2_reference.py), on random
// checkpoints in Hugging Face's layout built by tools/make_gpt2_fixtures.sh (ctest fixture
// `gpt2_fixtures`). Tolerances: all-position logits within 1e-4 max abs of float64 (fp32
// accumulation over <= 3072-term products gives ~1e-6 here; a wrong weight layout or a
// missing bias moves logits by > 1e-2); KV-cache decoding equals full recomputation within
// 1e-5 of the largest logit magnitude (at least 1): prefill multiplies with the packed GEMM and
// decoding with the GEMV, which sum in different orders, so the two agree to a few float ulps
// of the logits, not to a fixed absolute 1e-5 when logits are large (9.5e-7 at |logit| <= 3,
// 4.6e-5 at |logit| <= 14.6 on the 124M-shaped checkpoint).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <tessera/models/load_gpt2.hpp>
#include <tessera/models/perplexity.hpp>
#include <tessera/tessera.hpp>

#include "allocation_counter.hpp"
#include "gpt2_fixtures.hpp"

using namespace tessera;


namespace {

using test::fixture_tokens;
using test::reference_logits;
const std::string& fixtures = test::gpt2_fixtures;

// Runs `check(model)` on the fixture's model, on a backend of its own. The fixtures with a
// published test shape load as that static type, the others ("free") as GPT2<GPT2Dynamic, Cpu>.
template <class F>
void with_model(const std::string& name, F&& check) {
    Cpu cpu(2);
    load_gpt2<GPT2TestTiny, GPT2TestOddHeads, GPT2TestVocab>(cpu, fixtures + "/" + name, [&](auto& model) { check(model); });
}

// The largest |got[i] - want[i]| (the same sizes, checked by the caller).
double max_abs_difference(const std::vector<float>& got, const std::vector<double>& want) {
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    return worst;
}

}  // namespace

TEST_CASE("All-position logits match the float64 reference", "[gpt2]") {
    const std::string name = GENERATE(as<std::string>{}, "tiny", "tiny-f16", "tiny-bf16", "tiny-prefixed", "odd-heads",
                                      "vocab", "free", "gpt2-124m");
    INFO("fixture " << name);
    const auto tokens = fixture_tokens();
    const auto want = reference_logits(name);
    with_model(name, [&](auto& model) {
        const auto got = model.prefill_all(tokens);
        REQUIRE(got.size() == want.size());
        const double worst = max_abs_difference(got, want);
        INFO("max abs difference " << worst);
        CHECK(worst <= 1e-4);
    });
}

TEST_CASE("Decoding with the KV cache equals full recomputation", "[gpt2]") {
    const std::string name = GENERATE(as<std::string>{}, "tiny", "odd-heads", "free", "gpt2-124m");
    const auto tokens = fixture_tokens();
    with_model(name, [&](auto& model) {
        const auto r = test::decode_vs_full_recomputation(model, tokens, 5);
        INFO("fixture " << name << ", max abs difference " << r.worst << ", largest |logit| " << r.scale);
        CHECK(r.worst <= 1e-5 * r.scale);
        CHECK(model.position() == tokens.size());
    });
}

TEST_CASE("Greedy continuation is identical to the reference", "[gpt2]") {
    const std::string name = GENERATE(as<std::string>{}, "tiny", "odd-heads", "free");
    const auto want = test::reference_greedy(name);
    with_model(name, [&](auto& model) {
        std::vector<TokenId> got(want.begin(), want.begin() + 3);
        auto logits = model.prefill(got);
        while (got.size() < want.size()) {
            const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
            got.push_back(static_cast<TokenId>(best));
            if (got.size() < want.size()) logits = model.decode(got.back());
        }
        CHECK(got == want);
    });
}

// Run alone (each test case is its own process), from a fresh backend: after a 3-token prompt,
// every decode step to the end of the context allocates nothing, on a static and on a
// run-time shape.
TEST_CASE("The decode step allocates nothing", "[gpt2]") {
    const std::string name = GENERATE(as<std::string>{}, "tiny", "free");
    with_model(name, [&](auto& model) {
        const std::vector<TokenId> prompt{1, 2, 3};
        model.prefill(prompt);
        test::allocations = 0;
        test::counting_allocations = true;
        for (TokenId t = 4; model.position() < model.context_length(); ++t) model.decode(t % 300);
        test::counting_allocations = false;
        INFO("fixture " << name);
        CHECK(test::allocations == 0);
        // The counter works: one vector is one allocation.
        test::counting_allocations = true;
        std::vector<int> probe(10);
        test::counting_allocations = false;
        CHECK(test::allocations == 1);
    });
}

// Weights stored as bf16, Q8_0 or Q4_0, against the numpy reference computed in float64 with the
// weights each format holds (tools/gpt2_reference.py --weights). All-position logits come from
// several-row products (the float product of the dequantized weights): within 1e-4, as float.
// One-token decode steps multiply 8-bit activations for Q8_0 and Q4_0 (as llama.cpp does):
// measured 8.3e-3 (Q8_0) and 8.5e-3 (Q4_0) of the largest |logit| on tiny (random weights, no
// outliers to hide behind); bound 2e-2, while a wrong block layout or scale moves logits by
// their own size. bf16 decodes in float (measured 1.4e-7, bound 1e-5), or, with AVX-512 BF16,
// on activations rounded to bf16 (vdpbf16ps, as llama.cpp): measured 2.5e-3 of the largest
// |logit|, bound 1e-2. With AVX-512 VNNI the prefill also runs on 8-bit activations, under the
// same bound, and so do bf16 prompts where the layers are arranged (AVX-512 BF16 without
// AMX); with float activations (the portable kernels) it must match to 1e-4.
TEST_CASE("Stored weights: logits match the reference of the weights each format holds", "[gpt2][formats]") {
    const auto tokens = fixture_tokens();
    const auto check = [&]<class W>(double decode_tolerance) {
        const std::string format(WeightFormat<W>::name);
        INFO("weights " << format);
        const auto want = reference_logits("tiny", "logits-" + format + ".f64");
        Cpu cpu(2);
        load_gpt2_as<W>(cpu, fixtures + "/tiny", [&](auto& model) {
            static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(model)>::weight_type, W>);
            const std::size_t v = model.vocabulary_size();
            const auto got = model.prefill_all(tokens);
            REQUIRE(got.size() == want.size());
            double worst = 0, scale = 1;
            for (std::size_t i = 0; i < got.size(); ++i) {
                worst = std::max(worst, std::fabs(got[i] - want[i]));
                scale = std::max(scale, std::fabs(want[i]));
            }
            INFO("all positions: max abs difference " << worst << ", largest |logit| " << scale);
            // (Layers arranged in place round the activations as arranged_activation_precision says.)
            const bool rounded = cpu::arranged_activation_precision<W>(tokens.size()) != cpu::ActivationPrecision::f32;
            CHECK(worst <= std::max(1e-4, rounded ? decode_tolerance * scale : 0.0));
            model.reset();
            model.prefill(std::span(tokens).first(8));
            double worst_decode = 0;
            for (std::size_t i = 8; i < tokens.size(); ++i) {
                const auto logits = model.decode(tokens[i]);
                for (std::size_t j = 0; j < v; ++j) worst_decode = std::max(worst_decode, std::fabs(logits[j] - want[i * v + j]));
            }
            INFO("decode steps: max abs difference " << worst_decode << ", largest |logit| " << scale);
            CHECK(worst_decode <= decode_tolerance * scale);
        });
    };
    check.template operator()<bf16>(cpu::arranged_activation_precision<bf16>(1) == cpu::ActivationPrecision::bf16 ? 1e-2 : 1e-5);
    check.template operator()<Q8_0>(2e-2);
    check.template operator()<Q4_0>(2e-2);
}

// GPT-2's vocabulary (50,257 x 32): the embedding is read and quantized 8,192 rows at a time
// (a wrong chunk moves logits by their own size; the bounds as above).
TEST_CASE("Stored weights: a large embedding quantized in chunks as it loads", "[gpt2][formats]") {
    const auto tokens = fixture_tokens();
    const auto want = reference_logits("vocab", "logits-q8_0.f64");
    Cpu cpu(2);
    load_gpt2_as<Q8_0>(cpu, fixtures + "/vocab", [&](auto& model) {
        const auto got = model.prefill_all(tokens);
        REQUIRE(got.size() == want.size());
        double scale = 1;
        for (const double x : want) scale = std::max(scale, std::fabs(x));
        const double worst = max_abs_difference(got, want);
        INFO("max abs difference " << worst << ", largest |logit| " << scale);
        CHECK(worst <= (cpu::arranged_activation_precision<Q8_0>(tokens.size()) == cpu::ActivationPrecision::int8 ? 2e-2 * scale : 1e-4));
    });
}

// As above for float weights: once the first prompt has run, decoding allocates nothing (the
// quantized activation row and the dequantization panels grow once per thread).
TEST_CASE("The decode step allocates nothing with Q8_0 and bf16 weights", "[gpt2][formats]") {
    const auto run = [&]<class W>() {
        Cpu cpu(2);
        load_gpt2_as<W>(cpu, fixtures + "/tiny", [&](auto& model) {
            const std::vector<TokenId> prompt{1, 2, 3};
            model.prefill(prompt);
            model.decode(4);
            test::allocations = 0;
            test::counting_allocations = true;
            for (TokenId t = 5; model.position() < model.context_length(); ++t) model.decode(t % 300);
            test::counting_allocations = false;
            INFO("weights " << WeightFormat<W>::name);
            CHECK(test::allocations == 0);
        });
    };
    run.template operator()<Q8_0>();
    run.template operator()<bf16>();
}

TEST_CASE("Q8_0 and Q4_0 refuse a model whose widths are not whole blocks", "[gpt2][formats]") {
    Cpu cpu(1);
    CHECK_THROWS_WITH(load_gpt2_as<Q8_0>(cpu, fixtures + "/odd-heads", [](auto&) {}),
                      Catch::Contains("48 weights per row are not a whole number of q8_0 blocks of 32"));
    CHECK_NOTHROW(load_gpt2_as<bf16>(cpu, fixtures + "/odd-heads", [](auto&) {}));
    CHECK_THROWS_WITH(open_gpt2(cpu, fixtures + "/odd-heads", nullptr, WeightFormatId::q4_0),
                      Catch::Contains("Embedding: 48 weights per row are not a whole number of q8_0 blocks"));
}

TEST_CASE("Bad tokens and sequences longer than the context are errors", "[gpt2][errors]") {
    with_model("tiny", [&](auto& model) {
        const std::vector<TokenId> bad{1, 512};
        CHECK_THROWS_WITH(model.prefill(bad), "token id 512 at position 1 is outside the model's vocabulary of 512");
        model.reset();
        const std::vector<TokenId> negative{-3};
        CHECK_THROWS_AS(model.prefill(negative), ArgumentError);
        model.reset();
        const std::vector<TokenId> too_long(129, 1);
        CHECK_THROWS_WITH(model.prefill(too_long), "GPT2: 129 tokens at position 0 exceed the context of 128 positions");
        const std::vector<TokenId> fits(128, 1);
        model.reset();
        CHECK_NOTHROW(model.prefill(fits));
        CHECK_THROWS_WITH(model.decode(1), Catch::Contains("1 tokens at position 128 exceed the context"));
        CHECK_THROWS_AS(model.prefill(std::span<const TokenId>()), ArgumentError);
    });
}

TEST_CASE("Sinusoidal positions follow the closed form", "[gpt2][positions]") {
    SinusoidalPositions<16, 6, Cpu> pe;
    for (std::size_t pos = 0; pos < 16; ++pos) {
        for (std::size_t i = 0; i < 3; ++i) {
            const double angle = pos / std::pow(10000.0, 2.0 * i / 6);
            CHECK(pe.table(pos, 2 * i) == Approx(std::sin(angle)).margin(1e-6));
            CHECK(pe.table(pos, 2 * i + 1) == Approx(std::cos(angle)).margin(1e-6));
        }
    }
    Tensor<float, Extents<dyn, 6>, Cpu> x(2);
    Cpu cpu(1);
    pe.add_to(cpu, x, 3);  // rows 3 and 4 added to zeros
    CHECK(x(1, 0) == pe.table(4, 0));
    CHECK(x(0, 1) == pe.table(3, 1));
}

TEST_CASE("Perplexity: one window matches the reference, overlapping windows score every target once", "[gpt2][perplexity]") {
    const auto tokens = fixture_tokens();
    const auto want = reference_logits("tiny");
    const std::size_t v = want.size() / tokens.size();
    double reference_nll = 0;
    for (std::size_t p = 0; p + 1 < tokens.size(); ++p) {
        double max = -1e300, sum = 0;
        for (std::size_t j = 0; j < v; ++j) max = std::max(max, want[p * v + j]);
        for (std::size_t j = 0; j < v; ++j) sum += std::exp(want[p * v + j] - max);
        reference_nll += std::log(sum) + max - want[p * v + static_cast<std::size_t>(tokens[p + 1])];
    }
    with_model("tiny", [&](auto& model) {
        std::size_t next_position = 0;
        const auto r = evaluate_perplexity(model, tokens, 64, [&](std::size_t p, std::span<const float>) {
            CHECK(p == next_position++);
        });
        CHECK(r.windows == 1);
        CHECK(r.predicted == tokens.size() - 1);
        CHECK(r.total_nll == Approx(reference_nll).epsilon(1e-6));

        // 300 tokens, n_ctx 128: stride 64 makes windows starting at 0, 64, 128, 192.
        std::vector<TokenId> long_text(300);
        for (std::size_t i = 0; i < long_text.size(); ++i) long_text[i] = static_cast<TokenId>((i * 37) % 512);
        next_position = 0;
        const auto w = evaluate_perplexity(model, long_text, 64, [&](std::size_t p, std::span<const float>) {
            CHECK(p == next_position++);
        });
        CHECK(w.windows == 4);
        CHECK(w.predicted == 299);
        CHECK(next_position == 300);
        CHECK_THROWS_WITH(evaluate_perplexity(model, long_text, 0, [](std::size_t, std::span<const float>) {}),
                          "stride must be in [1, 128], got 0");
    });
}

// Every output is computed by one task whose work does not depend on the thread that runs it
// (per-thread scratch is aligned alike: Eigen's sums peel to an alignment), so the logits are
// the same bits for any number of threads and on every run. Before per-thread scratch was
// aligned, the 16-token prefill's last row changed between runs in 198 of 200.
TEST_CASE("Logits are the same bits for any thread count and on every run", "[gpt2]") {
    const auto tokens = fixture_tokens();
    const auto run = [&]<class W>(unsigned threads, int repeats) {
        Cpu cpu(threads);
        std::vector<float> first;
        load_gpt2_as<W>(cpu, fixtures + "/tiny", [&](auto& model) {
            for (int r = 0; r < repeats; ++r) {
                const std::vector<float> out = test::prefill_then_decode_logits(model, tokens, 3);
                if (r == 0) first = out;
                INFO("run " << r << " on " << threads << " threads");
                REQUIRE(out == first);
            }
        });
        return first;
    };
    const auto check = [&]<class W>() {
        INFO("weights " << WeightFormat<W>::name);
        const auto one = run.template operator()<W>(1, 1);
        for (const unsigned threads : {2u, 3u}) CHECK(run.template operator()<W>(threads, 10) == one);
    };
    check.template operator()<float>();
    check.template operator()<Q8_0>();
}
