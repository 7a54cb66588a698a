#pragma once
// A prefill-shaped gemm (9 rows: the packed kernel's path) and a decode-shaped gemv (1 row),
// each against a double-precision product; returns the largest error relative to the largest
// output. Included by both units of the ODR test, each built with its own instruction set.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <tessera/tessera.hpp>

namespace tessera::test {
namespace {  // each unit's own copy, built with its own instruction set (an inline one is shared)

double odr_product_error() {
    constexpr std::size_t N = 37, K = 45;
    Cpu cpu(2);
    Tensor<float, Extents<N, K>, Cpu> w;
    Tensor<float, Extents<N>, Cpu> bias;
    for (std::size_t o = 0; o < N; ++o) {
        bias(o) = 0.01f * static_cast<float>(o);
        for (std::size_t i = 0; i < K; ++i) w(o, i) = static_cast<float>((o * 7 + i * 3) % 11) / 11.0f - 0.5f;
    }
    double worst = 0, largest = 0;
    for (const std::size_t rows : {std::size_t{9}, std::size_t{1}}) {
        Tensor<float, Extents<dyn, K>, Cpu> x(rows);
        Tensor<float, Extents<dyn, N>, Cpu> y(rows);
        for (std::size_t t = 0; t < rows; ++t)
            for (std::size_t i = 0; i < K; ++i) x(t, i) = static_cast<float>((t * 5 + i) % 13) / 13.0f - 0.5f;
        gemm(cpu, x, w, bias, y);
        for (std::size_t t = 0; t < rows; ++t) {
            for (std::size_t o = 0; o < N; ++o) {
                double want = bias(o);
                for (std::size_t i = 0; i < K; ++i) want += static_cast<double>(x(t, i)) * w(o, i);
                worst = std::max(worst, std::abs(want - static_cast<double>(y(t, o))));
                largest = std::max(largest, std::abs(want));
            }
        }
    }
    return worst / largest;
}

}  // namespace
}  // namespace tessera::test
