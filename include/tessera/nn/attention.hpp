#pragma once
// CausalSelfAttention: q, k, v projections (Hugging Face's fused c_attn split in three at load),
// causal multi-head attention over the KV cache, output projection.
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <vector>   // std::vector
#include <span>     // std::span

#include <tessera/backend/backend.hpp> // HasCopy
#include <tessera/core/error.hpp>      // ArgumentError
#include <tessera/core/tensor.hpp>     // TensorView
#include <tessera/nn/kv_cache.hpp>     // KvCache, CacheRows
#include <tessera/nn/linear.hpp>       // Linear
#include <tessera/nn/parameter.hpp>    // WeightSource
#include <tessera/ops/attention.hpp>   // causal_attention
#include <tessera/ops/elementwise.hpp> // copy

namespace tessera {

template <std::size_t C, std::size_t H, std::size_t Ctx, class B, class W = float>
struct CausalSelfAttention {
    static constexpr std::size_t head_dim = C == dyn || H == dyn ? dyn : C / H;
    using Cache = KvCache<dyn, H, head_dim, B>;  // each sequence's context: at most Ctx

    Linear<C, C, B, W> query, key, value;  // c_attn's three thirds
    Linear<C, C, B, W> proj;               // c_proj
    std::size_t heads;                  // H

    CausalSelfAttention(std::size_t c, std::size_t h) : query(c, c), key(c, c), value(c, c), proj(c, c), heads(h) {}

    void load(const WeightSource<B>& src) {
        const std::size_t c = proj.in_features();
        query.load(src, "c_attn", 3 * c, 0);
        key.load(src, "c_attn", 3 * c, c);
        value.load(src, "c_attn", 3 * c, 2 * c);
        proj.load(src, "c_proj");
    }
    void prepare_batches(B& backend) {
        for (auto* l : {&query, &key, &value, &proj}) l->prepare_batches(backend);
    }

    // out(T, C) for x(T, C), the rows of one or more sequences (`seqs`, in row order, covering
    // x): each sequence's q attends over its own cache, to which its k and v are appended. q and
    // att are (T, C) scratch; with several sequences the k and v of all rows are projected into
    // k and v (T, C) first (one product for all) and then copied into each cache. out may not
    // be x.
    template <class Backend, class X, class Scratch, class Out>
    void operator()(Backend& backend, const X& x, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att,
                    Scratch k, Scratch v, Out&& out) const {
        query(backend, x, q);
        if (seqs.size() == 1) {  // one sequence: straight into its cache
            const CacheRows<Cache>& s = seqs[0];
            key(backend, x, Cache::matrix_rows(s.cache->keys, s.first, s.count));
            value(backend, x, Cache::matrix_rows(s.cache->values, s.first, s.count));
        } else if constexpr (HasCopy<Backend>) {
            key(backend, x, k);
            value(backend, x, v);
            for (const CacheRows<Cache>& s : seqs) {
                copy(backend, k.rows(s.row, s.count), Cache::matrix_rows(s.cache->keys, s.first, s.count));
                copy(backend, v.rows(s.row, s.count), Cache::matrix_rows(s.cache->values, s.first, s.count));
            }
        } else {
            throw ArgumentError(std::string("CausalSelfAttention: the ") + Backend::name +
                                " backend runs one sequence per step (it has no copy kernel)");
        }
        const auto split_heads = [this](auto m) {  // (T, C) -> (T, H, D)
            using E = Extents<dyn, H, head_dim>;
            return TensorView<float, E, Backend>(m.data(), E(m.extent(0), heads, m.extent(1) / heads));
        };
        if (seqs.size() == 1) {
            const CacheRows<Cache>& s = seqs[0];
            causal_attention(backend, split_heads(q), Cache::rows(s.cache->keys, 0, s.first + s.count),
                             Cache::rows(s.cache->values, 0, s.first + s.count), split_heads(att));
        } else {  // one call for all sequences (their operand list grows once per thread)
            thread_local std::vector<AttentionOperands<Backend>> each;
            each.clear();
            for (const CacheRows<Cache>& s : seqs) {
                each.push_back({input_operand<3, Backend>(split_heads(q.rows(s.row, s.count))),
                                input_operand<3, Backend>(Cache::rows(s.cache->keys, 0, s.first + s.count)),
                                input_operand<3, Backend>(Cache::rows(s.cache->values, 0, s.first + s.count)),
                                output_operand<3, Backend>(split_heads(att.rows(s.row, s.count)))});
            }
            causal_attention(backend, std::span<const AttentionOperands<Backend>>(each));
        }
        proj(backend, att, out);
    }
};

}  // namespace tessera
