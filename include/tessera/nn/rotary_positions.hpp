#pragma once
// RotaryPositions: the frequencies of rotary position embedding (RoFormer; Llama, Qwen, Mistral)
// and their application to a step's queries or keys. A head's D elements form D/2 pairs; pair i
// turns by position · inv_freq[i], inv_freq[i] = theta^(-2i/D), changed by the checkpoint's
// scaling: none, linear (positions divided by a factor), Llama 3's (long wavelengths divided by
// the factor, short ones kept, a smooth blend between), YaRN (the same idea with the blend over
// the pairs that turn between beta_fast and beta_slow times over the original context, and q
// and k scaled by an attention factor, 1 + 0.1 ln factor unless given: Hugging Face's
// _compute_yarn_parameters and llama.cpp's rope_yarn agree), or per-pair factors read from the
// file (GGUF's rope_freqs.weight, which llama.cpp's converter writes for Llama 3's scaling).
#include <algorithm>  // std::clamp, std::max, std::min
#include <cmath>    // std::pow, std::log, std::floor, std::ceil
#include <cstddef>  // std::size_t
#include <numbers>  // std::numbers::pi
#include <span>     // std::span
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/backend/backend.hpp>  // RopePairing
#include <tessera/core/error.hpp>       // ArgumentError
#include <tessera/ops/rotary.hpp>       // rotary

namespace tessera {

struct RopeScaling {
    enum class Kind { none, linear, llama3, yarn };
    Kind kind = Kind::none;
    double factor = 1.0;                     // linear, llama3, yarn
    double low_freq_factor = 1.0;            // llama3
    double high_freq_factor = 4.0;           // llama3
    double original_context = 8192.0;        // llama3, yarn: original_max_position_embeddings
    double beta_fast = 32.0, beta_slow = 1.0;  // yarn: the blend's ends, in turns over the original context
    double attention_factor = 0.0;           // yarn: q and k scaled by it; 0: 1 + 0.1 ln factor
    std::vector<double> pair_factors;        // per pair, dividing inv_freq (GGUF rope_freqs), or empty
    bool operator==(const RopeScaling&) const = default;
};

struct RopeSettings {
    double theta = 10000.0;
    RopePairing pairing = RopePairing::halves;
    RopeScaling scaling;
    bool operator==(const RopeSettings&) const = default;
};

// inv_freq for heads of `head_dim` as `rope` says, in double.
inline std::vector<double> rotary_frequencies(std::size_t head_dim, const RopeSettings& rope) {
    if (head_dim == 0 || head_dim % 2 != 0) throw ArgumentError("rotary positions: head_dim " + std::to_string(head_dim) + " is not even");
    if (!(rope.theta > 0.0)) throw ArgumentError("rotary positions: rope theta " + std::to_string(rope.theta) + " is not positive");
    const RopeScaling& s = rope.scaling;
    const std::size_t pairs = head_dim / 2;
    if (!s.pair_factors.empty() && s.pair_factors.size() != pairs) {
        throw ArgumentError("rotary positions: " + std::to_string(s.pair_factors.size()) + " frequency factors for " +
                            std::to_string(pairs) + " pairs");
    }
    std::vector<double> inv_freq(pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
        double f = 1.0 / std::pow(rope.theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
        if (s.kind == RopeScaling::Kind::linear) {
            f /= s.factor;
        } else if (s.kind == RopeScaling::Kind::llama3) {
            const double low_wavelen = s.original_context / s.low_freq_factor, high_wavelen = s.original_context / s.high_freq_factor;
            const double wavelen = 2 * std::numbers::pi / f;
            if (wavelen > low_wavelen) {
                f /= s.factor;
            } else if (wavelen >= high_wavelen) {  // between: blended
                const double smooth = (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
                f = (1 - smooth) * f / s.factor + smooth * f;
            }
        }
        if (s.kind == RopeScaling::Kind::yarn) {
            // The pairs below `low` (fast turning) keep f, those above `high` take f / factor,
            // a linear ramp between (floor and ceil as both references truncate).
            const double d = static_cast<double>(head_dim);
            const auto pair_of = [&](double turns) {
                return d * std::log(s.original_context / (turns * 2 * std::numbers::pi)) / (2 * std::log(rope.theta));
            };
            const double low = std::max(0.0, std::floor(pair_of(s.beta_fast))), high = std::min(d - 1, std::ceil(pair_of(s.beta_slow)));
            const double ramp = std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
            f = f / s.factor * ramp + f * (1 - ramp);
        }
        if (!s.pair_factors.empty()) f /= s.pair_factors[i];
        inv_freq[i] = f;
    }
    return inv_freq;
}

// What rotary positions scale q and k by: YaRN's attention factor, else 1.
inline float rotary_amplitude(const RopeSettings& rope) noexcept {
    const RopeScaling& s = rope.scaling;
    if (s.kind != RopeScaling::Kind::yarn) return 1.0f;
    if (s.attention_factor > 0) return static_cast<float>(s.attention_factor);
    return s.factor <= 1 ? 1.0f : static_cast<float>(0.1 * std::log(s.factor) + 1.0);
}

struct RotaryPositions {
    std::vector<double> inv_freq;  // (D/2)
    RopePairing pairing = RopePairing::halves;
    float amplitude = 1.0f;  // YaRN's attention factor

    RotaryPositions(std::size_t head_dim, const RopeSettings& rope)
        : inv_freq(rotary_frequencies(head_dim, rope)), pairing(rope.pairing), amplitude(rotary_amplitude(rope)) {}

    // x(T, H, D) turned in place, row r at position first + r.
    template <class Backend, class X>
    void operator()(Backend& backend, X&& x, std::size_t first) const {
        rotary(backend, x, first, std::span<const double>(inv_freq), pairing, amplitude);
    }
};

}  // namespace tessera
