#pragma once
// RotaryPositions: the frequencies of rotary position embedding (RoFormer; Llama, Qwen, Mistral)
// and their application to a step's queries or keys. A head's D elements form D/2 pairs; pair i
// turns by position · inv_freq[i], inv_freq[i] = theta^(-2i/D), changed by the checkpoint's
// scaling: none, linear (positions divided by a factor), Llama 3's (long wavelengths divided by
// the factor, short ones kept, a smooth blend between), or per-pair factors read from the file
// (GGUF's rope_freqs.weight, which llama.cpp's converter writes for Llama 3's scaling).
#include <cmath>    // std::pow, std::numbers
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
    enum class Kind { none, linear, llama3 };
    Kind kind = Kind::none;
    double factor = 1.0;                     // linear, llama3
    double low_freq_factor = 1.0;            // llama3
    double high_freq_factor = 4.0;           // llama3
    double original_context = 8192.0;        // llama3: original_max_position_embeddings
    std::vector<double> pair_factors;        // per pair, dividing inv_freq (GGUF rope_freqs), or empty
};

struct RopeSettings {
    double theta = 10000.0;
    RopePairing pairing = RopePairing::halves;
    RopeScaling scaling;
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
        if (!s.pair_factors.empty()) f /= s.pair_factors[i];
        inv_freq[i] = f;
    }
    return inv_freq;
}

struct RotaryPositions {
    std::vector<double> inv_freq;  // (D/2)
    RopePairing pairing = RopePairing::halves;

    RotaryPositions(std::size_t head_dim, const RopeSettings& rope) : inv_freq(rotary_frequencies(head_dim, rope)), pairing(rope.pairing) {}

    // x(T, H, D) turned in place, row r at position first + r.
    template <class Backend, class X>
    void operator()(Backend& backend, X&& x, std::size_t first) const {
        rotary(backend, x, first, std::span<const double>(inv_freq), pairing);
    }
};

}  // namespace tessera
