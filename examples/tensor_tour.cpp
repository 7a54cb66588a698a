// A tour of the tensor API (the README shows the same calls): shapes in the type, a backend as a
// template parameter, a result printed.
#include <tessera/tessera.hpp>

#include <cstdio>
#include <vector>

using namespace tessera;

int main() {
    Cpu cpu(2);                                           // the host backend, 2 threads
    constexpr std::size_t C = 8, Hidden = 32;             // model width: compile-time
    const std::size_t T = 5;                              // sequence length: run-time
    Tensor<float, Extents<dyn, C>, Cpu> x(T);             // (T, C)
    Tensor<float, Extents<Hidden, C>, Cpu> w_up;          // (Hidden, C): weights are [out, in]
    Tensor<float, Extents<Hidden>, Cpu> b_up;             // (Hidden)
    Tensor<float, Extents<dyn, Hidden>, Cpu> h(T);        // (T, Hidden)
    Tensor<float, Extents<C>, Cpu> gamma, beta;           // (C)
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t c = 0; c < C; ++c) x(i, c) = 0.1f * static_cast<float>(i + c);
    for (std::size_t o = 0; o < Hidden; ++o) w_up(o, o % C) = 1.0f;
    for (std::size_t c = 0; c < C; ++c) gamma(c) = 1.0f;

    layer_norm(cpu, x, gamma, beta, 1e-5f, x);            // in place, per row
    gemm(cpu, x, w_up, b_up, h);                          // h = x · w_upᵀ + b_up
    gelu(cpu, h, h);                                      // GPT-2's tanh GELU
    // gemm(cpu, h, w_up, x);  // would not compile: h has 32 columns, w_up expects 8

    const std::vector<float> out = to_host(cpu, h);
    std::printf("h(4, 0..3) = %.4f %.4f %.4f %.4f\n", out[4 * Hidden], out[4 * Hidden + 1], out[4 * Hidden + 2],
                out[4 * Hidden + 3]);
}
