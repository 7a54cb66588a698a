#pragma once
// GroupedQueryAttention: Llama's attention. q, k, v projections (with biases in Qwen2, without
// in Llama), optionally an RMSNorm over each head of q and k (Qwen3), rotary positions on q and
// k, causal attention of H query heads over Hkv key/value heads (Hkv divides H: multi-head when
// equal, multi-query when 1), the output projection. Widths: C in and out, H·D for queries,
// Hkv·D for keys and values (D need not be C / H: Qwen3's is not).
#include <cstddef>   // std::size_t
#include <optional>  // std::optional
#include <span>      // std::span

#include <tessera/core/tensor.hpp>           // TensorView
#include <tessera/nn/attention.hpp>          // append_keys_values, attend_over_caches
#include <tessera/nn/kv_cache.hpp>           // KvCache, CacheRows
#include <tessera/nn/linear.hpp>             // Linear
#include <tessera/nn/parameter.hpp>          // WeightSource
#include <tessera/nn/rms_norm.hpp>           // RmsNorm
#include <tessera/nn/rotary_positions.hpp>   // RotaryPositions, RopeSettings
#include <tessera/nn/stacked_linear.hpp>     // StackedLinear

namespace tessera {

// What an attention layer of this kind is, beyond its weights.
struct AttentionShape {
    std::size_t width = 0;     // C
    std::size_t heads = 0;     // H
    std::size_t kv_heads = 0;  // Hkv
    std::size_t head_dim = 0;  // D
    bool qkv_bias = false;     // q/k/v projections with biases (Qwen2)
    bool qk_norm = false;      // RMSNorm over each head of q and k (Qwen3)
    RopeSettings rope;
};

template <class B, class W = float>
struct GroupedQueryAttention {
    using Cache = KvCache<dyn, dyn, dyn, B>;

    StackedLinear<B, W, 3> qkv;                      // q_proj, k_proj, v_proj: one product (StackedLinear)
    Linear<dyn, dyn, B, W> output;                   // o_proj
    std::optional<RmsNorm<dyn, B>> q_norm, k_norm;     // (D) each, when qk_norm
    RotaryPositions rope;
    std::size_t heads, kv_heads, head_dim;

    explicit GroupedQueryAttention(const AttentionShape& s)
        : qkv(s.width, {s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim}, s.qkv_bias),
          output(s.heads * s.head_dim, s.width, false),
          rope(s.head_dim, s.rope),
          heads(s.heads),
          kv_heads(s.kv_heads),
          head_dim(s.head_dim) {
        if (s.qk_norm) {
            q_norm.emplace(s.head_dim);
            k_norm.emplace(s.head_dim);
        }
    }

    void load(const WeightSource<B>& src, float eps) {
        qkv.load(src, {"q_proj", "k_proj", "v_proj"});
        output.load(src, "o_proj");
        if (q_norm) {
            q_norm->load(src, "q_norm");
            k_norm->load(src, "k_norm");
            q_norm->eps = k_norm->eps = eps;
        }
    }
    void prepare_batches(B& backend) {
        qkv.prepare_batches(backend);
        output.prepare_batches(backend);
    }

    // out(T, C) for x(T, C), the rows of one or more sequences (`seqs`, in row order, covering
    // x), each attending over its own cache, to which its keys and values are appended. q and
    // att are (T, H·D) scratch, k and v (T, Hkv·D), room at least qkv.room_floats(T) floats.
    // out may not be x.
    template <class Backend, class X, class Scratch, class Room, class Out>
    void operator()(Backend& backend, const X& x, std::span<const CacheRows<Cache>> seqs, Scratch q, Scratch att, Scratch k,
                    Scratch v, Room room, Out&& out) const {
        append_keys_values(
            backend, seqs, k, v, [&](auto keys, auto values) { qkv(backend, x, room, q, keys, values); },
            [&](auto keys, std::size_t first) {
                if (k_norm) (*k_norm)(backend, per_head(keys), per_head(keys));
                rope(backend, split_heads<dyn, dyn>(keys, kv_heads), first);
            });
        if (q_norm) (*q_norm)(backend, per_head(q), per_head(q));
        for (const CacheRows<Cache>& s : seqs) rope(backend, split_heads<dyn, dyn>(q.rows(s.row, s.count), heads), s.first);
        attend_over_caches<dyn, dyn>(backend, seqs, q, att, heads);
        output(backend, att, out);
    }

private:
    // (T, heads·D) as (T·heads, D): one row per head, what the per-head norms normalise.
    template <class M>
    auto per_head(M m) const {
        using E = Extents<dyn, dyn>;
        return TensorView<typename M::element_type, E, typename M::backend_type>(m.data(), E(m.size() / head_dim, head_dim));
    }
};

}  // namespace tessera
