#pragma once
// Rotary positions: a (positions, heads, head_dim) tensor turned in place by its positions.
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::to_string

#include <tessera/backend/backend.hpp>  // HasRotary, RopePairing
#include <tessera/core/error.hpp>       // ShapeError
#include <tessera/ops/operands.hpp>     // output_operand

namespace tessera {

// x(T,H,D): row r (position first + r) has each head's pair i turned by the angle position ·
// inv_freq[i], the pairs as `pairing` says, and scaled by `amplitude` (YaRN's attention factor:
// cos and sin times it); inv_freq holds D/2 frequencies (host memory).
template <Backend B, TensorLike X>
    requires HasRotary<B>
void rotary(B& backend, X&& x, std::size_t first, std::span<const double> inv_freq, RopePairing pairing, float amplitude = 1.0f) {
    static_assert(extents_of_t<X>::rank() == 3, "rotary: x must be a (positions, heads, head_dim) tensor.");
    const auto xv = output_operand<3, B>(x);
    if (xv.extent(2) % 2 != 0 || inv_freq.size() != xv.extent(2) / 2) {
        throw ShapeError("rotary: " + std::to_string(inv_freq.size()) + " frequencies for heads of " + std::to_string(xv.extent(2)) +
                         " (an even head_dim, one frequency per pair)");
    }
    backend.rotary(xv, first, inv_freq, pairing, amplitude);
}

}  // namespace tessera
