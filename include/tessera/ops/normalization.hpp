#pragma once
// Row-wise ops: LayerNorm and RMSNorm over the last dimension of a matrix.
#include <tessera/backend/backend.hpp>  // Backend
#include <tessera/core/error.hpp>       // ArgumentError
#include <tessera/core/extents.hpp>     // dims_may_match, check_dim
#include <tessera/ops/operands.hpp>     // input_operand, output_operand

namespace tessera {

// out(T,C) = LayerNorm(x(T,C)) · gamma(C) + beta(C); eps > 0 (GPT-2 uses 1e-5). out may be x.
template <Backend B, TensorLike X, TensorLike G, TensorLike Be, TensorLike Out>
void layer_norm(B& backend, const X& x, const G& gamma, const Be& beta, float eps, Out&& out) {
    using EX = extents_of_t<X>;
    static_assert(EX::rank() == 2 && extents_of_t<G>::rank() == 1 && extents_of_t<Be>::rank() == 1,
                  "layer_norm: x must be a matrix (rows, channels) and gamma, beta vectors.");
    static_assert(dims_may_match<extents_of_t<G>, 0, EX, 1> && dims_may_match<extents_of_t<Be>, 0, EX, 1>,
                  "layer_norm: gamma and beta must have one value per channel (x's columns).");
    static_assert(extents_may_match<EX, extents_of_t<Out>>, "layer_norm: out must have x's shape.");
    const auto xv = input_operand<2, B>(x);
    const auto gv = input_operand<1, B>(gamma);
    const auto bv = input_operand<1, B>(beta);
    const auto ov = output_operand<2, B>(out);
    check_dim(gv.extent(0), xv.extent(1), "layer_norm", "gamma's length", "x's column count");
    check_dim(bv.extent(0), xv.extent(1), "layer_norm", "beta's length", "x's column count");
    check_dim(ov.extent(0), xv.extent(0), "layer_norm", "out's row count", "x's row count");
    check_dim(ov.extent(1), xv.extent(1), "layer_norm", "out's column count", "x's column count");
    if (!(eps > 0.0f)) throw ArgumentError("layer_norm: eps must be positive, got " + std::to_string(eps));
    backend.layer_norm(xv, gv, bv, eps, ov);
}

// out(T,C) = x / √(mean(x²) + eps) · gamma(C), row by row (RMSNorm); eps > 0. out may be x.
template <Backend B, TensorLike X, TensorLike G, TensorLike Out>
    requires HasRmsNorm<B>
void rms_norm(B& backend, const X& x, const G& gamma, float eps, Out&& out) {
    using EX = extents_of_t<X>;
    static_assert(EX::rank() == 2 && extents_of_t<G>::rank() == 1, "rms_norm: x must be a matrix (rows, channels) and gamma a vector.");
    static_assert(dims_may_match<extents_of_t<G>, 0, EX, 1>, "rms_norm: gamma must have one value per channel (x's columns).");
    static_assert(extents_may_match<EX, extents_of_t<Out>>, "rms_norm: out must have x's shape.");
    const auto xv = input_operand<2, B>(x);
    const auto gv = input_operand<1, B>(gamma);
    const auto ov = output_operand<2, B>(out);
    check_dim(gv.extent(0), xv.extent(1), "rms_norm", "gamma's length", "x's column count");
    check_dim(ov.extent(0), xv.extent(0), "rms_norm", "out's row count", "x's row count");
    check_dim(ov.extent(1), xv.extent(1), "rms_norm", "out's column count", "x's column count");
    if (!(eps > 0.0f)) throw ArgumentError("rms_norm: eps must be positive, got " + std::to_string(eps));
    backend.rms_norm(xv, gv, eps, ov);
}

}  // namespace tessera
