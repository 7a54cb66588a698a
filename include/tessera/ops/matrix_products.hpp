#pragma once
// gemm and gemv with their shape rules: static disagreements do not compile, dynamic ones throw
// ShapeError. Weights are [out, in] (each output's weights contiguous), so C = A · Wᵀ.
#include <tessera/backend/backend.hpp>  // Backend
#include <tessera/core/extents.hpp>     // dims_may_match, check_dim
#include <tessera/core/weight_formats.hpp>  // WeightFormat, stored_elements
#include <tessera/ops/operands.hpp>     // input_operand, output_operand
#include <cstddef>  // std::nullptr_t

namespace tessera {

// c(M,N) = a(M,K) · w(N,K)ᵀ + bias(N).
template <Backend B, TensorLike A, TensorLike W, TensorLike Bias, TensorLike C>
void gemm(B& backend, const A& a, const W& w, const Bias& bias, C&& c) {
    using EA = extents_of_t<A>;
    using EW = extents_of_t<W>;
    using EC = extents_of_t<C>;
    using EBias = extents_of_t<Bias>;
    static_assert(EA::rank() == 2 && EW::rank() == 2 && EC::rank() == 2 && EBias::rank() == 1,
                  "gemm: a, w and c must be matrices and bias a vector.");
    static_assert(dims_may_match<EA, 1, EW, 1>,
                  "gemm: a's columns must equal w's columns (w is [out, in] and c = a · wᵀ).");
    static_assert(dims_may_match<EC, 0, EA, 0>, "gemm: c must have as many rows as a.");
    static_assert(dims_may_match<EC, 1, EW, 0>, "gemm: c must have as many columns as w has rows.");
    static_assert(dims_may_match<EBias, 0, EW, 0>, "gemm: bias must have one value per row of w.");
    const auto av = input_operand<2, B>(a);
    const auto wv = input_operand<2, B>(w);
    const auto bv = input_operand<1, B>(bias);
    const auto cv = output_operand<2, B>(c);
    check_dim(av.extent(1), wv.extent(1), "gemm", "a's column count", "w's column count");
    check_dim(cv.extent(0), av.extent(0), "gemm", "c's row count", "a's row count");
    check_dim(cv.extent(1), wv.extent(0), "gemm", "c's column count", "w's row count");
    if (!bv.empty()) check_dim(bv.extent(0), wv.extent(0), "gemm", "bias length", "w's row count");
    check_no_overlap(cv.data(), cv.size() * sizeof(float), av.data(), av.size() * sizeof(float), "gemm", "c", "a");
    check_no_overlap(cv.data(), cv.size() * sizeof(float), wv.data(), wv.size() * sizeof(float), "gemm", "c", "w");
    backend.gemm(av, wv, bv, cv);
}

// Weights stored in a narrower format than float (bf16, Q8_0, Q4_0: core/weight_formats.hpp).
template <class W>
concept StoredWeights = TensorLike<W> && !std::is_same_v<value_type_of_t<W>, float> && WeightType<value_type_of_t<W>>;

// c(M,N) = a(M,K) · w(N,K)ᵀ + bias(N) with w stored as N rows of K / block elements. K must be
// a whole number of blocks (the layer that quantized w made sure of it).
// `packed`: the backend's second layout of w for several rows (HasPackedWeights), w's arranged
// order (ArrangesWeights), or nullptr.
namespace detail {
template <Backend B, TensorLike A, TensorLike W, TensorLike Bias, TensorLike C, class Packed>
void gemm_stored(B& backend, const A& a, const W& w, const Bias& bias, C&& c, const Packed* packed) {
    using Stored = value_type_of_t<W>;
    static_assert(HasGemmWith<B, Stored>, "gemm: this backend has no kernel for weights stored in this format.");
    constexpr std::size_t block = WeightFormat<Stored>::block;
    using EA = extents_of_t<A>;
    using EW = extents_of_t<W>;
    static_assert(EA::rank() == 2 && EW::rank() == 2 && extents_of_t<C>::rank() == 2 && extents_of_t<Bias>::rank() == 1,
                  "gemm: a, w and c must be matrices and bias a vector.");
    static_assert(EA::static_extent(1) == dyn || EW::static_extent(1) == dyn ||
                      EA::static_extent(1) == EW::static_extent(1) * block,
                  "gemm: a's columns must equal w's columns (w is [out, in / block] and c = a · wᵀ).");
    const auto av = input_operand<2, B>(a);
    const auto wv = stored_weight_operand<B>(w);
    const auto bv = input_operand<1, B>(bias);
    const auto cv = output_operand<2, B>(c);
    check_dim(av.extent(1), wv.extent(1) * block, "gemm", "a's column count", "w's column count");
    check_dim(cv.extent(0), av.extent(0), "gemm", "c's row count", "a's row count");
    check_dim(cv.extent(1), wv.extent(0), "gemm", "c's column count", "w's row count");
    if (!bv.empty()) check_dim(bv.extent(0), wv.extent(0), "gemm", "bias length", "w's row count");
    check_no_overlap(cv.data(), cv.size() * sizeof(float), av.data(), av.size() * sizeof(float), "gemm", "c", "a");
    check_no_overlap(cv.data(), cv.size() * sizeof(float), wv.data(), wv.size() * sizeof(Stored), "gemm", "c", "w");
    if constexpr (!std::is_same_v<Packed, std::nullptr_t>) {
        if (packed != nullptr) return backend.gemm(av, wv, *packed, bv, cv);
    }
    backend.gemm(av, wv, bv, cv);
}
}  // namespace detail

template <Backend B, TensorLike A, TensorLike W, TensorLike Bias, TensorLike C>
    requires StoredWeights<W>
void gemm(B& backend, const A& a, const W& w, const Bias& bias, C&& c) {
    detail::gemm_stored(backend, a, w, bias, c, static_cast<const std::nullptr_t*>(nullptr));
}

// The same, over the backend's packed copy of w where it has one for these rows.
template <Backend B, TensorLike A, TensorLike W, TensorLike Bias, TensorLike C>
    requires StoredWeights<W> && HasPackedWeights<B, value_type_of_t<W>>
void gemm(B& backend, const A& a, const W& w, const typename B::template PackedWeights<value_type_of_t<W>>& packed,
          const Bias& bias, C&& c) {
    detail::gemm_stored(backend, a, w, bias, c, &packed);
}

// The same with w (float or stored) arranged in the backend's own order (ArrangesWeights;
// `arranged` says whether it was).
template <Backend B, TensorLike A, TensorLike W, TensorLike Bias, TensorLike C>
    requires(StoredWeights<W> || std::is_same_v<value_type_of_t<W>, float>) && ArrangesWeights<B, value_type_of_t<W>>
void gemm(B& backend, const A& a, const W& w, const typename B::template ArrangedWeights<value_type_of_t<W>>& arranged,
          const Bias& bias, C&& c) {
    detail::gemm_stored(backend, a, w, bias, c, &arranged);
}

// c(M,N) = a(M,K) · w(N,K)ᵀ.
template <Backend B, TensorLike A, TensorLike W, TensorLike C>
void gemm(B& backend, const A& a, const W& w, C&& c) {
    gemm(backend, a, w, VectorView<const float, B>{}, c);
}

// y(N) = w(N,K) · x(K) + bias(N).
template <Backend B, TensorLike W, TensorLike X, TensorLike Bias, TensorLike Y>
void gemv(B& backend, const W& w, const X& x, const Bias& bias, Y&& y) {
    using EW = extents_of_t<W>;
    using EX = extents_of_t<X>;
    using EY = extents_of_t<Y>;
    using EBias = extents_of_t<Bias>;
    static_assert(EW::rank() == 2 && EX::rank() == 1 && EY::rank() == 1 && EBias::rank() == 1,
                  "gemv: w must be a matrix and x, bias and y vectors.");
    static_assert(dims_may_match<EX, 0, EW, 1>, "gemv: x's length must equal w's columns (w is [out, in]).");
    static_assert(dims_may_match<EY, 0, EW, 0>, "gemv: y's length must equal w's rows.");
    static_assert(dims_may_match<EBias, 0, EW, 0>, "gemv: bias must have one value per row of w.");
    const auto wv = input_operand<2, B>(w);
    const auto xv = input_operand<1, B>(x);
    const auto bv = input_operand<1, B>(bias);
    const auto yv = output_operand<1, B>(y);
    check_dim(xv.extent(0), wv.extent(1), "gemv", "x's length", "w's column count");
    check_dim(yv.extent(0), wv.extent(0), "gemv", "y's length", "w's row count");
    if (!bv.empty()) check_dim(bv.extent(0), wv.extent(0), "gemv", "bias length", "w's row count");
    check_no_overlap(yv.data(), yv.size() * sizeof(float), xv.data(), xv.size() * sizeof(float), "gemv", "y", "x");
    check_no_overlap(yv.data(), yv.size() * sizeof(float), wv.data(), wv.size() * sizeof(float), "gemv", "y", "w");
    backend.gemv(wv, xv, bv, yv);
}

// y(N) = w(N,K) · x(K) + bias(N) with w stored in a narrower format: the one-row gemm.
template <Backend B, TensorLike W, TensorLike X, TensorLike Bias, TensorLike Y>
    requires StoredWeights<W>
void gemv(B& backend, const W& w, const X& x, const Bias& bias, Y&& y) {
    static_assert(extents_of_t<X>::rank() == 1 && extents_of_t<Y>::rank() == 1, "gemv: x and y must be vectors.");
    const auto xv = input_operand<1, B>(x);
    const auto yv = output_operand<1, B>(y);
    gemm(backend, MatrixView<const float, B>(xv.data(), DynExtents<2>(1, xv.extent(0))), w, bias,
         MatrixView<float, B>(yv.data(), DynExtents<2>(1, yv.extent(0))));
}

// y(N) = w(N,K) · x(K).
template <Backend B, TensorLike W, TensorLike X, TensorLike Y>
void gemv(B& backend, const W& w, const X& x, Y&& y) {
    gemv(backend, w, x, VectorView<const float, B>{}, y);
}

}  // namespace tessera
