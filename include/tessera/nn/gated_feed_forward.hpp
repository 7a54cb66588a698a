#pragma once
// GatedFeedForward: C -> Inner, gated by SiLU -> C, Llama's MLP:
//   out = down(silu(gate(x)) · up(x)), no biases.
#include <cstddef>  // std::size_t

#include <tessera/nn/linear.hpp>        // Linear
#include <tessera/nn/parameter.hpp>     // WeightSource
#include <tessera/ops/elementwise.hpp>  // silu_mul

namespace tessera {

template <std::size_t C, std::size_t Inner, class B, class W = float>
struct GatedFeedForward {
    Linear<C, Inner, B, W> gate, up;  // gate_proj, up_proj
    Linear<Inner, C, B, W> down;      // down_proj

    GatedFeedForward(std::size_t c, std::size_t inner) : gate(c, inner, false), up(c, inner, false), down(inner, c, false) {}

    void load(const WeightSource<B>& src) {
        gate.load(src, "gate_proj");
        up.load(src, "up_proj");
        down.load(src, "down_proj");
    }
    void prepare_batches(B& backend) {
        for (auto* l : {&gate, &up}) l->prepare_batches(backend);
        down.prepare_batches(backend);
    }

    // out(T, C) from x(T, C); hidden and gated are (T, Inner) scratch.
    template <class Backend, class X, class Hidden, class Out>
    void operator()(Backend& backend, const X& x, Hidden hidden, Hidden gated, Out&& out) const {
        gate(backend, x, gated);
        up(backend, x, hidden);
        silu_mul(backend, gated, hidden, hidden);
        down(backend, hidden, out);
    }
};

}  // namespace tessera
