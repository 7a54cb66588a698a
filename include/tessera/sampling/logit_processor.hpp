#pragma once
// The contract of a sampling stage: it rewrites the logits in place, given the tokens so far
// (prompt included). Filtering stages remove a token by setting its logit to -infinity; at
// least one token always survives.
#include <cmath>     // INFINITY
#include <concepts>  // std::same_as
#include <span>      // std::span

#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

template <class P>
concept LogitProcessor = requires(const P& p, std::span<float> logits, std::span<const TokenId> history) {
    { p.apply(logits, history) } -> std::same_as<void>;
};

inline constexpr float removed_logit = -INFINITY;

// What a stage, with its parameters, does to the greedy choice (the largest logit, the lowest
// id among equals), so that a sampler can tell when its whole chain picks exactly that token
// (Sampler::picks_argmax) and the logits need not be read: `keeps` it the largest (it may
// change others: temperature, the truncations, a stage that is off), `decides` (only it is
// left: temperature 0), or `changes` it (penalties, biases). A stage that does not say is
// taken to change it.
enum class ArgmaxEffect { keeps, decides, changes };

}  // namespace tessera
