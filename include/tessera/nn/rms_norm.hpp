#pragma once
// RmsNorm<C>: per-row division by the root mean square, with a learned scale (Llama's norm).
#include <cstddef>  // std::size_t
#include <string>   // std::string

#include <tessera/core/tensor.hpp>        // Tensor
#include <tessera/nn/parameter.hpp>       // WeightSource
#include <tessera/ops/normalization.hpp>  // rms_norm

namespace tessera {

template <std::size_t C, class B>
struct RmsNorm {
    Tensor<float, Extents<C>, B> gamma;  // (C), "weight" in checkpoints
    float eps = 1e-6f;

    explicit RmsNorm(std::size_t c, float epsilon = 1e-6f) : gamma(c), eps(epsilon) {}

    void load(const WeightSource<B>& src, const std::string& name) { src.vector_into(name + ".weight", gamma); }

    template <class Backend, TensorLike X, TensorLike Y>
    void operator()(Backend& backend, const X& x, Y&& y) const {
        rms_norm(backend, x, gamma, eps, y);
    }
};

}  // namespace tessera
