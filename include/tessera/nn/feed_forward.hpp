#pragma once
// FeedForward: C -> Inner (GELU, tanh form) -> C, GPT-2's MLP.
#include <cstddef>  // std::size_t

#include <tessera/nn/linear.hpp>         // Linear
#include <tessera/nn/parameter.hpp>      // WeightSource
#include <tessera/ops/elementwise.hpp>   // gelu

namespace tessera {

template <std::size_t C, std::size_t Inner, class B, class W = float>
struct FeedForward {
    Linear<C, Inner, B, W> up;    // c_fc
    Linear<Inner, C, B, W> down;  // c_proj

    FeedForward(std::size_t c, std::size_t inner) : up(c, inner), down(inner, c) {}

    void load(const WeightSource<B>& src) {
        up.load(src, "c_fc");
        down.load(src, "c_proj");
    }
    void prepare_batches(B& backend) {
        up.prepare_batches(backend);
        down.prepare_batches(backend);
    }

    // out(T, C) from x(T, C); hidden is (T, Inner) scratch.
    template <class Backend, class X, class Hidden, class Out>
    void operator()(Backend& backend, const X& x, Hidden hidden, Out&& out) const {
        up(backend, x, hidden);
        gelu(backend, hidden, hidden);
        down(backend, hidden, out);
    }
};

}  // namespace tessera
