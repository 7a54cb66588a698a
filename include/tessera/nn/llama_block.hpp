#pragma once
// LlamaBlock: the Llama family's pre-RMSNorm transformer block,
//   x += attn(attn_norm(x));  x += mlp(ffn_norm(x))
// with grouped-query attention and rotary positions (GroupedQueryAttention) and the gated SiLU
// feed-forward (GatedFeedForward); its scratch (BlockScratch, gated) owned by the caller.
#include <cstddef>  // std::size_t
#include <span>     // std::span

#include <tessera/nn/decoder_block.hpp>            // BlockScratch
#include <tessera/nn/gated_feed_forward.hpp>       // GatedFeedForward
#include <tessera/nn/grouped_query_attention.hpp>  // GroupedQueryAttention, AttentionShape
#include <tessera/nn/kv_cache.hpp>                 // CacheRows, stages_keys
#include <tessera/nn/parameter.hpp>                // WeightSource
#include <tessera/nn/rms_norm.hpp>                 // RmsNorm
#include <tessera/ops/elementwise.hpp>             // add

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
        return Scratch(a.width, inner, a.heads * a.head_dim, a.kv_heads * a.head_dim, true);
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
        const std::size_t t = x.extent(0);
        const auto normed = s.normed.view().rows(0, t);
        const auto delta = s.delta.view().rows(0, t);
        const auto kv_rows = stages_keys(seqs) ? t : 0;  // else unused, and maybe unreserved
        attn_norm(backend, x, normed);
        attn(backend, normed, seqs, s.q.view().rows(0, t), s.att.view().rows(0, t), s.keys.view().rows(0, kv_rows),
             s.values.view().rows(0, kv_rows), delta);
        add(backend, x, delta, x);
        ffn_norm(backend, x, normed);
        mlp(backend, normed, s.hidden.view().rows(0, t), s.gate.view().rows(0, t), delta);
        add(backend, x, delta, x);
    }
};

}  // namespace tessera
