#pragma once
// The GPT-2 fixtures of tools/make_gpt2_fixtures.sh (ctest fixture `gpt2_fixtures`), for the CPU
// and CUDA model tests: the token sequence, float64 reference logits, greedy continuations.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tessera/text/bpe_tokenizer.hpp>

#include "fixture_files.hpp"

namespace tessera::test {

inline const std::string gpt2_fixtures = TESSERA_GPT2_FIXTURES;

// tokens.txt: the 16 ids every fixture's reference logits were computed for.
inline std::vector<TokenId> fixture_tokens() { return read_token_list(gpt2_fixtures + "/tokens.txt"); }

// NAME/logits.f64: row-major [16][V] float64 logits of the numpy reference (logits-FORMAT.f64:
// with the matrices stored as bf16, q8_0 or q4_0).
inline std::vector<double> reference_logits(const std::string& name, const std::string& file = "logits.f64") {
    return read_float64(gpt2_fixtures + "/" + name + "/" + file);
}

// NAME/greedy.json: the reference's greedy continuation, prompt included.
inline std::vector<TokenId> reference_greedy(const std::string& name) {
    std::ifstream in(gpt2_fixtures + "/" + name + "/greedy.json");
    return nlohmann::json::parse(in)["tokens"].get<std::vector<TokenId>>();
}

// Every position's logits (prefill_all of all tokens), then the logits of decode steps after a
// `prompt`-token prefill, one after another: all that a model computes, to compare bit for bit.
template <class Model>
std::vector<float> prefill_then_decode_logits(Model& model, std::span<const TokenId> tokens, std::size_t prompt) {
    model.reset();
    std::vector<float> out = model.prefill_all(tokens);
    model.reset();
    model.prefill(tokens.first(prompt));
    for (std::size_t i = prompt; i < tokens.size(); ++i) {
        const auto step = model.decode(tokens[i]);
        out.insert(out.end(), step.begin(), step.end());
    }
    return out;
}

// Decodes tokens one by one after a `prompt`-token prefill and compares every step's logits
// with model.prefill_all(tokens) (full recomputation). Returns the worst absolute difference
// and the largest |logit| (at least 1), for a bound relative to the logits' size.
struct DecodeAgreement {
    double worst = 0, scale = 1;
};
template <class Model>
DecodeAgreement decode_vs_full_recomputation(Model& model, std::span<const TokenId> tokens, std::size_t prompt) {
    model.reset();
    const auto full = model.prefill_all(tokens);
    const std::size_t v = full.size() / tokens.size();
    model.reset();
    DecodeAgreement r;
    for (const float f : full) r.scale = std::max(r.scale, std::fabs(double(f)));
    auto logits = model.prefill(tokens.first(prompt));
    for (std::size_t i = prompt;; ++i) {
        for (std::size_t j = 0; j < v; ++j) r.worst = std::max(r.worst, std::fabs(double(logits[j]) - full[(i - 1) * v + j]));
        if (i == tokens.size()) break;
        logits = model.decode(tokens[i]);
    }
    return r;
}

}  // namespace tessera::test
