#pragma once
// GatedFeedForward: C -> Inner, gated by SiLU -> C, Llama's MLP:
//   out = down(silu(gate(x)) · up(x)), no biases.
#include <cstddef>  // std::size_t

#include <tessera/nn/linear.hpp>          // Linear
#include <tessera/nn/parameter.hpp>       // WeightSource
#include <tessera/nn/stacked_linear.hpp>  // StackedLinear
#include <tessera/ops/elementwise.hpp>    // silu_mul

namespace tessera {

template <std::size_t C, std::size_t Inner, class B, class W = float>
struct GatedFeedForward {
    StackedLinear<B, W, 2> gate_up;  // gate_proj, up_proj: one product (StackedLinear)
    Linear<Inner, C, B, W> down;     // down_proj

    GatedFeedForward(std::size_t c, std::size_t inner) : gate_up(c, {inner, inner}, false), down(inner, c, false) {}

    void load(const WeightSource<B>& src) {
        gate_up.load(src, {"gate_proj", "up_proj"});
        down.load(src, "down_proj");
    }
    void prepare_batches(B& backend) {
        gate_up.prepare_batches(backend);
        down.prepare_batches(backend);
    }

    // out(T, C) from x(T, C); hidden and gated are (T, Inner) scratch, room (StackedLinear) at
    // least gate_up.room_floats(T) floats.
    template <class Backend, class X, class Hidden, class Room, class Out>
    void operator()(Backend& backend, const X& x, Hidden hidden, Hidden gated, Room room, Out&& out) const {
        gate_up(backend, x, room, gated, hidden);
        silu_mul(backend, gated, hidden, hidden);
        down(backend, hidden, out);
    }
};

}  // namespace tessera
