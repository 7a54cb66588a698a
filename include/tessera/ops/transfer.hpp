#pragma once
// Moving elements between host memory and a backend, and between storage types on the host.
#include <algorithm>    // std::copy
#include <concepts>     // std::same_as
#include <span>         // std::span
#include <string>       // std::to_string
#include <type_traits>  // std::remove_const_t
#include <vector>       // std::vector

#include <tessera/core/concepts.hpp>  // TensorLike, view_of_t
#include <tessera/core/dtype.hpp>     // to_float, from_float
#include <tessera/core/error.hpp>     // ShapeError
#include <tessera/ops/operands.hpp>   // backend_of_t

namespace tessera {

// All elements of x, row-major, in a host vector: downloaded by `backend`, after the work it
// queued (HasTransfers).
template <class B, TensorLike X>
    requires std::same_as<B, backend_of_t<X>>
auto to_host(B& backend, const X& x) {
    const auto v = x.view();
    std::vector<typename view_of_t<const X>::value_type> host(v.size());
    backend.download(v.data(), host.data(), v.size());
    return host;
}
// The same for a tensor in host memory, which needs no backend to read.
template <TensorLike X>
    requires backend_of_t<X>::host_accessible
auto to_host(const X& x) {
    const auto v = x.view();
    return std::vector<typename view_of_t<const X>::value_type>(v.data(), v.data() + v.size());
}

namespace detail {
// dst's view, once the host values are known to fit it.
template <class T, TensorLike X>
auto checked_destination(std::span<const T> host, X& dst) {
    const auto v = dst.view();
    static_assert(std::is_same_v<typename view_of_t<X>::element_type, T>,
                  "copy_from_host: the host values must have the destination's (non-const) element type.");
    if (host.size() != v.size()) {
        throw ShapeError("copy_from_host: " + std::to_string(host.size()) + " host values for a tensor of " +
                         std::to_string(v.size()) + " elements");
    }
    return v;
}
}  // namespace detail

// Overwrites every element of dst with host values (row-major), uploaded by `backend`; the
// sizes must agree.
template <class B, class T, TensorLike X>
    requires std::same_as<B, backend_of_t<X>>
void copy_from_host(B& backend, std::span<const T> host, X&& dst) {
    const auto v = detail::checked_destination(host, dst);
    backend.upload(host.data(), v.data(), v.size());
}
// The same for a tensor in host memory.
template <class T, TensorLike X>
    requires backend_of_t<X>::host_accessible
void copy_from_host(std::span<const T> host, X&& dst) {
    std::copy(host.begin(), host.end(), detail::checked_destination(host, dst).data());
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
