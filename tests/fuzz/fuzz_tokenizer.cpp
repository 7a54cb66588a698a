// Tokenizer round trip: any valid UTF-8 text encodes, decodes back to itself, and streams back
// whole characters; invalid UTF-8 is a TokenizerError. Any id sequence decodes, and the
// stream decoder's pieces add up to the sanitised decode.
#include <cstdint>
#include <string>
#include <vector>

#include <tessera/text/bpe_tokenizer.hpp>
#include <tessera/text/stream_decoder.hpp>
#include <tessera/text/utf8.hpp>

#include "fuzz_input.hpp"
#include "gpt2_tokenizer.hpp"

using tessera::fuzz::gpt2;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tessera;
    const std::string text(fuzz::as_text(data, size));
    const bool valid = utf8::first_invalid(text) == text.size();
    std::vector<TokenId> ids;
    try {
        ids = gpt2().encode(text, size % 2 ? SpecialTokens::allowed : SpecialTokens::as_text);
    } catch (const TokenizerError&) {
        if (valid) __builtin_trap();  // valid text must encode
        return 0;
    }
    if (!valid || gpt2().decode(ids) != text) __builtin_trap();
    StreamDecoder stream(gpt2());
    std::string streamed;
    for (const TokenId id : ids) {
        const std::string piece = stream.push(id);
        if (utf8::first_invalid(piece) != piece.size()) __builtin_trap();
        streamed += piece;
    }
    streamed += stream.finish();
    if (streamed != text) __builtin_trap();
    // The bytes as token ids (pairs of bytes, so all of the vocabulary is reachable).
    std::vector<TokenId> raw;
    for (std::size_t i = 0; i + 1 < size; i += 2) raw.push_back(static_cast<TokenId>((data[i] << 8 | data[i + 1]) % 50257));
    StreamDecoder raw_stream(gpt2());
    std::string pieces;
    for (const TokenId id : raw) pieces += raw_stream.push(id);
    pieces += raw_stream.finish();
    if (pieces != gpt2().decode(raw)) __builtin_trap();
    return 0;
}
