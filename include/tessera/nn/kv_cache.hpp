#pragma once
// KvCache: one layer's keys and values for every position so far, preallocated for the whole
// context so that decoding never allocates. Laid out (position, head, head_dim), which is what
// causal_attention reads, and what the k and v projections write, row by row.
#include <cstddef>  // std::size_t

#include <tessera/core/tensor.hpp>  // Tensor, TensorView

namespace tessera {

template <std::size_t Ctx, std::size_t H, std::size_t D, class B>
struct KvCache {
    Tensor<float, Extents<Ctx, H, D>, B> keys;    // (Ctx, H, D)
    Tensor<float, Extents<Ctx, H, D>, B> values;  // (Ctx, H, D)

    // Positions [first, first + count) as (count, H, D) views, or as (count, H*D) matrices.
    static auto rows(Tensor<float, Extents<Ctx, H, D>, B>& t, std::size_t first, std::size_t count) {
        return TensorView<float, Extents<dyn, H, D>, B>(t.data() + first * H * D, Extents<dyn, H, D>(count));
    }
    static auto matrix_rows(Tensor<float, Extents<Ctx, H, D>, B>& t, std::size_t first, std::size_t count) {
        return TensorView<float, Extents<dyn, H * D>, B>(t.data() + first * H * D, Extents<dyn, H * D>(count));
    }
};

}  // namespace tessera
