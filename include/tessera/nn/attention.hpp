#pragma once
// CausalSelfAttention: q, k, v projections (Hugging Face's fused c_attn split in three at load),
// causal multi-head attention over the KV cache, output projection (GPT-2's); and the parts
// every attention layer shares: appending a step's keys and values to the caches, attending
// over them.
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

// A (T, H·D) matrix seen as (T, H, D) heads.
template <std::size_t H, std::size_t D, class M>
auto split_heads(M m, std::size_t heads) {
    using E = Extents<dyn, H, D>;
    return TensorView<typename M::element_type, E, typename M::backend_type>(m.data(), E(m.extent(0), heads, m.extent(1) / heads));
}

// The step's new keys and values appended to each sequence's cache (`seqs`, in row order):
// project(keys, values) writes them for all the step's rows, then adjust(keys, first) may change
// one sequence's keys, its first position given (rotary positions). One sequence with an f32
// cache gets them written straight into its cache; otherwise they go to k and v (T, width)
// first (one product for all) and then into each cache (KvCache::store: copied, or rounded to
// bf16 or Q8_0).
template <class Cache, class Backend, class Staged, class Project, class Adjust>
void append_keys_values(Backend& backend, std::span<const CacheRows<Cache>> seqs, Staged k, Staged v, Project&& project,
                        Adjust&& adjust) {
    if (!stages_keys(seqs)) {
        const CacheRows<Cache>& s = seqs[0];
        const auto keys = Cache::matrix_rows(s.cache->keys, s.first, s.count);
        project(keys, Cache::matrix_rows(s.cache->values, s.first, s.count));
        adjust(keys, s.first);
        return;
    }
    if (seqs.size() > 1 && !HasCopy<Backend>) {
        throw ArgumentError(std::string("attention: the ") + Backend::name + " backend runs one sequence per step (it has no copy kernel)");
    }
    project(k, v);
    for (const CacheRows<Cache>& s : seqs) {
        adjust(k.rows(s.row, s.count), s.first);
        s.cache->store(backend, k.rows(s.row, s.count), v.rows(s.row, s.count), s.first);
    }
}

// att(T, H·D) = attention of each sequence's queries q(T, H·D) over its cache (keys and values
// of H or fewer heads: grouped-query attention), for each cache precision the backend keeps.
template <std::size_t H, std::size_t D, class Cache, class Backend, class Scratch>
void attend_over_caches(Backend& backend, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att, std::size_t heads);

namespace detail {
// attend_over_caches for the caches stored as KV (those of other precisions are left to the
// other call).
template <class KV, std::size_t H, std::size_t D, class Cache, class Backend, class Scratch>
void attend_stored_as(Backend& backend, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att, std::size_t heads) {
    constexpr KvPrecision precision = std::is_same_v<KV, float>  ? KvPrecision::f32
                                      : std::is_same_v<KV, bf16> ? KvPrecision::bf16
                                                                 : KvPrecision::q8_0;
    if (seqs.size() == 1) {
        const CacheRows<Cache>& s = seqs[0];
        if (s.cache->precision != precision) return;
        causal_attention(backend, split_heads<H, D>(q, heads), Cache::rows(s.cache->template stored_keys<KV>(), 0, s.first + s.count),
                         Cache::rows(s.cache->template stored_values<KV>(), 0, s.first + s.count), split_heads<H, D>(att, heads));
        return;
    }
    // One call for all sequences (their operand list grows once per thread).
    thread_local std::vector<AttentionOperands<Backend, KV>> each;
    each.clear();
    for (const CacheRows<Cache>& s : seqs) {
        if (s.cache->precision != precision) continue;
        each.push_back({input_operand<3, Backend>(split_heads<H, D>(q.rows(s.row, s.count), heads)),
                        stored_operand<3, Backend>(Cache::rows(s.cache->template stored_keys<KV>(), 0, s.first + s.count)),
                        stored_operand<3, Backend>(Cache::rows(s.cache->template stored_values<KV>(), 0, s.first + s.count)),
                        output_operand<3, Backend>(split_heads<H, D>(att.rows(s.row, s.count), heads))});
    }
    if (!each.empty()) causal_attention(backend, std::span<const AttentionOperands<Backend, KV>>(each));
}
}  // namespace detail

template <std::size_t H, std::size_t D, class Cache, class Backend, class Scratch>
void attend_over_caches(Backend& backend, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att, std::size_t heads) {
    detail::attend_stored_as<float, H, D>(backend, seqs, q, att, heads);
    if constexpr (HasBf16KvCache<Backend>) detail::attend_stored_as<bf16, H, D>(backend, seqs, q, att, heads);
    if constexpr (HasQ8KvCache<Backend>) detail::attend_stored_as<Q8_0, H, D>(backend, seqs, q, att, heads);
}

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
    // x): each sequence's q attends over its own cache, to which its k and v are appended
    // (append_keys_values). q, att, k and v are (T, C) scratch. out may not be x.
    template <class Backend, class X, class Scratch, class Out>
    void operator()(Backend& backend, const X& x, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att,
                    Scratch k, Scratch v, Out&& out) const {
        query(backend, x, q);
        append_keys_values(
            backend, seqs, k, v,
            [&](auto keys, auto values) {
                key(backend, x, keys);
                value(backend, x, values);
            },
            [](auto, std::size_t) {});
        attend_over_caches<H, head_dim>(backend, seqs, q, att, heads);
        proj(backend, att, out);
    }
};

}  // namespace tessera
