#pragma once
// The logit processors: Temperature, TopK, TopP, MinP, RepetitionPenalty, PresencePenalty,
// FrequencyPenalty, NoRepeatNgram, LogitBias. Each validates its parameters on construction
// (ArgumentError naming the parameter) and is a LogitProcessor.
#include <algorithm>      // std::push_heap, std::max_element, std::clamp, std::count, std::find
#include <array>          // std::array
#include <bit>            // std::bit_cast
#include <cstdint>        // std::uint32_t
#include <functional>     // std::greater
#include <cmath>          // std::exp, std::isfinite
#include <cstddef>        // std::size_t
#include <limits>         // std::numeric_limits
#include <span>           // std::span
#include <string>         // std::to_string
#include <utility>        // std::pair, std::move
#include <vector>         // std::vector

#include <tessera/core/error.hpp>              // ArgumentError
#include <tessera/sampling/logit_processor.hpp>  // removed_logit, TokenId
#include <tessera/sampling/weights.hpp>          // exp_weights, keep_top_mass, max_of, visit_above

namespace tessera {

namespace detail {
inline void require(bool ok, const std::string& message) {
    if (!ok) throw ArgumentError(message);
}
// Probabilities (double) of the logits; removed tokens get 0. For tests and reports; the
// processors below work on the logits directly and never allocate per call.
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
// Whether history[i] already occurred in history[0, i): penalties count each token once
// without a set (windows are ~64 tokens, so the quadratic scan is cheaper than a hash map).
inline bool seen_before(std::span<const TokenId> history, std::size_t i) {
    return std::find(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(i), history[i]) !=
           history.begin() + static_cast<std::ptrdiff_t>(i);
}
}  // namespace detail

// Divides logits by t. t = 0 means greedy: only the largest logit survives (the lowest id
// among equals). So does a t so small that the divided logits would overflow (1e-40, say):
// that is the limit of the distribution as t goes to 0, where dividing would give infinities.
class Temperature {
public:
    explicit Temperature(float t) : t_(t) {
        detail::require(std::isfinite(t) && t >= 0, "temperature must be >= 0, got " + std::to_string(t));
    }
    ArgmaxEffect argmax_effect() const noexcept { return t_ == 0 ? ArgmaxEffect::decides : ArgmaxEffect::keeps; }
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        if (t_ == 1) return;
        // The largest |logit| of the tokens left: |x|'s bits order like |x| (as max_of's keys).
        std::array<std::uint32_t, detail::lanes> acc{};
        const float* l = logits.data();
        std::size_t i = 0;
        const auto magnitude = [](float x) {
            const auto b = std::bit_cast<std::uint32_t>(x);
            return b == std::bit_cast<std::uint32_t>(removed_logit) ? 0u : b & 0x7fffffffu;
        };
        for (; i + detail::lanes <= logits.size(); i += detail::lanes)
            for (std::size_t j = 0; j < detail::lanes; ++j) acc[j] = std::max(acc[j], magnitude(l[i + j]));
        for (; i < logits.size(); ++i) acc[0] = std::max(acc[0], magnitude(l[i]));
        const float largest = std::bit_cast<float>(*std::max_element(acc.begin(), acc.end()));
        if (t_ == 0 || !std::isfinite(largest / t_)) {
            const auto best = std::max_element(logits.begin(), logits.end());
            for (auto it = logits.begin(); it != logits.end(); ++it)
                if (it != best) *it = removed_logit;
        } else {
            for (float& l : logits) l /= t_;
        }
    }

private:
    float t_;
};

// Keeps the k largest logits; every token tied with the k-th largest value is kept too (so
// the result never depends on the order of equal logits). k = 0 keeps everything. One pass with
// a k-entry min-heap: most logits lose one comparison against the heap's smallest, 64 at once.
class TopK {
public:
    explicit TopK(long k) : k_(k) { detail::require(k >= 0, "top_k must be >= 0, got " + std::to_string(k)); }
    ArgmaxEffect argmax_effect() const noexcept { return ArgmaxEffect::keeps; }  // the largest always stays
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        const auto k = static_cast<std::size_t>(k_);
        if (k == 0 || k >= logits.size()) return;
        heap_.clear();
        heap_.reserve(k);
        const auto greater = std::greater<float>{};
        for (std::size_t i = 0; i < k; ++i) heap_.push_back(logits[i]);
        std::make_heap(heap_.begin(), heap_.end(), greater);
        detail::visit_above(logits.data() + k, logits.size() - k, [&] { return heap_.front(); }, [&](std::size_t i) {
            const float l = logits[k + i];
            if (l > heap_.front()) {
                std::pop_heap(heap_.begin(), heap_.end(), greater);
                heap_.back() = l;
                std::push_heap(heap_.begin(), heap_.end(), greater);
            }
        });
        const float kth = heap_.front();
        for (float& l : logits)
            if (l < kth) l = removed_logit;
    }

private:
    long k_;
    mutable std::vector<float> heap_;  // grows once; no allocation per call after that
};

