#pragma once
// The Llama-family fixtures of tools/make_llama_fixtures.sh (ctest fixture `llama_fixtures`):
// the token sequence and each configuration's float64 reference logits.
#include <string>
#include <vector>

#include "fixture_files.hpp"

namespace tessera::test::llama {

inline const std::string fixtures = TESSERA_LLAMA_FIXTURES;

// tokens.txt: the ids every configuration's reference logits were computed for.
inline std::vector<TokenId> fixture_tokens() { return read_token_list(fixtures + "/tokens.txt"); }

// NAME/logits.f64: row-major [T][V] float64 logits of the numpy reference (logits-FORMAT.f64:
// over the weights a stored format holds).
inline std::vector<double> reference_logits(const std::string& name, const std::string& file = "logits.f64") {
    return read_float64(fixtures + "/" + name + "/" + file);
}

}  // namespace tessera::test::llama
