#pragma once
// Embedding<V, C, B, W>: token ids to rows of a (V, C) table, stored as W (float, or bf16 /
// Q8_0 / Q4_0 widened row by row when gathered); also the tied LM head's weight (project). A
// backend may arrange the table in place once loaded (ArrangesTables: the CPU's f32, bf16, Q8_0
// and Q4_0) so that the head reads it as a Linear reads its arranged weights.
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::string

#include <tessera/backend/backend.hpp>  // ArrangesTables, HasPackedWeights
#include <tessera/core/tensor.hpp>    // Tensor
#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/core/weight_formats.hpp>  // WeightType
#include <tessera/nn/parameter.hpp>   // WeightSource, whole_blocks
#include <tessera/ops/embedding.hpp>  // gather_rows
#include <tessera/ops/matrix_products.hpp>  // gemm

namespace tessera {

template <std::size_t V, std::size_t C, class B, WeightType W = float>
struct Embedding {
    static constexpr std::size_t block = WeightFormat<W>::block;
    static_assert(C == dyn || C % block == 0, "Embedding: the width must be a whole number of the format's blocks.");
    // (V, C / block); on a backend that ArrangesTables, in its own order once loaded, so read it
    // only through operator() and project.
    Tensor<W, Extents<V, C == dyn ? dyn : C / block>, B> table;
    // What arranging the table did (load; ArrangesTables: the CPU's f32, bf16, Q8_0, Q4_0), or the
    // backend's packed copy of it for the head's products of several rows (a batched step;
    // HasPackedWeights: the CPU's Q6_K), empty until prepare_batches.
    [[no_unique_address]] typename detail::KeptLayoutOf<B, W, ArrangesTables<B, W>>::type packed{};

    Embedding(std::size_t v, std::size_t c) : table(v, whole_blocks<W>(c, "Embedding")) {}
    Embedding()
        requires(V != dyn && C != dyn)
        : Embedding(V, C) {}

    void load(const WeightSource<B>& src, const std::string& name) {
        src.table_into(name, table);
        if constexpr (ArrangesTables<B, W>) {
            packed = src.backend.arrange_weights(MatrixView<W, B>(table.data(), DynExtents<2>(table.extent(0), table.extent(1))));
        } else {
            packed = {};  // (stale: prepare_batches packs the new table)
        }
    }

    // As Linear::prepare_batches, for the table as the tied head.
    void prepare_batches(B& backend) {
        if constexpr (HasPackedWeights<B, W> && !ArrangesTables<B, W>) {
            packed = backend.pack_weights(MatrixView<const W, B>(table.data(), DynExtents<2>(table.extent(0), table.extent(1))));
        }
    }

    // The head: logits(T, V) = x(T, C) · tableᵀ, over the arranged table or the packed copy
    // where there is one.
    template <class Backend, TensorLike X, TensorLike Logits>
    void project(Backend& backend, const X& x, Logits&& logits) const {
        if constexpr (ArrangesTables<Backend, W>) {
            return gemm(backend, x, table, packed, VectorView<const float, Backend>{}, logits);  // (arranged or as stored)
        } else if constexpr (HasPackedWeights<Backend, W>) {
            if (!packed.empty()) return gemm(backend, x, table, packed, VectorView<const float, Backend>{}, logits);
        }
        gemm(backend, x, table, logits);
    }

    // out(T, C) = table[ids]; an id outside [0, V) is an ArgumentError naming it and its position.
    template <class Backend, TensorLike Out>
    void operator()(Backend& backend, std::span<const TokenId> ids, Out&& out) const {
        if constexpr (ArrangesTables<Backend, W>) {
            gather_rows(backend, table, packed, ids, out);
        } else {
            gather_rows(backend, table, ids, out);
        }
    }
};

}  // namespace tessera
