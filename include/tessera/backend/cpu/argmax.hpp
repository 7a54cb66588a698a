#pragma once
// The greedy token of one row of logits, found on the host (HasArgmaxRows).
#include <cmath>    // std::isnan, INFINITY
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int32_t

namespace tessera::cpu {

// The index of the largest of x[0..n), the lowest among equals (as std::max_element); -1 when
// x holds a NaN or +infinity, or nothing above -infinity: no greedy choice is honest then, and
// the sampler's full check names the fault.
inline std::int32_t argmax_row(const float* x, std::size_t n) noexcept {
    std::int32_t best = -1;
    float top = -INFINITY;
    for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(x[i]) || x[i] == INFINITY) return -1;
        if (x[i] > top) {
            top = x[i];
            best = static_cast<std::int32_t>(i);
        }
    }
    return best;
}

}  // namespace tessera::cpu
