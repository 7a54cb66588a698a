#pragma once
// DecoderBlock: GPT-2's pre-LayerNorm transformer block,
//   x += attn(ln_1(x));  x += mlp(ln_2(x))
// with its scratch tensors (BlockScratch) owned by the caller and shared by all blocks.
#include <cstddef>  // std::size_t

#include <tessera/core/tensor.hpp>         // Tensor
#include <tessera/nn/attention.hpp>        // CausalSelfAttention
#include <tessera/nn/feed_forward.hpp>     // FeedForward
#include <tessera/nn/layer_norm.hpp>       // LayerNorm
#include <tessera/nn/parameter.hpp>        // WeightSource
#include <tessera/ops/elementwise.hpp>     // add

namespace tessera {

// Activations of one block for up to `capacity` positions; grows (prefill only), never shrinks.
template <std::size_t C, std::size_t Inner, class B>
struct BlockScratch {
    Tensor<float, Extents<dyn, C>, B> normed, q, att, delta;  // (cap, C)
    Tensor<float, Extents<dyn, Inner>, B> hidden;             // (cap, Inner)

    BlockScratch(std::size_t c, std::size_t inner)
        : normed(0, c), q(0, c), att(0, c), delta(0, c), hidden(0, inner) {}

    std::size_t capacity() const noexcept { return normed.extent(0); }

    void reserve(std::size_t t) {
        if (t <= capacity()) return;
        const std::size_t c = normed.extent(1), inner = hidden.extent(1);
        normed = decltype(normed)(t, c);
        q = decltype(q)(t, c);
        att = decltype(att)(t, c);
        delta = decltype(delta)(t, c);
        hidden = decltype(hidden)(t, inner);
    }
};

// W: how the four projections store their weights (float, bf16, Q8_0, Q4_0).
template <std::size_t C, std::size_t H, std::size_t Inner, std::size_t Ctx, class B, class W = float>
struct DecoderBlock {
    using Attention = CausalSelfAttention<C, H, Ctx, B, W>;
    using Cache = typename Attention::Cache;
    using Scratch = BlockScratch<C, Inner, B>;

    LayerNorm<C, B> ln_1;
    Attention attn;
    LayerNorm<C, B> ln_2;
    FeedForward<C, Inner, B, W> mlp;

    DecoderBlock(std::size_t c, std::size_t heads, std::size_t inner)
        : ln_1(c), attn(c, heads), ln_2(c), mlp(c, inner) {}

    void load(const WeightSource& src, float eps) {
        ln_1.load(src, "ln_1");
        attn.load(src.sub("attn."));
        ln_2.load(src, "ln_2");
        mlp.load(src.sub("mlp."));
        ln_1.eps = ln_2.eps = eps;
    }

    // x(T, C) at positions [first, first + T), updated in place.
    template <class Backend, class X>
    void operator()(Backend& backend, X x, Cache& cache, std::size_t first, Scratch& s) const {
        const std::size_t t = x.extent(0);
        const auto normed = s.normed.view().rows(0, t);
        const auto delta = s.delta.view().rows(0, t);
        ln_1(backend, x, normed);
        attn(backend, normed, cache, first, s.q.view().rows(0, t), s.att.view().rows(0, t), delta);
        add(backend, x, delta, x);
        ln_2(backend, x, normed);
        mlp(backend, normed, s.hidden.view().rows(0, t), delta);
        add(backend, x, delta, x);
    }
};

}  // namespace tessera
