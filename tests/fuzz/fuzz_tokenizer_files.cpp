// Tokenizer files: any bytes load or give a FormatError; a tokenizer that loads encodes and
// decodes without crashing. The input is tried as "<vocab.json>\0<merges.txt>", as a
// tokenizer.json, and as a SentencePiece tokenizer.model.
#include <cstdint>
#include <string>

#include <tessera/text/bpe_tokenizer.hpp>
#include <tessera/text/sentencepiece_model.hpp>
#include <tessera/text/tokenizer_json.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tessera;
    const std::string_view input = fuzz::as_text(data, size);
    const std::size_t split = std::min(input.find('\0'), input.size());
    const std::string_view vocab = input.substr(0, split), merges = input.substr(std::min(split + 1, input.size()));
    const auto exercise = [](const Tokenizer& t) {
        const auto ids = t.encode("Hello world, 'tis a test\n\t 123 e\u0301 <|im_end|>", SpecialTokens::allowed);
        (void)t.decode(ids);
        (void)t.encode_prompt("x");
    };
    try {
        exercise(BpeTokenizer(vocab, "vocab.json", merges, "merges.txt"));
    } catch (const Error&) {
    }
    try {
        exercise(tokenizer_from_json(vocab, "tokenizer.json", merges, "tokenizer_config.json"));
    } catch (const Error&) {
    }
    try {
        exercise(sentencepiece_from_model(input, "tokenizer.model"));
    } catch (const Error&) {
    }
    return 0;
}
