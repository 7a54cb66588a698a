#pragma once
// CausalSelfAttention: q, k, v projections (Hugging Face's fused c_attn split in three at load),
// causal multi-head attention over the KV cache, output projection.
#include <cstddef>  // std::size_t

#include <tessera/core/tensor.hpp>     // TensorView
#include <tessera/nn/kv_cache.hpp>     // KvCache
#include <tessera/nn/linear.hpp>       // Linear
#include <tessera/nn/parameter.hpp>    // WeightSource
#include <tessera/ops/attention.hpp>   // causal_attention

namespace tessera {

template <std::size_t C, std::size_t H, std::size_t Ctx, class B, class W = float>
struct CausalSelfAttention {
    static constexpr std::size_t head_dim = C == dyn || H == dyn ? dyn : C / H;
    using Cache = KvCache<Ctx, H, head_dim, B>;

    Linear<C, C, B, W> query, key, value;  // c_attn's three thirds
    Linear<C, C, B, W> proj;               // c_proj
    std::size_t heads;                  // H

    CausalSelfAttention(std::size_t c, std::size_t h) : query(c, c), key(c, c), value(c, c), proj(c, c), heads(h) {}

    void load(const WeightSource& src) {
        const std::size_t c = proj.in_features();
        query.load(src, "c_attn", 3 * c, 0);
        key.load(src, "c_attn", 3 * c, c);
        value.load(src, "c_attn", 3 * c, 2 * c);
        proj.load(src, "c_proj");
    }

    // out(T, C) for x(T, C) at positions [first, first + T); appends k and v to the cache.
    // q and att are (T, C) scratch. out may not be x.
    template <class Backend, class X, class Scratch, class Out>
    void operator()(Backend& backend, const X& x, Cache& cache, std::size_t first, Scratch q, Scratch att,
                    Out&& out) const {
        const std::size_t t = x.extent(0);
        query(backend, x, q);
        key(backend, x, Cache::matrix_rows(cache.keys, first, t));
        value(backend, x, Cache::matrix_rows(cache.values, first, t));
        const auto split_heads = [t, this](auto m) {  // (T, C) -> (T, H, D)
            using E = Extents<dyn, H, head_dim>;
            return TensorView<float, E, Backend>(m.data(), E(t, heads, m.extent(1) / heads));
        };
        causal_attention(backend, split_heads(q), Cache::rows(cache.keys, 0, first + t),
                         Cache::rows(cache.values, 0, first + t), split_heads(att));
        proj(backend, att, out);
    }
};

}  // namespace tessera
