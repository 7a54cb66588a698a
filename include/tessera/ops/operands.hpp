#pragma once
// How an op turns its arguments (Tensors or views, any static/dynamic mix) into the fully
// dynamic float views that backend kernels take, rejecting misuse at compile time.
#include <cstddef>      // std::size_t
#include <string>       // std::string
#include <type_traits>  // std::is_same_v, std::remove_const_t, std::remove_cvref_t

#include <tessera/core/concepts.hpp>     // TensorLike, view_of_t
#include <tessera/core/error.hpp>        // ArgumentError
#include <tessera/core/extents.hpp>      // DynExtents
#include <tessera/core/tensor_view.hpp>  // TensorView

namespace tessera {

template <TensorLike X>
using extents_of_t = typename std::remove_cvref_t<X>::extents_type;
template <TensorLike X>
using backend_of_t = typename std::remove_cvref_t<X>::backend_type;

namespace detail {

template <std::size_t Rank, class B, class X>
constexpr void check_operand_type() {
    static_assert(std::is_same_v<backend_of_t<X>, B>,
                  "tessera: an operand lives on another backend than the one running the operation.");
    static_assert(std::is_same_v<typename view_of_t<X>::value_type, float>,
                  "tessera: kernels compute in float; widen bf16/f16 tensors with convert() first.");
    static_assert(extents_of_t<X>::rank() == Rank,
                  "tessera: an operand has the wrong rank for this operation (see the shape comment of the operation).");
}

}  // namespace detail

// The element type of a tensor or view (float, bf16, Q8_0, ...).
template <TensorLike X>
using value_type_of_t = typename view_of_t<const std::remove_cvref_t<X>>::value_type;

// A read-only operand of rank Rank kept in its stored element type (float, bf16, Q8_0, ...),
// as the dynamic view the backend's kernels take.
template <std::size_t Rank, class B, TensorLike X>
TensorView<const value_type_of_t<X>, DynExtents<Rank>, B> stored_operand(const X& x) {
    static_assert(std::is_same_v<backend_of_t<X>, B>,
                  "tessera: an operand lives on another backend than the one running the operation.");
    static_assert(extents_of_t<X>::rank() == Rank,
                  "tessera: an operand has the wrong rank for this operation (see the shape comment of the operation).");
    return TensorView<const value_type_of_t<X>, DynExtents<Rank>, B>(x.view());
}

// A weight matrix stored in a narrower format W than float (WeightFormat<W>): N rows of
// K / block elements.
template <class B, TensorLike X>
TensorView<const value_type_of_t<X>, DynExtents<2>, B> stored_weight_operand(const X& x) {
    static_assert(extents_of_t<X>::rank() == 2, "tessera: stored weights are a matrix [out, in / block].");
    return stored_operand<2, B>(x);
}

// A read-only operand of rank Rank on backend B.
template <std::size_t Rank, class B, TensorLike X>
TensorView<const float, DynExtents<Rank>, B> input_operand(const X& x) {
    detail::check_operand_type<Rank, B, const X>();
    return TensorView<const float, DynExtents<Rank>, B>(x.view());
}

// A written operand of rank Rank on backend B (a non-const Tensor, or a view of non-const).
template <std::size_t Rank, class B, TensorLike X>
TensorView<float, DynExtents<Rank>, B> output_operand(X&& x) {
    detail::check_operand_type<Rank, B, X>();
    static_assert(!std::is_const_v<typename view_of_t<X>::element_type>,
                  "tessera: the output operand is read-only (a const Tensor or a view of const float).");
    return TensorView<float, DynExtents<Rank>, B>(x.view());
}

// Kernels that read and write different arrays (gemm, gemv, attention's k and v) need their
// output apart from those inputs.
inline void check_no_overlap(const void* out, std::size_t out_bytes, const void* in, std::size_t in_bytes,
                             const char* op, const char* out_name, const char* in_name) {
    const auto* o = static_cast<const char*>(out);
    const auto* i = static_cast<const char*>(in);
    if (out_bytes != 0 && in_bytes != 0 && o < i + in_bytes && i < o + out_bytes) {
        throw ArgumentError(std::string(op) + ": the output " + out_name + " overlaps the input " + in_name);
    }
}

}  // namespace tessera
