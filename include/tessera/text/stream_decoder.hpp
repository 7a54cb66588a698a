#pragma once
// StreamDecoder: turns ids arriving one at a time into text that never splits a UTF-8
// character. A token may end inside a character (emoji and CJK often span tokens); those bytes
// are held back until the next token completes them. Bytes that can never become valid turn
// into U+FFFD at once; at the end, finish() replaces an unfinished tail the same way. The
// concatenation of everything emitted equals Tokenizer::decode of all the ids.
#include <string>  // std::string

#include <tessera/text/tokenizer.hpp>  // Tokenizer, TokenId
#include <tessera/text/utf8.hpp>           // append_valid

namespace tessera {

class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}

    // The text that this id completes (possibly empty). Throws TokenizerError for a bad id.
    std::string push(TokenId id) {
        pending_ += tokenizer_->token_bytes(id);
        return take(false);
    }
    // Everything still held back, an incomplete character replaced by U+FFFD.
    std::string finish() { return take(true); }
    // Bytes received but not yet emitted (0 to 3).
    std::size_t pending_bytes() const noexcept { return pending_.size(); }

private:
    std::string take(bool final) {
        std::string out;
        pending_.erase(0, utf8::append_valid(out, pending_, final));
        return out;
    }

    const Tokenizer* tokenizer_;
    std::string pending_;
};

}  // namespace tessera
