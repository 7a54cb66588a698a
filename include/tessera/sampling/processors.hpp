#pragma once
// The logit processors: Temperature, TopK, TopP, MinP, RepetitionPenalty, PresencePenalty,
// FrequencyPenalty, NoRepeatNgram. Each validates its parameters on construction
// (ArgumentError naming the parameter) and is a LogitProcessor.
#include <algorithm>      // std::nth_element, std::sort, std::max_element
#include <cmath>          // std::exp, std::isfinite
#include <cstddef>        // std::size_t
#include <limits>         // std::numeric_limits
#include <span>           // std::span
#include <string>         // std::to_string
#include <unordered_map>  // std::unordered_map
#include <vector>         // std::vector

#include <tessera/core/error.hpp>              // ArgumentError
#include <tessera/sampling/logit_processor.hpp>  // removed_logit, TokenId

namespace tessera {

namespace detail {
inline void require(bool ok, const std::string& message) {
    if (!ok) throw ArgumentError(message);
}
// Probabilities (double) of the logits; removed tokens get 0.
inline std::vector<double> softmax(std::span<const float> logits) {
    const float max = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0;
    for (std::size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(static_cast<double>(logits[i]) - max);
    for (double& x : p) x /= sum;
    return p;
}
// The last `window` tokens of the history (all of it when shorter).
inline std::span<const TokenId> recent(std::span<const TokenId> history, std::size_t window) {
    return history.subspan(history.size() > window ? history.size() - window : 0);
}
}  // namespace detail

// Divides logits by t. t = 0 means greedy: only the largest logit survives (the lowest id
// among equals).
class Temperature {
public:
    explicit Temperature(float t) : t_(t) {
        detail::require(std::isfinite(t) && t >= 0, "temperature must be >= 0, got " + std::to_string(t));
    }
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        if (t_ == 0) {
            const auto best = std::max_element(logits.begin(), logits.end());
            for (auto it = logits.begin(); it != logits.end(); ++it)
                if (it != best) *it = removed_logit;
        } else if (t_ != 1) {
            for (float& l : logits) l /= t_;
        }
    }

private:
    float t_;
};

// Keeps the k largest logits; every token tied with the k-th largest value is kept too (so
// the result never depends on the order of equal logits). k = 0 keeps everything.
class TopK {
public:
    explicit TopK(long k) : k_(k) { detail::require(k >= 0, "top_k must be >= 0, got " + std::to_string(k)); }
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        if (k_ == 0 || static_cast<std::size_t>(k_) >= logits.size()) return;
        std::vector<float> sorted(logits.begin(), logits.end());
        std::nth_element(sorted.begin(), sorted.begin() + (k_ - 1), sorted.end(), std::greater<>{});
        const float kth = sorted[static_cast<std::size_t>(k_ - 1)];
        for (float& l : logits)
            if (l < kth) l = removed_logit;
    }

private:
    long k_;
};

// Nucleus sampling: keeps the most probable tokens whose probabilities add up to at least p
// (at least one token; ties broken by lower id first). p = 1 keeps everything.
class TopP {
public:
    explicit TopP(double p) : p_(p) { detail::require(p > 0 && p <= 1, "top_p must be in (0, 1], got " + std::to_string(p)); }
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        if (p_ >= 1) return;
        const auto prob = detail::softmax(logits);
        std::vector<std::size_t> order(logits.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return prob[a] != prob[b] ? prob[a] > prob[b] : a < b;
        });
        // Slack for float logits (~1e-7 relative): 0.4 + 0.3 must count as reaching 0.7.
        double cumulative = 0;
        std::size_t keep = 0;
        while (keep < order.size() && cumulative < p_ * (1 - 1e-6)) cumulative += prob[order[keep++]];
        for (std::size_t i = std::max<std::size_t>(keep, 1); i < order.size(); ++i) logits[order[i]] = removed_logit;
    }

private:
    double p_;
};

