// vocab.json and merges.txt: any bytes load or give a FormatError; a tokenizer that loads
// encodes and decodes without crashing. The input is "<vocab.json>\0<merges.txt>".
#include <cstdint>
#include <string>

#include <tessera/text/bpe_tokenizer.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tessera;
    const std::string_view input = fuzz::as_text(data, size);
    const std::size_t split = std::min(input.find('\0'), input.size());
    const std::string_view vocab = input.substr(0, split), merges = input.substr(std::min(split + 1, input.size()));
    try {
        const BpeTokenizer t(vocab, "vocab.json", merges, "merges.txt");
        const auto ids = t.encode("Hello world, 'tis a test\n\t 123", SpecialTokens::allowed);
        (void)t.decode(ids);
    } catch (const Error&) {
    }
    return 0;
}
