#pragma once
// Causal multi-head attention over (positions, heads, head_dim) tensors.
#include <span>         // std::span
#include <type_traits>  // std::is_same_v

#include <tessera/backend/backend.hpp>  // Backend, AttentionOperands, HasBatchedAttention
#include <tessera/core/error.hpp>       // ShapeError
#include <tessera/core/extents.hpp>     // dims_may_match, check_dim, check_same_shape
#include <tessera/ops/operands.hpp>     // input_operand, output_operand

namespace tessera {

namespace detail {
// Values per stored key or value element: 1, or a Q8_0 block's 32.
template <class KV>
inline constexpr std::size_t stored_values_per_element = std::is_same_v<std::remove_const_t<KV>, Q8_0> ? 32 : 1;

template <class QV, class KV, class OV>
void check_attention_operands(const QV& qv, const KV& kv, const KV& vv, const OV& ov) {
    check_same_shape(vv.extents(), kv.extents(), "causal_attention", "v's shape", "k's shape");
    check_same_shape(ov.extents(), qv.extents(), "causal_attention", "out's shape", "q's shape");
    if (kv.extent(1) == 0 || qv.extent(1) % kv.extent(1) != 0) {
        throw ShapeError("causal_attention: q's " + std::to_string(qv.extent(1)) + " heads are not a whole number of groups over k's " +
                         std::to_string(kv.extent(1)) + " heads");
    }
    check_dim(qv.extent(2), kv.extent(2) * stored_values_per_element<typename KV::value_type>, "causal_attention", "q's head_dim",
              "k's head_dim");
    if (qv.extent(0) > kv.extent(0)) {
        throw ShapeError("causal_attention: " + std::to_string(qv.extent(0)) + " queries but only " +
                         std::to_string(kv.extent(0)) + " keys; the queries must be the last positions of the keys");
    }
    constexpr std::size_t kv_bytes = sizeof(typename KV::value_type);
    check_no_overlap(ov.data(), ov.size() * sizeof(float), kv.data(), kv.size() * kv_bytes, "causal_attention", "out",
                     "k");
    check_no_overlap(ov.data(), ov.size() * sizeof(float), vv.data(), vv.size() * kv_bytes, "causal_attention", "out",
                     "v");
}
}  // namespace detail

// out(Tq,H,D) = softmax(q·kᵀ/√D, causal) · v with k, v (Tk,Hkv,D) and Tq <= Tk: the queries are
// the last Tq positions (prefill: Tq = Tk; decoding with a KV cache: Tq = 1). Hkv divides H:
// query heads [g·H/Hkv, (g+1)·H/Hkv) share key/value head g (grouped-query attention; Hkv = H
// is multi-head, Hkv = 1 multi-query). out may be q.
// k and v are float, or bf16 or Q8_0 (a KV cache of that precision; Q8_0's last extent counts
// blocks of 32 values) on a backend with HasAttentionOver<B, KV>.
template <Backend B, TensorLike Q, TensorLike K, TensorLike V, TensorLike Out>
void causal_attention(B& backend, const Q& q, const K& k, const V& v, Out&& out) {
    using EQ = extents_of_t<Q>;
    using EK = extents_of_t<K>;
    using KV = value_type_of_t<K>;
    static_assert(EQ::rank() == 3 && EK::rank() == 3 && extents_of_t<V>::rank() == 3,
                  "causal_attention: q, k, v and out must be (positions, heads, head_dim) tensors.");
    static_assert(std::is_same_v<KV, Q8_0> || dims_may_match<EQ, 2, EK, 2>, "causal_attention: q and k must have the same head_dim.");
    static_assert(extents_may_match<EK, extents_of_t<V>>, "causal_attention: k and v must have the same shape.");
    static_assert(extents_may_match<EQ, extents_of_t<Out>>, "causal_attention: out must have q's shape.");
    static_assert(std::is_same_v<KV, value_type_of_t<V>>, "causal_attention: k and v must have the same element type.");
    static_assert(std::is_same_v<KV, float> || ((std::is_same_v<KV, bf16> || std::is_same_v<KV, Q8_0>) && HasAttentionOver<B, KV>),
                  "causal_attention: k and v must be float, or bf16 or Q8_0 on a backend with HasAttentionOver<B, KV>.");
    const auto qv = input_operand<3, B>(q);
    const auto kv = stored_operand<3, B>(k);
    const auto vv = stored_operand<3, B>(v);
    const auto ov = output_operand<3, B>(out);
    detail::check_attention_operands(qv, kv, vv, ov);
    backend.causal_attention(qv, kv, vv, ov);
}

// causal_attention for each entry (several sequences of a batched step, each over its own
// keys), as one backend call where the backend has one (HasBatchedAttention).
template <Backend B, class KV>
void causal_attention(B& backend, std::span<const AttentionOperands<B, KV>> each) {
    for (const AttentionOperands<B, KV>& e : each) detail::check_attention_operands(e.q, e.k, e.v, e.out);
    if constexpr (HasBatchedAttention<B, KV>) {
        backend.causal_attention(each);
    } else {
        for (const AttentionOperands<B, KV>& e : each) backend.causal_attention(e.q, e.k, e.v, e.out);
    }
}

}  // namespace tessera
