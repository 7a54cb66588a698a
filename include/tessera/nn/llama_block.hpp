#pragma once
// LlamaBlock: the Llama family's pre-RMSNorm transformer block,
//   x += attn(attn_norm(x));  x += mlp(ffn_norm(x))
// with grouped-query attention and rotary positions (GroupedQueryAttention) and the gated SiLU
// feed-forward (GatedFeedForward); its scratch (BlockScratch, gated) owned by the caller.
#include <algorithm>  // std::max
#include <cstddef>    // std::size_t
#include <span>       // std::span

#include <tessera/nn/decoder_block.hpp>            // BlockScratch, pre_norm_block
#include <tessera/nn/gated_feed_forward.hpp>       // GatedFeedForward
#include <tessera/nn/grouped_query_attention.hpp>  // GroupedQueryAttention, AttentionShape
#include <tessera/nn/kv_cache.hpp>                 // CacheRows
#include <tessera/nn/parameter.hpp>                // WeightSource
#include <tessera/nn/rms_norm.hpp>                 // RmsNorm

namespace tessera {

template <class B, class W = float>
struct LlamaBlock {
    using Attention = GroupedQueryAttention<B, W>;
    using Cache = typename Attention::Cache;
    using Scratch = BlockScratch<dyn, dyn, B>;

    RmsNorm<dyn, B> attn_norm;
    Attention attn;
    RmsNorm<dyn, B> ffn_norm;
    GatedFeedForward<dyn, dyn, B, W> mlp;

    LlamaBlock(const AttentionShape& attention, std::size_t inner)
        : attn_norm(attention.width), attn(attention), ffn_norm(attention.width), mlp(attention.width, inner) {}

    static Scratch scratch(const AttentionShape& a, std::size_t inner) {
        const std::size_t qkv = (a.heads + 2 * a.kv_heads) * a.head_dim;
        return Scratch(a.width, inner, a.heads * a.head_dim, a.kv_heads * a.head_dim, true, std::max(qkv, 2 * inner));
    }

    // Hugging Face's names ("input_layernorm", "self_attn.q_proj", "mlp.gate_proj", ...).
    void load(const WeightSource<B>& src, float eps) {
        attn_norm.load(src, "input_layernorm");
        attn.load(src.sub("self_attn."), eps);
        ffn_norm.load(src, "post_attention_layernorm");
        mlp.load(src.sub("mlp."));
        attn_norm.eps = ffn_norm.eps = eps;
    }
    void prepare_batches(B& backend) {
        attn.prepare_batches(backend);
        mlp.prepare_batches(backend);
    }

    // x(T, C), the rows of the sequences `seqs`, updated in place.
    template <class Backend, class X>
    void operator()(Backend& backend, X x, std::span<const CacheRows<Cache>> seqs, Scratch& s) const {
        // attention and feed-forward with the room for their stacked products
        const auto attend = [&](Backend& b, auto normed, auto rows, auto q, auto att, auto k, auto v, auto delta) {
            attn(b, normed, rows, q, att, k, v, s.stacked.view(), delta);
        };
        pre_norm_block(backend, x, seqs, s, attn_norm, attend, ffn_norm, [&](auto normed, auto delta) {
            const std::size_t t = x.extent(0);
            mlp(backend, normed, s.hidden.view().rows(0, t), s.gate.view().rows(0, t), s.stacked.view(), delta);
        });
    }
};

}  // namespace tessera
