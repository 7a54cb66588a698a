#pragma once
// Element-wise ops: any rank, operands of identical shape; the output may be an input.
#include <cstddef>  // std::size_t
#include <string>   // std::to_string

#include <tessera/backend/backend.hpp>  // Backend
#include <tessera/core/error.hpp>       // ShapeError
#include <tessera/core/extents.hpp>     // extents_may_match, check_same_shape
#include <tessera/ops/operands.hpp>     // input_operand, output_operand

namespace tessera {

namespace detail {
template <TensorLike X>
auto flat_view(const X& x) {
    return x.view().flat();
}
}  // namespace detail

// out = a + b.
template <Backend B, TensorLike A, TensorLike Bx, TensorLike Out>
void add(B& backend, const A& a, const Bx& b, Out&& out) {
    static_assert(extents_may_match<extents_of_t<A>, extents_of_t<Bx>> &&
                      extents_may_match<extents_of_t<A>, extents_of_t<Out>>,
                  "add: a, b and out must have the same rank and sizes.");
    check_same_shape(a.extents(), b.extents(), "add", "a's shape", "b's shape");
    check_same_shape(a.extents(), out.extents(), "add", "a's shape", "out's shape");
    backend.add(input_operand<1, B>(detail::flat_view(a)), input_operand<1, B>(detail::flat_view(b)),
                output_operand<1, B>(out.view().flat()));
}

// dst = src, on a backend that copies within its memory (HasCopy).
template <Backend B, TensorLike Src, TensorLike Dst>
    requires HasCopy<B>
void copy(B& backend, const Src& src, Dst&& dst) {
    static_assert(extents_may_match<extents_of_t<Src>, extents_of_t<Dst>>,
                  "copy: src and dst must have the same rank and sizes.");
    check_same_shape(src.extents(), dst.extents(), "copy", "src's shape", "dst's shape");
    backend.copy(input_operand<1, B>(detail::flat_view(src)), output_operand<1, B>(dst.view().flat()));
}

// dst(T, n) = columns [first, first + n) of src(T, N), row by row: one map's outputs out of a
// product over several stacked maps (StackedLinear).
template <Backend B, TensorLike Src, TensorLike Dst>
    requires HasCopy<B>
void copy_columns(B& backend, const Src& src, std::size_t first, Dst&& dst) {
    static_assert(extents_of_t<Src>::rank() == 2 && extents_of_t<Dst>::rank() == 2, "copy_columns: src and dst are matrices.");
    const std::size_t rows = dst.extent(0), n = dst.extent(1), width = src.extent(1);
    if (src.extent(0) != rows || first > width || n > width - first) {
        throw ShapeError("copy_columns: columns [" + std::to_string(first) + ", " + std::to_string(first + n) + ") of " +
                         std::to_string(rows) + " rows are not inside the source's " + std::to_string(src.extent(0)) + " x " +
                         std::to_string(width));
    }
    const auto from = detail::flat_view(src);
    const auto to = dst.view().flat();
    for (std::size_t r = 0; r < rows; ++r) {
        backend.copy(input_operand<1, B>(from.rows(r * width + first, n)), output_operand<1, B>(to.rows(r * n, n)));
    }
}

// out = gelu(x), GPT-2's tanh approximation.
template <Backend B, TensorLike X, TensorLike Out>
void gelu(B& backend, const X& x, Out&& out) {
    static_assert(extents_may_match<extents_of_t<X>, extents_of_t<Out>>,
                  "gelu: x and out must have the same rank and sizes.");
    check_same_shape(x.extents(), out.extents(), "gelu", "x's shape", "out's shape");
    backend.gelu(input_operand<1, B>(detail::flat_view(x)), output_operand<1, B>(out.view().flat()));
}

// out = gate · σ(gate) · up (the gated SiLU of Llama's feed-forward).
template <Backend B, TensorLike G, TensorLike U, TensorLike Out>
    requires HasSiluMul<B>
void silu_mul(B& backend, const G& gate, const U& up, Out&& out) {
    static_assert(extents_may_match<extents_of_t<G>, extents_of_t<U>> && extents_may_match<extents_of_t<G>, extents_of_t<Out>>,
                  "silu_mul: gate, up and out must have the same rank and sizes.");
    check_same_shape(gate.extents(), up.extents(), "silu_mul", "gate's shape", "up's shape");
    check_same_shape(gate.extents(), out.extents(), "silu_mul", "gate's shape", "out's shape");
    backend.silu_mul(input_operand<1, B>(detail::flat_view(gate)), input_operand<1, B>(detail::flat_view(up)),
                     output_operand<1, B>(out.view().flat()));
}

}  // namespace tessera
