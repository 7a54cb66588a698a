#pragma once
// LayerNorm<C>: per-row normalisation with a learned scale (gamma) and shift (beta).
#include <cstddef>  // std::size_t
#include <span>     // std::span

#include <tessera/core/tensor.hpp>          // Tensor
#include <tessera/nn/parameter.hpp>         // WeightSource
#include <tessera/ops/normalization.hpp>    // layer_norm
#include <tessera/ops/transfer.hpp>         // copy_from_host

namespace tessera {

template <std::size_t C, class B>
struct LayerNorm {
    Tensor<float, Extents<C>, B> gamma;  // (C), "weight" in checkpoints
    Tensor<float, Extents<C>, B> beta;   // (C), "bias"
    float eps = 1e-5f;

    void load(const WeightSource& src, const std::string& name) {
        src.read_into(name + ".weight", {C}, gamma);
        src.read_into(name + ".bias", {C}, beta);
    }

    template <class Backend, TensorLike X, TensorLike Y>
    void operator()(Backend& backend, const X& x, Y&& y) const {
        layer_norm(backend, x, gamma, beta, eps, y);
    }
};

}  // namespace tessera
