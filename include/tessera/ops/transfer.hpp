#pragma once
// Moving elements between host memory and a backend, and between storage types on the host.
#include <span>         // std::span
#include <string>       // std::to_string
#include <type_traits>  // std::remove_const_t
#include <vector>       // std::vector

#include <tessera/core/concepts.hpp>  // TensorLike, view_of_t
#include <tessera/core/dtype.hpp>     // to_float, from_float
#include <tessera/core/error.hpp>     // ShapeError
#include <tessera/ops/operands.hpp>   // backend_of_t

namespace tessera {

// All elements of x, row-major, in a host vector.
template <TensorLike X>
auto to_host(const X& x) {
    const auto v = x.view();
    std::vector<typename view_of_t<const X>::value_type> host(v.size());
    backend_of_t<X>::download(v.data(), host.data(), v.size());
    return host;
}

// Overwrites every element of dst with host values (row-major); the sizes must agree.
template <class T, TensorLike X>
void copy_from_host(std::span<const T> host, X&& dst) {
    const auto v = dst.view();
    static_assert(std::is_same_v<typename view_of_t<X>::element_type, T>,
                  "copy_from_host: the host values must have the destination's (non-const) element type.");
    if (host.size() != v.size()) {
        throw ShapeError("copy_from_host: " + std::to_string(host.size()) + " host values for a tensor of " +
                         std::to_string(v.size()) + " elements");
    }
    backend_of_t<X>::upload(host.data(), v.data(), v.size());
}

// dst = src element by element through float (widening or narrowing with round-to-nearest-even),
// on a host backend.
template <TensorLike S, TensorLike D>
void convert(const S& src, D&& dst) {
    static_assert(backend_of_t<S>::host_accessible && backend_of_t<D>::host_accessible,
                  "convert: both tensors must be in host memory.");
    const auto s = src.view().flat();
    const auto d = dst.view().flat();
    using Out = typename view_of_t<D>::element_type;
    static_assert(!std::is_const_v<Out>, "convert: the destination is read-only.");
    check_dim(s.size(), d.size(), "convert", "src's size", "dst's size");
    for (std::size_t i = 0; i < s.size(); ++i) d.data()[i] = from_float<Out>(to_float(s.data()[i]));
}

}  // namespace tessera
