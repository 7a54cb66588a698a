#pragma once
// token_logprob: a token's log-probability under a distribution given by its logits, and the
// `top` most likely tokens with theirs (OpenAI's `logprobs`). log p(t) = l_t - max - log sum
// exp(l - max), summed in double so that 50,257 terms lose nothing that float would show.
#include <cmath>    // std::exp, std::log
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <utility>  // std::pair
#include <vector>   // std::vector

#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

struct TokenLogprob {
    TokenId token = 0;
    float logprob = 0;
    std::vector<std::pair<TokenId, float>> top;  // the most likely tokens, most likely first (ties: lower id first)
};

inline TokenLogprob token_logprob(std::span<const float> logits, TokenId token, std::size_t top) {
    float max = logits[0];
    for (const float l : logits) max = l > max ? l : max;
    double sum = 0;
    for (const float l : logits) sum += std::exp(static_cast<double>(l) - max);
    const double log_z = static_cast<double>(max) + std::log(sum);
    const auto logprob = [&](std::size_t i) { return static_cast<float>(logits[i] - log_z); };
    TokenLogprob r{token, logprob(static_cast<std::size_t>(token)), {}};
    if (top > logits.size()) top = logits.size();
    // top is small (OpenAI allows 5): insertion into a short sorted list beats a sort of V ids.
    std::vector<std::size_t> best;
    best.reserve(top + 1);
    for (std::size_t i = 0; i < logits.size() && top > 0; ++i) {
        if (best.size() == top && logits[i] <= logits[best.back()]) continue;
        std::size_t at = best.size();
        while (at > 0 && logits[i] > logits[best[at - 1]]) --at;
        best.insert(best.begin() + static_cast<std::ptrdiff_t>(at), i);
        if (best.size() > top) best.pop_back();
    }
    for (const std::size_t i : best) r.top.emplace_back(static_cast<TokenId>(i), logprob(i));
    return r;
}

}  // namespace tessera
