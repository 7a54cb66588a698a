#pragma once
// Embedding<V, C>: token ids to rows of a (V, C) table; also the tied LM head's weight.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int32_t
#include <span>     // std::span
#include <string>   // std::to_string

#include <tessera/core/error.hpp>    // ArgumentError
#include <tessera/core/tensor.hpp>   // Tensor
#include <tessera/nn/parameter.hpp>  // WeightSource
#include <tessera/ops/transfer.hpp>  // copy_from_host

namespace tessera {

template <std::size_t V, std::size_t C, class B>
struct Embedding {
    Tensor<float, Extents<V, C>, B> table;  // (V, C)

    void load(const WeightSource& src, const std::string& name) {
        src.read_into(name, {V, C}, table);
    }

    // out(T, C) = table[ids]; an id outside [0, V) is an ArgumentError naming it and its position.
    template <class Backend, TensorLike Out>
    void operator()(Backend& backend, std::span<const std::int32_t> ids, Out&& out) const {
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= V) {
                throw ArgumentError("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                    " is outside the model's vocabulary of " + std::to_string(V));
            }
        }
        backend.gather_rows(MatrixView<const float, Backend>(table.view()), ids, MatrixView<float, Backend>(out.view()));
    }
};

}  // namespace tessera