// Nucleus sampling: keeps the most probable tokens whose probabilities add up to at least p
// (at least one token; ties broken by lower id first). p = 1 keeps everything. No sort: the
// cut is found by a radix selection over the probabilities' bits (keep_top_mass), O(V).
class TopP {
public:
    explicit TopP(double p) : p_(p) { detail::require(p > 0 && p <= 1, "top_p must be in (0, 1], got " + std::to_string(p)); }
    ArgmaxEffect argmax_effect() const noexcept { return ArgmaxEffect::keeps; }  // the largest always stays
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        if (p_ >= 1) return;
        const double total = exp_weights(logits, weights_);
        // Slack for float logits (~1e-7 relative): 0.4 + 0.3 must count as reaching 0.7.
        keep_top_mass(logits, weights_, p_ * (1 - 1e-6) * total, selection_);
    }

private:
    double p_;
    mutable std::vector<float> weights_;      // scratch: grows once
    mutable MassSelection selection_;         // scratch: grows once
};

// Keeps tokens with probability >= min_p · (the largest probability). min_p = 0 keeps all.
// p_i / p_max = exp(l_i - l_max), so the test needs no softmax: l_i - l_max >= log(min_p).
// Logits are floats, so probabilities carry ~1e-7 relative error: a token within 1e-6 of the
// threshold counts as reaching it (0.2 >= 0.5 · 0.4 must hold).
class MinP {
public:
    explicit MinP(double min_p) : min_p_(min_p) {
        detail::require(min_p >= 0 && min_p <= 1, "min_p must be in [0, 1], got " + std::to_string(min_p));
    }
    ArgmaxEffect argmax_effect() const noexcept { return ArgmaxEffect::keeps; }  // the largest always stays
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        if (min_p_ == 0) return;
        const double threshold = detail::max_of(logits) + std::log(min_p_) + std::log1p(-1e-6);
        for (float& l : logits)
            if (static_cast<double>(l) < threshold) l = removed_logit;
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
    ArgmaxEffect argmax_effect() const noexcept { return penalty_ == 1 ? ArgmaxEffect::keeps : ArgmaxEffect::changes; }
    void apply(std::span<float> logits, std::span<const TokenId> history) const {
        if (penalty_ == 1) return;
        const auto window = detail::recent(history, window_);
        for (std::size_t j = 0; j < window.size(); ++j) {
            const auto i = static_cast<std::size_t>(window[j]);
            if (i >= logits.size() || detail::seen_before(window, j) || logits[i] == removed_logit) continue;
            // Clamped: a penalty of 1e-45 must not turn a logit into infinity (NaN after softmax).
            const float l = logits[i] > 0 ? logits[i] / penalty_ : logits[i] * penalty_;
            logits[i] = std::clamp(l, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max());
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
    ArgmaxEffect argmax_effect() const noexcept {
        return presence_ == 0 && frequency_ == 0 ? ArgmaxEffect::keeps : ArgmaxEffect::changes;
    }
    void apply(std::span<float> logits, std::span<const TokenId> history) const {
        if (presence_ == 0 && frequency_ == 0) return;
        const auto window = detail::recent(history, window_);
        for (std::size_t j = 0; j < window.size(); ++j) {
            const auto i = static_cast<std::size_t>(window[j]);
            if (i >= logits.size() || detail::seen_before(window, j)) continue;
            const auto n = std::count(window.begin() + static_cast<std::ptrdiff_t>(j), window.end(), window[j]);
            logits[i] -= presence_ + frequency_ * static_cast<float>(n);
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
    ArgmaxEffect argmax_effect() const noexcept { return n_ == 0 ? ArgmaxEffect::keeps : ArgmaxEffect::changes; }
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

// OpenAI's logit_bias: adds a fixed bias to chosen tokens' logits (in [-100, 100]: -100 bans a
// token in practice, +100 all but forces it). A token beyond the vocabulary is an error when the
// logits arrive (the processor does not know the vocabulary); a removed token stays removed.
class LogitBias {
public:
    using Entry = std::pair<TokenId, float>;
    LogitBias() = default;
    explicit LogitBias(std::vector<Entry> bias) : bias_(std::move(bias)) {
        for (const auto& [token, b] : bias_) {
            detail::require(token >= 0, "logit_bias names token " + std::to_string(token) + ", which is negative");
            detail::require(std::isfinite(b) && b >= -100 && b <= 100, "logit_bias for token " + std::to_string(token) +
                                                                           " must be in [-100, 100], got " + std::to_string(b));
        }
    }
    ArgmaxEffect argmax_effect() const noexcept { return bias_.empty() ? ArgmaxEffect::keeps : ArgmaxEffect::changes; }
    void apply(std::span<float> logits, std::span<const TokenId>) const {
        for (const auto& [token, b] : bias_) {
            const auto i = static_cast<std::size_t>(token);
            detail::require(i < logits.size(), "logit_bias names token " + std::to_string(token) + " but the vocabulary has " +
                                                   std::to_string(logits.size()) + " tokens");
            if (logits[i] != removed_logit) logits[i] += b;
        }
    }

private:
    std::vector<Entry> bias_;
};

}  // namespace tessera
