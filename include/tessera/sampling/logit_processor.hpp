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

}  // namespace tessera
