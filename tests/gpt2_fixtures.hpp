#pragma once
// The GPT-2 fixtures of tools/make_gpt2_fixtures.sh (ctest fixture `gpt2_fixtures`), for the CPU
// and CUDA model tests: the token sequence, float64 reference logits, greedy continuations.
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tessera/text/bpe_tokenizer.hpp>

namespace tessera::test {

inline const std::string gpt2_fixtures = TESSERA_GPT2_FIXTURES;

// tokens.txt: the 16 ids every fixture's reference logits were computed for.
inline std::vector<TokenId> fixture_tokens() {
    std::ifstream in(gpt2_fixtures + "/tokens.txt");
    std::vector<TokenId> ids;
    std::string item;
    while (std::getline(in, item, ',')) ids.push_back(std::stoi(item));
    return ids;
}

// NAME/logits.f64: row-major [16][V] float64 logits of the numpy reference.
inline std::vector<double> reference_logits(const std::string& name) {
    std::ifstream in(gpt2_fixtures + "/" + name + "/logits.f64", std::ios::binary);
    std::vector<double> v;
    double x;
    while (in.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
    return v;
}

// NAME/greedy.json: the reference's greedy continuation, prompt included.
inline std::vector<TokenId> reference_greedy(const std::string& name) {
    std::ifstream in(gpt2_fixtures + "/" + name + "/greedy.json");
    return nlohmann::json::parse(in)["tokens"].get<std::vector<TokenId>>();
}

}  // namespace tessera::test
