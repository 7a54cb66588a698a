// The models tessera::models holds compiled (models/compiled_models.hpp) and the files' parsers
// (config.hpp's TESSERA_PARSER_DEFINITIONS): a program that links it takes them from there
// (TESSERA_COMPILED_MODELS) instead of compiling them, and must get what the headers compute.
// GPT-2 through load_gpt2 / load_gpt2_as / open_gpt2 and the Llama family through open_llama,
// from GGUF files and Hugging Face directories, against the float64 references under
// test_gpt2's and test_llama's tolerances (those files say why); errors thrown in the library
// reach the program as the headers' types.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <tessera/tessera.hpp>

#include "gpt2_fixtures.hpp"
#include "llama_fixtures.hpp"

#if !defined(TESSERA_COMPILED_MODELS)
#error "test_compiled_models links tessera::models, which defines TESSERA_COMPILED_MODELS"
#endif

using namespace tessera;

namespace {

// The largest |got[i] - want[i]| (sizes equal).
double max_difference(std::span<const float> got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    return worst;
}

}  // namespace

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

TEST_CASE("Compiled models: open_gpt2 and open_llama from the library match the float64 references", "[gpt2][llama][compiled]") {
    Cpu cpu(2);
    {
        const auto model = open_gpt2(cpu, test::gpt2_fixtures + "/free");
        CHECK(max_difference(model->prefill_all(test::fixture_tokens()), test::reference_logits("free", "logits.f64")) <= 1e-4);
    }
    // Each architecture's parser from the library, GGUF (q/k rows permuted for llama) and directory.
    for (const char* config : {"llama-tiny", "qwen2-tiny", "qwen3-tiny"}) {
        for (const std::string& path : {test::llama::fixtures + "/" + config + "-f32.gguf", test::llama::fixtures + "/" + config}) {
            INFO(path);
            const auto model = open_llama(cpu, path);
            CHECK(max_difference(model->prefill_all(test::llama::fixture_tokens()), test::llama::reference_logits(config)) <= 1e-4);
        }
    }
}

TEST_CASE("Compiled models: the library's parsers throw the headers' errors, naming the file", "[gpt2][llama][compiled][errors]") {
    Cpu cpu(2);
    const std::string missing = (std::filesystem::temp_directory_path() / "tessera-no-such-model.gguf").string();
    const auto names_it = [&](const FormatError& e) { CHECK(std::string(e.what()).find(missing) != std::string::npos); };
    try {
        Gpt2Files files(missing);
        FAIL("Gpt2Files opened a file that does not exist");
    } catch (const FormatError& e) {
        names_it(e);
    }
    try {
        const auto model = open_llama(cpu, missing);
        FAIL("open_llama opened a file that does not exist");
    } catch (const FormatError& e) {
        names_it(e);
    }
    // A GPT-2 file is not a Llama: the library's LlamaFiles says which architecture it holds.
    CHECK_THROWS_AS(LlamaFiles(test::gpt2_fixtures + "/gguf/tiny-f32.gguf"), FormatError);
}
