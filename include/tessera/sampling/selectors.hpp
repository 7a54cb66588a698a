#pragma once
// The last stage of a sampler: pick one token from the processed logits.
#include <algorithm>  // std::max_element
#include <cstddef>    // std::size_t
#include <optional>   // std::optional
#include <span>       // std::span
#include <vector>     // std::vector

#include <tessera/core/error.hpp>                // ArgumentError
#include <tessera/sampling/logit_processor.hpp>  // TokenId
#include <tessera/sampling/rng.hpp>              // Rng
#include <tessera/sampling/weights.hpp>          // exp_weights, max_of, visit_above

namespace tessera {

namespace detail {
inline void require_candidates(std::span<const float> logits) {
    if (logits.empty() || max_of(logits) == removed_logit) {
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
        std::optional<std::size_t> drawn;
        const float* w = weights_.data();
        detail::visit_above(w, logits.size(), [] { return 0.0f; }, [&](std::size_t i) {  // (blocks of zeros add nothing)
            if (drawn || w[i] == 0) return;
            cumulative += w[i];
            last = i;
            if (target < cumulative) drawn = i;
        });
        return static_cast<TokenId>(drawn ? *drawn : last);  // last: rounding at the very top of the range
    }

private:
    mutable std::vector<float> weights_;  // scratch: grows once
};

}  // namespace tessera
