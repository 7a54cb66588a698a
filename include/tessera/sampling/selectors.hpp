#pragma once
// The last stage of a sampler: pick one token from the processed logits.
#include <algorithm>  // std::max_element
#include <cmath>      // std::exp
#include <cstddef>    // std::size_t
#include <span>       // std::span

#include <tessera/core/error.hpp>                // ArgumentError
#include <tessera/sampling/logit_processor.hpp>  // TokenId
#include <tessera/sampling/rng.hpp>              // Rng

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
// number: exact for the distribution, deterministic for a seed.
struct Multinomial {
    TokenId operator()(std::span<const float> logits, Rng& rng) const {
        detail::require_candidates(logits);
        const float max = *std::max_element(logits.begin(), logits.end());
        double total = 0;
        for (const float l : logits) total += std::exp(static_cast<double>(l) - max);
        const double target = rng.uniform() * total;
        double cumulative = 0;
        std::size_t last = 0;
        for (std::size_t i = 0; i < logits.size(); ++i) {
            const double w = std::exp(static_cast<double>(logits[i]) - max);
            if (w == 0) continue;
            cumulative += w;
            last = i;
            if (target < cumulative) return static_cast<TokenId>(i);
        }
        return static_cast<TokenId>(last);  // rounding at the very top of the range
    }
};

}  // namespace tessera
