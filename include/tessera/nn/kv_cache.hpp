#pragma once
// KvCache: one layer's keys and values for every position so far, preallocated for the whole
// context so that decoding never allocates. Laid out (position, head, head_dim), which is what
// causal_attention reads, and what the k and v projections write, row by row.
//
// Stored as float (the default), as bf16 or as Q8_0 blocks (KvPrecision). The precision is
// chosen per sequence at run time, not by a type parameter: a type would multiply the model's
// instantiations (and compile time) for a choice that touches only attention.
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::string
#include <type_traits>  // std::is_same_v

#include <tessera/backend/backend.hpp>  // HasCopy, HasAttentionOver
#include <tessera/core/dtype.hpp>       // bf16
#include <tessera/core/error.hpp>       // ArgumentError
#include <tessera/core/kv_precision.hpp>  // KvPrecision
#include <tessera/core/tensor.hpp>      // Tensor, TensorView
#include <tessera/core/weight_formats.hpp>  // WeightFormat<Q8_0>: the cache's blocks
#include <tessera/ops/elementwise.hpp>  // copy
#include <tessera/ops/transfer.hpp>     // convert

namespace tessera {

// Whether backend B can keep a cache of keys and values stored as KV (bf16 or Q8_0): attention
// over them, scratch to widen them sized ahead (reserve_attention(queries, keys, head_dim,
// true)), and the rounding of new rows into the cache on host memory.
template <class B, class KV>
concept HasKvCacheOf = B::host_accessible && HasAttentionOver<B, KV> &&
                       requires(B& b, std::size_t n) { b.reserve_attention(n, n, n, true); };
template <class B>
concept HasBf16KvCache = HasKvCacheOf<B, bf16>;
template <class B>
concept HasQ8KvCache = HasKvCacheOf<B, Q8_0>;

// p, or ArgumentError when backend B cannot keep a cache of precision p for heads of head_dim
// values (a Q8_0 cache's blocks of 32 lie within one head).
template <class B>
KvPrecision check_kv_precision(KvPrecision p, std::size_t head_dim) {
    const std::string name(kv_precision_name(p));
    if ((p == KvPrecision::bf16 && !HasBf16KvCache<B>) || (p == KvPrecision::q8_0 && !HasQ8KvCache<B>)) {
        throw ArgumentError("KV cache: the " + std::string(B::name) + " backend keeps keys and values in f32 only (" + name +
                            " runs on the cpu backend)");
    }
    if (p == KvPrecision::q8_0 && head_dim % WeightFormat<Q8_0>::block != 0) {
        throw ArgumentError("KV cache: q8_0 stores each head in blocks of 32 values, and this model's head_dim is " +
                            std::to_string(head_dim) + " (use f32 or bf16)");
    }
    return p;
}

// The elements that hold a position's D values of one head, stored as T: D, or D / 32 Q8_0 blocks.
template <class T, std::size_t D>
inline constexpr std::size_t stored_dim = !std::is_same_v<T, Q8_0> ? D : D == dyn ? dyn : D / WeightFormat<Q8_0>::block;

template <std::size_t Ctx, std::size_t H, std::size_t D, class B>
struct KvCache {
    template <class T>
    using Storage = Tensor<T, Extents<Ctx, H, stored_dim<T, D>>, B>;
    KvPrecision precision;
    Storage<float> keys, values;           // (Ctx, H, D) for an f32 cache, else empty
    Storage<bf16> keys_bf16, values_bf16;  // (Ctx, H, D) for a bf16 cache, else empty
    Storage<Q8_0> keys_q8, values_q8;      // (Ctx, H, D / 32) for a q8_0 cache, else empty

    KvCache(std::size_t ctx, std::size_t heads, std::size_t head_dim, KvPrecision p = KvPrecision::f32)
        : precision(check_kv_precision<B>(p, head_dim)),  // before anything is allocated
          keys(p == KvPrecision::f32 ? ctx : 0, heads, head_dim),
          values(p == KvPrecision::f32 ? ctx : 0, heads, head_dim),
          keys_bf16(p == KvPrecision::bf16 ? ctx : 0, heads, head_dim),
          values_bf16(p == KvPrecision::bf16 ? ctx : 0, heads, head_dim),
          keys_q8(p == KvPrecision::q8_0 ? ctx : 0, heads, head_dim / WeightFormat<Q8_0>::block),
          values_q8(p == KvPrecision::q8_0 ? ctx : 0, heads, head_dim / WeightFormat<Q8_0>::block) {}

