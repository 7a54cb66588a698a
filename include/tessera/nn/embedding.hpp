#pragma once
// Embedding<V, C>: token ids to rows of a (V, C) table; also the tied LM head's weight.
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::string

#include <tessera/core/tensor.hpp>    // Tensor
#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/nn/parameter.hpp>   // WeightSource
#include <tessera/ops/embedding.hpp>  // gather_rows

namespace tessera {

template <std::size_t V, std::size_t C, class B>
struct Embedding {
    Tensor<float, Extents<V, C>, B> table;  // (V, C)

    Embedding(std::size_t v, std::size_t c) : table(v, c) {}
    Embedding()
        requires(V != dyn && C != dyn)
        : Embedding(V, C) {}

    void load(const WeightSource& src, const std::string& name) {
        src.read_into(name, {table.extent(0), table.extent(1)}, table);
    }

    // out(T, C) = table[ids]; an id outside [0, V) is an ArgumentError naming it and its position.
    template <class Backend, TensorLike Out>
    void operator()(Backend& backend, std::span<const TokenId> ids, Out&& out) const {
        gather_rows(backend, table, ids, out);
    }
};

}  // namespace tessera
