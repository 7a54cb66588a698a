#pragma once
// Sampler<Selector, Processors...>: the processors run on the logits in the order the type
// lists them, then the selector picks a token. The order is part of the type, so two samplers
// that differ in it are different types; runtime parameters live in each stage.
//
// SamplingParams builds the default chain used by the command line and the server:
//   logit bias -> repetition penalty -> presence/frequency penalty -> no-repeat-ngram   (history-based edits)
//   -> temperature -> top-k -> top-p -> min-p                             (reshape, then truncate)
//   -> multinomial draw (greedy when temperature is 0)
// The bias and the penalties come first because they are defined on the raw logits (OpenAI, CTRL); temperature
// comes before the truncations so that top-p and min-p see the distribution that will be
// sampled, as in Hugging Face's and llama.cpp's default order.
#include <algorithm>  // std::any_of
#include <cmath>    // std::isnan, INFINITY
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint64_t
#include <limits>   // std::numeric_limits
#include <optional> // std::optional
#include <random>   // std::random_device
#include <span>     // std::span
#include <string>   // std::to_string
#include <tuple>    // std::tuple, std::apply
#include <type_traits>  // std::is_same_v
#include <utility>  // std::move
#include <vector>   // std::vector

#include <tessera/core/error.hpp>                // Error
#include <tessera/sampling/logit_processor.hpp>  // LogitProcessor
#include <tessera/sampling/processors.hpp>       // the processors
#include <tessera/sampling/rng.hpp>              // Rng
#include <tessera/sampling/selectors.hpp>        // Greedy, Multinomial

namespace tessera {

template <class Selector, LogitProcessor... Processors>
class Sampler {
public:
    Sampler(Rng rng, Selector selector, Processors... processors)
        : rng_(rng), selector_(std::move(selector)), processors_(std::move(processors)...) {}

    // Processes `logits` in place (they are scratch afterwards) and returns the chosen token.
    // A NaN or +infinity among the logits (a broken model, an overflow) is an Error: no token
    // can be drawn honestly from them, and picking one would hide the fault.
    TokenId sample(std::span<float> logits, std::span<const TokenId> history) {
        // x - x is 0 for finite x and -inf, NaN for NaN and +inf: one vectorised pass finds both.
        const auto bad = detail::reduce_lanes(logits.data(), logits.size(), 0.0f, [](float a, float l) {
            return a + (l == removed_logit ? 0.0f : l - l);
        });
        const bool any_bad = std::any_of(bad.begin(), bad.end(), [](float a) { return a != 0; });
        for (std::size_t i = 0; any_bad && i < logits.size(); ++i) {
            if (std::isnan(logits[i]) || logits[i] == INFINITY) {
                throw Error(std::string("sampling: the model's logit for token ") + std::to_string(i) + " is " +
                            (std::isnan(logits[i]) ? "NaN" : "infinite") +
                            " (corrupt weights or an overflow in the model)");
            }
        }
        std::apply([&](const auto&... p) { (p.apply(logits, history), ...); }, processors_);
        return selector_(logits, rng_);
    }

    // Whether sample() returns the largest logit's token (the lowest id among equals) whatever
    // the logits and history: then a model may find that token where the logits are
    // (GPT2::prefill_argmax). NaN or +infinity logits still need sample(), which names them.
    bool picks_argmax() const noexcept {
        bool changed = false, decided = false;
        std::apply([&](const auto&... p) { ((changed |= effect_of(p) == ArgmaxEffect::changes), ...); }, processors_);
        std::apply([&](const auto&... p) { ((decided |= effect_of(p) == ArgmaxEffect::decides), ...); }, processors_);
        return !changed && (decided || std::is_same_v<Selector, Greedy>);
    }

    const Rng& rng() const noexcept { return rng_; }

private:
    template <class P>
    static ArgmaxEffect effect_of(const P& p) noexcept {
        if constexpr (requires { { p.argmax_effect() } -> std::same_as<ArgmaxEffect>; }) return p.argmax_effect();
        else return ArgmaxEffect::changes;
    }

    Rng rng_;
    Selector selector_;
    std::tuple<Processors...> processors_;
};

struct SamplingParams {
    float temperature = 1.0f;                  // 0: greedy
    long top_k = 0;                            // 0: off
    double top_p = 1.0;                        // 1: off
    double min_p = 0.0;                        // 0: off
    float repetition_penalty = 1.0f;           // 1: off
    std::size_t repeat_last_n = 64;            // tokens the penalties look back over
    float presence_penalty = 0.0f;             // 0: off
    float frequency_penalty = 0.0f;            // 0: off
    long no_repeat_ngram = 0;                  // 0: off
    std::optional<std::uint64_t> seed;         // none: a random seed, reported by the sampler's rng()
    std::vector<LogitBias::Entry> logit_bias{};  // (token, bias in [-100, 100]) added to the raw logits
};

using DefaultSampler = Sampler<Multinomial, LogitBias, RepetitionPenalty, PresenceFrequencyPenalty, NoRepeatNgram, Temperature,
                               TopK, TopP, MinP>;

// The default chain for `params`; throws ArgumentError naming the first invalid parameter.
inline DefaultSampler make_sampler(const SamplingParams& params) {
    const std::uint64_t seed = params.seed ? *params.seed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    return DefaultSampler(Rng(seed), Multinomial{}, LogitBias(params.logit_bias), RepetitionPenalty(params.repetition_penalty, params.repeat_last_n),
                          PresenceFrequencyPenalty(params.presence_penalty, params.frequency_penalty, params.repeat_last_n),
                          NoRepeatNgram(params.no_repeat_ngram), Temperature(params.temperature), TopK(params.top_k),
                          TopP(params.top_p), MinP(params.min_p));
}

}  // namespace tessera
