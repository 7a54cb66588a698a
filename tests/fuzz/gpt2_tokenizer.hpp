#pragma once
// The harnesses' tokenizer: GPT-2's vocabulary from the test data, loaded once.
#include <tessera/text/bpe_tokenizer.hpp>

namespace tessera::fuzz {

inline const BpeTokenizer& gpt2() {
    static const auto t = BpeTokenizer::from_directory(TESSERA_FUZZ_TOKENIZER_DIR);
    return t;
}

}  // namespace tessera::fuzz
