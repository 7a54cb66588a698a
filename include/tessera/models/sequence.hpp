#pragma once
// SequenceState: one sequence's place in a model, its KV cache and position, apart from the
// weights, so that one model decodes many sequences in one step (GPT2::step, the batched
// generator). A model hands them out (new_sequence) and knows the concrete type behind this
// base; the base says what every caller may ask.
#include <cstddef>  // std::size_t
#include <span>     // std::span

#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

class SequenceState {
public:
    virtual ~SequenceState() = default;
    SequenceState(const SequenceState&) = delete;
    SequenceState& operator=(const SequenceState&) = delete;

    // Positions filled so far, and how many it holds in all.
    std::size_t position() const noexcept { return position_; }
    std::size_t context_length() const noexcept { return context_; }
    // Forgets the tokens: the next step starts at position 0 (the cache is kept for reuse).
    void reset() noexcept { position_ = 0; }
    // Keeps the first `positions` tokens (no more than it holds) and forgets the rest: the next
    // step appends at `positions`, over a cache whose earlier entries are still those tokens'
    // (a prompt that begins as an earlier one did starts there: BatchGenerator).
    void rewind(std::size_t positions) noexcept { position_ = positions < position_ ? positions : position_; }

protected:
    explicit SequenceState(std::size_t context) noexcept : context_(context) {}
    void advance(std::size_t tokens) noexcept { position_ += tokens; }

private:
    std::size_t context_;
    std::size_t position_ = 0;
};

// One sequence's tokens in a step over several sequences.
struct SequenceTokens {
    SequenceState* sequence;
    std::span<const TokenId> tokens;
};

}  // namespace tessera
