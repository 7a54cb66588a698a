#pragma once
// The last stage of a sampler: pick one token from the processed logits.
#include <algorithm>  // std::max_element
#include <vector>     // std::vector
#include <cstddef>    // std::size_t
#include <span>       // std::span

#include <tessera/core/error.hpp>                // ArgumentError
#include <tessera/sampling/logit_processor.hpp>  // TokenId
#include <tessera/sampling/rng.hpp>              // Rng
#include <tessera/sampling/weights.hpp>          // exp_weights

namespace tessera {

namespace detail {
inline void require_candidates(std::span<const float> logits) {
    if (logits.empty() || *std::max_element(logits.begin(), logits.end()) == removed_logit) {
        throw ArgumentError("sampling: every token was filtered out");
    }
}
}  // namespace detail

// The largest logit; the lowest id among equals.
struct Greedy {
    TokenId operator()(std::span<const float> logits, Rng&) const {
        detail::require_candidates(logits);
        return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
};

// A draw from softmax(logits) by inverting the cumulative distribution with one uniform
// number: exact for the distribution (weights within 2 float ulps), deterministic for a seed.
struct Multinomial {
    TokenId operator()(std::span<const float> logits, Rng& rng) const {
        detail::require_candidates(logits);
        const double total = exp_weights(logits, weights_);
        const double target = rng.uniform() * total;
        double cumulative = 0;
        std::size_t last = 0;
        for (std::size_t i = 0; i < logits.size(); ++i) {
            if (weights_[i] == 0) continue;
            cumulative += weights_[i];
            last = i;
            if (target < cumulative) return static_cast<TokenId>(i);
        }
        return static_cast<TokenId>(last);  // rounding at the very top of the range
    }

private:
    mutable std::vector<float> weights_;  // scratch: grows once
};

}  // namespace tessera
