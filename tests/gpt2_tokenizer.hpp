#pragma once
// The committed GPT-2 tokenizer files (tests/data/gpt2), loaded once per test program.
#include <string>

#include <tessera/text/bpe_tokenizer.hpp>

namespace tessera::test {

inline const std::string data_dir = TESSERA_TEST_DATA_DIR;

inline const BpeTokenizer& gpt2() {
    static const BpeTokenizer tokenizer = BpeTokenizer::from_directory(data_dir + "/gpt2");
    return tokenizer;
}

}  // namespace tessera::test