    // The keys and the values as stored for element type KV (float: keys, values; bf16:
    // keys_bf16, values_bf16; Q8_0: keys_q8, values_q8).
    template <class KV>
    Storage<KV>& stored_keys() noexcept {
        if constexpr (std::is_same_v<KV, float>) return keys;
        else if constexpr (std::is_same_v<KV, bf16>) return keys_bf16;
        else return keys_q8;
    }
    template <class KV>
    Storage<KV>& stored_values() noexcept {
        if constexpr (std::is_same_v<KV, float>) return values;
        else if constexpr (std::is_same_v<KV, bf16>) return values_bf16;
        else return values_q8;
    }

    // H * D: the width of one position's keys.
    std::size_t width() const noexcept { return keys.extent(1) * keys.extent(2); }
    std::size_t bytes() const noexcept {
        return (keys.size() + values.size()) * sizeof(float) + (keys_bf16.size() + values_bf16.size()) * sizeof(bf16) +
               (keys_q8.size() + values_q8.size()) * sizeof(Q8_0);
    }

    // Positions [first, first + count) as (count, H, D) views (D / 32 blocks for Q8_0), or as
    // (count, H*D) matrices.
    template <class T>
    static auto rows(Storage<T>& t, std::size_t first, std::size_t count) {
        return t.view().rows(first, count);
    }
    template <class T>
    static auto matrix_rows(Storage<T>& t, std::size_t first, std::size_t count) {
        const auto r = rows(t, first, count);  // bounds-checked
        constexpr std::size_t width = H == dyn || stored_dim<T, D> == dyn ? dyn : H * stored_dim<T, D>;
        return TensorView<T, Extents<dyn, width>, B>(r.data(), Extents<dyn, width>(count, r.extent(1) * r.extent(2)));
    }

    // Positions [first, first + k's rows) set to k and v ((count, H*D) each), rounded to bf16
    // or quantized to Q8_0 (per 32 values, as GGUF's Q8_0) in such a cache.
    template <class Backend, class K>
    void store(Backend& backend, const K& k, const K& v, std::size_t first) {
        const std::size_t count = k.extent(0);
        if (precision == KvPrecision::f32) {
            if constexpr (HasCopy<Backend>) {
                copy(backend, k, matrix_rows(keys, first, count));
                copy(backend, v, matrix_rows(values, first, count));
            } else {
                throw ArgumentError(std::string("KV cache: the ") + Backend::name + " backend has no copy kernel");
            }
        } else if (precision == KvPrecision::bf16) {
            if constexpr (HasBf16KvCache<Backend>) {
                convert(k, matrix_rows(keys_bf16, first, count));
                convert(v, matrix_rows(values_bf16, first, count));
            }
        } else if constexpr (HasQ8KvCache<Backend>) {
            // rows of whole heads, each a whole number of blocks: one run over all of them
            WeightFormat<Q8_0>::quantize(k.data(), matrix_rows(keys_q8, first, count).data(), k.size());
            WeightFormat<Q8_0>::quantize(v.data(), matrix_rows(values_q8, first, count).data(), v.size());
        }
    }
};

// One sequence's part of a step that runs several sequences together: rows [row, row + count)
// of the step's activations are its positions [first, first + count), appended to `cache`.
template <class Cache>
struct CacheRows {
    Cache* cache;
    std::size_t first;  // its position before the step
    std::size_t row;    // its first row in the step
    std::size_t count;  // its rows (tokens) in the step
};

// Whether a step's new keys and values go through staging scratch before each cache (several
// sequences, or a bf16 or q8_0 cache to round into); else they are projected straight into the one
// f32 cache.
template <class Cache>
bool stages_keys(std::span<const CacheRows<Cache>> seqs) noexcept {
    return seqs.size() > 1 || seqs[0].cache->precision != KvPrecision::f32;
}

}  // namespace tessera
