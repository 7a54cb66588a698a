#pragma once
// Concepts for the public boundaries of the core types. A misuse fails here, naming the
// requirement, rather than deep inside a kernel.
#include <concepts>     // std::constructible_from, std::convertible_to, std::same_as
#include <cstddef>      // std::size_t
#include <type_traits>  // std::remove_cvref_t
#include <utility>      // std::declval

namespace tessera {

// A backend's memory: Buffer<T>(n) allocates n elements, data() points at them, and
// host_accessible says whether the host may dereference that pointer.
template <class B>
concept StorageBackend = requires {
    typename B::template Buffer<float>;
    { B::host_accessible } -> std::convertible_to<bool>;
    { B::name } -> std::convertible_to<const char*>;
} && std::constructible_from<typename B::template Buffer<float>, std::size_t> &&
                         requires(typename B::template Buffer<float>& buffer) {
                             { buffer.data() } -> std::same_as<float*>;
                         };

// A Tensor or a TensorView: has extents, an element type, a backend and a view().
template <class X>
concept TensorLike = requires(X& x) {
    typename std::remove_cvref_t<X>::extents_type;
    typename std::remove_cvref_t<X>::element_type;
    typename std::remove_cvref_t<X>::backend_type;
    x.view();
};

// The view type of a Tensor or TensorView (const-qualified for a const Tensor).
template <TensorLike X>
using view_of_t = decltype(std::declval<X&>().view());

}  // namespace tessera
