#pragma once
// LayerNorm<C>: per-row normalisation with a learned scale (gamma) and shift (beta).
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/core/tensor.hpp>          // Tensor
#include <tessera/nn/parameter.hpp>         // WeightSource
#include <tessera/ops/normalization.hpp>    // layer_norm

namespace tessera {

template <std::size_t C, class B>
struct LayerNorm {
    Tensor<float, Extents<C>, B> gamma;  // (C), "weight" in checkpoints
    Tensor<float, Extents<C>, B> beta;   // (C), "bias"
    float eps = 1e-5f;

    explicit LayerNorm(std::size_t c) : gamma(c), beta(c) {}
    LayerNorm()
        requires(C != dyn)
        : LayerNorm(C) {}

    void load(const WeightSource<B>& src, const std::string& name) {
        src.vector_into(name + ".weight", gamma);
        src.vector_into(name + ".bias", beta);
    }

    template <class Backend, TensorLike X, TensorLike Y>
    void operator()(Backend& backend, const X& x, Y&& y) const {
        layer_norm(backend, x, gamma, beta, eps, y);
    }
};

}  // namespace tessera
