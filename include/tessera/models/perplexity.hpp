#pragma once
// Perplexity of a token sequence under a causal language model, with the strided sliding
// window of Hugging Face's perplexity guide (transformers docs, "Perplexity of fixed-length
// models"), target for target:
//
//   windows [b, e) with b = 0, stride, 2*stride, ... and e = min(b + n_ctx, T), until e = T;
//   a window scores the targets t in [max(b + 1, previous e), e), each from the logits of
//   position t - 1, i.e. with the context tokens [b, t).
//
// So the first window scores tokens 1..e-1, each later window only the tokens past the
// previous window's end, and a window's first token is never a target (nothing precedes it
// inside the window): with stride = n_ctx, one token per later window goes unscored, exactly
// as in the guide. The mean is over the targets scored. (The guide's loop weights each
// window's mean loss by its label count minus one, which under-weights every window after the
// first by one target; its figure differs from this exact mean in the third or fourth digit.)
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

// on_logits(position, logits) is called once per position 0..T-1, in order, with the logits
// that position produced in the window that scored its target (row t predicts token t + 1; the
// last position's logits predict past the end: reported from the last window, not scored).
// A position whose target went unscored (stride = n_ctx) is reported from the earlier window.
template <ScoringLanguageModel Model, class OnLogits>
PerplexityResult evaluate_perplexity(Model& model, std::span<const TokenId> tokens, std::size_t stride,
                                     OnLogits&& on_logits) {
    const std::size_t window = model.context_length();
    const std::size_t vocab = model.vocabulary_size();
    if (stride == 0 || stride > window) {
        throw ArgumentError("stride must be in [1, " + std::to_string(window) + "], got " + std::to_string(stride));
    }
    if (tokens.size() < 2) throw ArgumentError("scoring needs at least 2 tokens, got " + std::to_string(tokens.size()));
    PerplexityResult r;
    r.tokens = tokens.size();
    std::size_t reported = 0;  // positions [0, reported) have had their logits reported
    std::size_t previous_end = 0;
    for (std::size_t begin = 0;; begin += stride) {
        const std::size_t end = std::min(begin + window, tokens.size());
        model.reset();
        const auto logits = model.prefill_all(tokens.subspan(begin, end - begin));
        ++r.windows;
        const auto row = [&](std::size_t p) { return std::span<const float>(logits.data() + (p - begin) * vocab, vocab); };
        for (std::size_t t = std::max(begin + 1, previous_end); t < end; ++t) {
            r.total_nll += negative_log_likelihood(row(t - 1), tokens[t]);
            ++r.predicted;
        }
        // Report in order the positions whose targets this window scored; the last position
        // too when no later window scores its target (the end, or stride = n_ctx).
        const bool keeps_last = end == tokens.size() || begin + stride >= end;
        for (; reported < (keeps_last ? end : end - 1); ++reported) on_logits(reported, row(reported));
        previous_end = end;
        if (end == tokens.size()) break;
    }
    return r;
}

}  // namespace tessera
