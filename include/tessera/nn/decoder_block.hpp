#pragma once
// DecoderBlock: GPT-2's pre-LayerNorm transformer block,
//   x += attn(ln_1(x));  x += mlp(ln_2(x))
// with its scratch tensors (BlockScratch) owned by the caller and shared by all blocks.
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <type_traits>  // std::remove_reference_t

#include <tessera/core/tensor.hpp>         // Tensor
#include <tessera/nn/attention.hpp>        // CausalSelfAttention
#include <tessera/nn/kv_cache.hpp>         // CacheRows, stages_keys
#include <tessera/nn/feed_forward.hpp>     // FeedForward
#include <tessera/nn/layer_norm.hpp>       // LayerNorm
#include <tessera/nn/parameter.hpp>        // WeightSource
#include <tessera/ops/elementwise.hpp>     // add

namespace tessera {

// Activations of one block for up to `capacity` rows; grows (prefill only), never shrinks. The
// queries and attention outputs are q_width wide (heads x head_dim: C in GPT-2), the keys and
// values kv_width (fewer heads under grouped-query attention); `gated` adds a second
// feed-forward buffer (a gated MLP's gate); `stacked_width` floats per row are room for the
// products of stacked maps (StackedLinear: q, k and v; gate and up). The keys and values of a
// step over several sequences, or into a bf16 cache (before they go to each one's cache), exist
// only once such a step was reserved: a single sequence with an f32 cache gets them written
// straight into its cache.
template <std::size_t C, std::size_t Inner, class B>
struct BlockScratch {
    Tensor<float, Extents<dyn, C>, B> normed, delta;          // (cap, C)
    Tensor<float, Extents<dyn, C>, B> q, att;                 // (cap, q_width)
    Tensor<float, Extents<dyn, Inner>, B> hidden, gate;       // (cap, Inner); gate: empty unless gated
    Tensor<float, Extents<dyn, C>, B> keys, values;           // (cap, kv_width) or empty
    Tensor<float, Extents<dyn>, B> stacked;                   // (cap · stacked_width)

    BlockScratch(std::size_t c, std::size_t inner, std::size_t q_width = 0, std::size_t kv_width = 0, bool gated = false,
                 std::size_t stacked_width = 0)
        : normed(0, c), delta(0, c), q(0, q_width ? q_width : c), att(0, q_width ? q_width : c), hidden(0, inner),
          gate(0, inner), keys(0, kv_width ? kv_width : c), values(0, kv_width ? kv_width : c), stacked(0), gated_(gated),
          stacked_width_(stacked_width) {}

    std::size_t capacity() const noexcept { return normed.extent(0); }

    // Room for t rows; `staged_keys`: also for the keys and values of a step over more than
    // one sequence, or into a bf16 cache.
    void reserve(std::size_t t, bool staged_keys = false) {
        const auto grow = [](auto& tensor, std::size_t rows) {
            if (tensor.extent(0) < rows) tensor = std::remove_reference_t<decltype(tensor)>(rows, tensor.extent(1));
        };
        if (t > capacity()) {
            for (auto* m : {&normed, &delta, &q, &att}) grow(*m, t);
            grow(hidden, t);
            if (gated_) grow(gate, t);
            if (stacked.extent(0) < t * stacked_width_) stacked = Tensor<float, Extents<dyn>, B>(t * stacked_width_);
        }
        if (staged_keys) {
            grow(keys, capacity());
            grow(values, capacity());
        }
    }

private:
    bool gated_;
    std::size_t stacked_width_;
};

// A pre-norm residual block's step, whatever its layers: x(T, C), the rows of the sequences
// `seqs`, updated in place,
//   x += attn(norm_1(x));  x += mlp(norm_2(x))
// attn(normed, q, att, k, v, delta) with the scratch's (T, ·) rows (k, v only where the step
// stages keys: stages_keys); mlp(normed, delta).
template <class Backend, class X, class Cache, class Scratch, class Norm1, class Attention, class Norm2, class Mlp>
void pre_norm_block(Backend& backend, X x, std::span<const CacheRows<Cache>> seqs, Scratch& s, const Norm1& norm_1,
                    const Attention& attn, const Norm2& norm_2, Mlp&& mlp) {
    const std::size_t t = x.extent(0);
    const auto normed = s.normed.view().rows(0, t);
    const auto delta = s.delta.view().rows(0, t);
    const auto kv_rows = stages_keys(seqs) ? t : 0;  // else unused, and maybe unreserved
    norm_1(backend, x, normed);
    attn(backend, normed, seqs, s.q.view().rows(0, t), s.att.view().rows(0, t), s.keys.view().rows(0, kv_rows),
         s.values.view().rows(0, kv_rows), delta);
    add(backend, x, delta, x);
    norm_2(backend, x, normed);
    mlp(normed, delta);
    add(backend, x, delta, x);
}

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

    void load(const WeightSource<B>& src, float eps) {
        ln_1.load(src, "ln_1");
        attn.load(src.sub("attn."));
        ln_2.load(src, "ln_2");
        mlp.load(src.sub("mlp."));
        ln_1.eps = ln_2.eps = eps;
    }
    // The products' second weight layout for batched steps, where the backend has one (Linear).
    void prepare_batches(B& backend) {
        attn.prepare_batches(backend);
        mlp.prepare_batches(backend);
    }

    // x(T, C), the rows of the sequences `seqs` (CausalSelfAttention), updated in place.
    template <class Backend, class X>
    void operator()(Backend& backend, X x, std::span<const CacheRows<Cache>> seqs, Scratch& s) const {
        pre_norm_block(backend, x, seqs, s, ln_1, attn, ln_2,
                       [&](auto normed, auto delta) { mlp(backend, normed, s.hidden.view().rows(0, x.extent(0)), delta); });
    }
};

}  // namespace tessera