// Keeps tokens with probability >= min_p · (the largest probability). min_p = 0 keeps all.
// Logits are floats, so probabilities carry ~1e-7 relative error: a token within 1e-6 of the
// threshold counts as reaching it (0.2 >= 0.5 · 0.4 must hold).
class MinP {
public:
    explicit MinP(double min_p) : min_p_(min_p) {
        detail::require(min_p >= 0 && min_p <= 1, "min_p must be in [0, 1], got " + std::to_string(min_p));
    }
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        if (min_p_ == 0) return;
        const auto prob = detail::softmax(logits);
        const double threshold = min_p_ * *std::max_element(prob.begin(), prob.end()) * (1 - 1e-6);
        for (std::size_t i = 0; i < logits.size(); ++i)
            if (prob[i] < threshold) logits[i] = removed_logit;
    }

private:
    double min_p_;
};

// The CTRL / Hugging Face rule: each distinct token among the last `window` ones has a
// positive logit divided by the penalty and a negative one multiplied by it. 1 is off.
class RepetitionPenalty {
public:
    RepetitionPenalty(float penalty, std::size_t window) : penalty_(penalty), window_(window) {
        detail::require(std::isfinite(penalty) && penalty > 0,
                        "repetition_penalty must be > 0, got " + std::to_string(penalty));
    }
    void apply(std::span<float> logits, std::span<const TokenId> history) const {
        if (penalty_ == 1) return;
        std::vector<bool> done(logits.size(), false);
        for (const TokenId t : detail::recent(history, window_)) {
            const auto i = static_cast<std::size_t>(t);
            if (i >= logits.size() || done[i]) continue;
            done[i] = true;
            logits[i] = logits[i] > 0 ? logits[i] / penalty_ : logits[i] * penalty_;
        }
    }

private:
    float penalty_;
    std::size_t window_;
};

// OpenAI's subtractive penalties over the last `window` tokens:
//   logit[t] -= presence · [count(t) > 0] + frequency · count(t).
// Each in [-2, 2] (OpenAI's range); 0 is off.
class PresenceFrequencyPenalty {
public:
    PresenceFrequencyPenalty(float presence, float frequency, std::size_t window)
        : presence_(presence), frequency_(frequency), window_(window) {
        detail::require(std::isfinite(presence) && presence >= -2 && presence <= 2,
                        "presence_penalty must be in [-2, 2], got " + std::to_string(presence));
        detail::require(std::isfinite(frequency) && frequency >= -2 && frequency <= 2,
                        "frequency_penalty must be in [-2, 2], got " + std::to_string(frequency));
    }
    void apply(std::span<float> logits, std::span<const TokenId> history) const {
        if (presence_ == 0 && frequency_ == 0) return;
        std::unordered_map<TokenId, int> counts;
        for (const TokenId t : detail::recent(history, window_)) ++counts[t];
        for (const auto& [t, n] : counts) {
            const auto i = static_cast<std::size_t>(t);
            if (i < logits.size()) logits[i] -= presence_ + frequency_ * static_cast<float>(n);
        }
    }

private:
    float presence_, frequency_;
    std::size_t window_;
};

// Bans every token that would complete an n-gram already present in the history (prompt
// included), as Hugging Face's no_repeat_ngram_size. n = 0 is off.
class NoRepeatNgram {
public:
    explicit NoRepeatNgram(long n) : n_(n) { detail::require(n >= 0, "no_repeat_ngram must be >= 0, got " + std::to_string(n)); }
    void apply(std::span<float> logits, std::span<const TokenId> history) const {
        const auto n = static_cast<std::size_t>(n_);
        if (n == 0 || history.size() + 1 < n) return;
        const auto prefix = history.subspan(history.size() - (n - 1));  // the last n-1 tokens
        for (std::size_t start = 0; start + n <= history.size(); ++start) {
            if (std::equal(prefix.begin(), prefix.end(), history.begin() + static_cast<std::ptrdiff_t>(start))) {
                const auto banned = static_cast<std::size_t>(history[start + n - 1]);
                if (banned < logits.size()) logits[banned] = removed_logit;
            }
        }
    }

private:
    long n_;
};

}  // namespace tessera
