#pragma once
// Perplexity of a token sequence under a causal language model, with the sliding-window scheme
// of Hugging Face's perplexity guide: windows of at most n_ctx tokens starting every `stride`
// tokens; each window scores only the targets no earlier window scored, with up to
// n_ctx - stride tokens of context before them.
#include <algorithm>  // std::max_element, std::min
#include <cmath>      // std::exp, std::log
#include <cstddef>    // std::size_t
#include <span>       // std::span
#include <string>     // std::to_string

#include <tessera/core/error.hpp>          // ArgumentError
#include <tessera/models/language_model.hpp>  // ScoringLanguageModel
#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

struct PerplexityResult {
    std::size_t tokens = 0;     // length of the sequence
    std::size_t predicted = 0;  // targets scored: tokens - 1
    std::size_t windows = 0;
    double total_nll = 0;       // Σ -log p(target | context), nats
    double mean_nll() const noexcept { return predicted ? total_nll / static_cast<double>(predicted) : 0.0; }
    double perplexity() const noexcept { return std::exp(mean_nll()); }
};

// -log softmax(logits)[target], in double.
inline double negative_log_likelihood(std::span<const float> logits, TokenId target) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float l : logits) sum += std::exp(static_cast<double>(l) - max);
    return std::log(sum) + max - static_cast<double>(logits[static_cast<std::size_t>(target)]);
}

// Scores every token after the first. on_logits(position, logits) is called once per position
// 0..T-1 in order, with the logits that position produced in the window that scored its
// target (the last position's logits predict past the end; they are reported, not scored).
template <ScoringLanguageModel Model, class OnLogits>
PerplexityResult evaluate_perplexity(Model& model, std::span<const TokenId> tokens, std::size_t stride,
                                     OnLogits&& on_logits) {
    const std::size_t window = model.context_length();
    const std::size_t vocab = model.vocabulary_size();
    if (stride == 0 || stride > window) {
        throw ArgumentError("perplexity: stride must be in [1, " + std::to_string(window) + "], got " + std::to_string(stride));
    }
    if (tokens.size() < 2) throw ArgumentError("perplexity: needs at least 2 tokens, got " + std::to_string(tokens.size()));
    PerplexityResult r;
    r.tokens = tokens.size();
    std::size_t scored_until = 0;  // positions [0, scored_until) have reported their logits
    for (std::size_t begin = 0;; begin += stride) {
        const std::size_t end = std::min(begin + window, tokens.size());
        model.reset();
        const auto logits = model.prefill_all(tokens.subspan(begin, end - begin));
        ++r.windows;
        for (std::size_t p = scored_until; p < end; ++p) {  // p: the predicting position
            const std::span<const float> row(logits.data() + (p - begin) * vocab, vocab);
            if (p + 1 < tokens.size()) {
                r.total_nll += negative_log_likelihood(row, tokens[p + 1]);
                ++r.predicted;
            }
            on_logits(p, row);
        }
        scored_until = end;
        if (end == tokens.size()) break;
    }
    return r;
}

}  // namespace tessera
