// The models tessera::models holds compiled (models/compiled_models.hpp): a program that links
// it takes them from there (TESSERA_COMPILED_MODELS) instead of compiling them, and must get
// what the headers compute. GPT-2 through load_gpt2 / load_gpt2_as against the float64
// reference, under test_gpt2's tolerances (tests/test_gpt2.cpp says why).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tessera/tessera.hpp>

#include "gpt2_fixtures.hpp"

#if !defined(TESSERA_COMPILED_MODELS)
#error "test_compiled_models links tessera::models, which defines TESSERA_COMPILED_MODELS"
#endif

using namespace tessera;

TEST_CASE("Compiled models: logits match the float64 reference", "[gpt2][compiled]") {
    const auto tokens = test::fixture_tokens();
    const auto check = [&]<class W>(const std::string& fixture, const std::string& reference, double tolerance) {
        INFO("fixture " << fixture << ", weights " << WeightFormat<W>::name);
        const auto want = test::reference_logits(fixture, reference);
        Cpu cpu(2);
        load_gpt2_as<W>(cpu, test::gpt2_fixtures + "/" + fixture, [&](auto& model) {
            const auto got = model.prefill_all(tokens);
            REQUIRE(got.size() == want.size());
            double worst = 0, scale = 1;
            for (std::size_t i = 0; i < got.size(); ++i) {
                worst = std::max(worst, std::fabs(got[i] - want[i]));
                scale = std::max(scale, std::fabs(want[i]));
            }
            INFO("max abs difference " << worst << ", largest |logit| " << scale);
            const bool rounded = cpu::arranged_activation_precision<W>(tokens.size()) != cpu::ActivationPrecision::f32;
            CHECK(worst <= std::max(1e-4, rounded ? tolerance * scale : 0.0));
        });
    };
    check.template operator()<float>("free", "logits.f64", 0.0);
    check.template operator()<Q8_0>("tiny", "logits-q8_0.f64", 2e-2);
    check.template operator()<Q4_0>("tiny", "logits-q4_0.f64", 2e-2);
}
