#pragma once
// KvCache: one layer's keys and values for every position so far, preallocated for the whole
// context so that decoding never allocates. Laid out (position, head, head_dim), which is what
// causal_attention reads, and what the k and v projections write, row by row.
#include <cstddef>  // std::size_t

#include <tessera/core/tensor.hpp>  // Tensor, TensorView

namespace tessera {

template <std::size_t Ctx, std::size_t H, std::size_t D, class B>
struct KvCache {
    using Storage = Tensor<float, Extents<Ctx, H, D>, B>;
    Storage keys;    // (Ctx, H, D)
    Storage values;  // (Ctx, H, D)

    KvCache(std::size_t ctx, std::size_t heads, std::size_t head_dim)
        : keys(ctx, heads, head_dim), values(ctx, heads, head_dim) {}

    // Positions [first, first + count) as (count, H, D) views, or as (count, H*D) matrices.
    static auto rows(Storage& t, std::size_t first, std::size_t count) {
        return t.view().rows(first, count);
    }
    static auto matrix_rows(Storage& t, std::size_t first, std::size_t count) {
        const auto r = rows(t, first, count);  // bounds-checked
        constexpr std::size_t width = H == dyn || D == dyn ? dyn : H * D;
        return TensorView<float, Extents<dyn, width>, B>(r.data(), Extents<dyn, width>(count, r.extent(1) * r.extent(2)));
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

}  // namespace tessera
