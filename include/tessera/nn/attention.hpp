#pragma once
// CausalSelfAttention: q, k, v projections (Hugging Face's fused c_attn split in three at load),
// causal multi-head attention over the KV cache, output projection.
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <type_traits>  // std::is_same_v
#include <vector>   // std::vector
#include <span>     // std::span

#include <tessera/backend/backend.hpp> // HasCopy
#include <tessera/core/error.hpp>      // ArgumentError
#include <tessera/core/tensor.hpp>     // TensorView
#include <tessera/nn/kv_cache.hpp>     // KvCache, CacheRows, KvPrecision, stages_keys
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
    // att are (T, C) scratch. One sequence with an f32 cache gets its k and v projected straight
    // into the cache; otherwise the k and v of all rows go to k and v (T, C) first (one product
    // for all) and then into each cache (KvCache::store: copied, or rounded to bf16). out may
    // not be x.
    template <class Backend, class X, class Scratch, class Out>
    void operator()(Backend& backend, const X& x, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att,
                    Scratch k, Scratch v, Out&& out) const {
        query(backend, x, q);
        if (!stages_keys(seqs)) {
            const CacheRows<Cache>& s = seqs[0];
            key(backend, x, Cache::matrix_rows(s.cache->keys, s.first, s.count));
            value(backend, x, Cache::matrix_rows(s.cache->values, s.first, s.count));
        } else {
            if (seqs.size() > 1 && !HasCopy<Backend>) {
                throw ArgumentError(std::string("CausalSelfAttention: the ") + Backend::name +
                                    " backend runs one sequence per step (it has no copy kernel)");
            }
            key(backend, x, k);
            value(backend, x, v);
            for (const CacheRows<Cache>& s : seqs) s.cache->store(backend, k.rows(s.row, s.count), v.rows(s.row, s.count), s.first);
        }
        attend<float>(backend, seqs, q, att);
        if constexpr (HasBf16KvCache<Backend>) attend<bf16>(backend, seqs, q, att);
        proj(backend, att, out);
    }

private:
    // att = attention of q over each sequence's cache stored as KV (those of other precisions
    // are left to the other call).
    template <class KV, class Backend, class Scratch>
    void attend(Backend& backend, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att) const {
        const auto split_heads = [this](auto m) {  // (T, C) -> (T, H, D)
            using E = Extents<dyn, H, head_dim>;
            return TensorView<float, E, Backend>(m.data(), E(m.extent(0), heads, m.extent(1) / heads));
        };
        constexpr KvPrecision precision = std::is_same_v<KV, float> ? KvPrecision::f32 : KvPrecision::bf16;
        if (seqs.size() == 1) {
            const CacheRows<Cache>& s = seqs[0];
            if (s.cache->precision != precision) return;
            causal_attention(backend, split_heads(q), Cache::rows(s.cache->template stored_keys<KV>(), 0, s.first + s.count),
                             Cache::rows(s.cache->template stored_values<KV>(), 0, s.first + s.count), split_heads(att));
            return;
        }
        // One call for all sequences (their operand list grows once per thread).
        thread_local std::vector<AttentionOperands<Backend, KV>> each;
        each.clear();
        for (const CacheRows<Cache>& s : seqs) {
            if (s.cache->precision != precision) continue;
            each.push_back({input_operand<3, Backend>(split_heads(q.rows(s.row, s.count))),
                            stored_operand<3, Backend>(Cache::rows(s.cache->template stored_keys<KV>(), 0, s.first + s.count)),
                            stored_operand<3, Backend>(Cache::rows(s.cache->template stored_values<KV>(), 0, s.first + s.count)),
                            output_operand<3, Backend>(split_heads(att.rows(s.row, s.count)))});
        }
        if (!each.empty()) causal_attention(backend, std::span<const AttentionOperands<Backend, KV>>(each));
    }
};

}  // namespace tessera
