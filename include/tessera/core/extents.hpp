#pragma once
// Extents<768, dyn>: a tensor's shape, each dimension either a compile-time constant or `dyn`
// (known at run time). Only the dynamic values are stored, so a fully static shape is an
// empty type. Follows std::mdspan's extents: two extents are compatible when every dimension
// is equal or dynamic on either side; static -> dynamic converts implicitly, dynamic -> static
// only explicitly and checked.
#include <array>        // std::array
#include <cstddef>      // std::size_t
#include <concepts>     // std::convertible_to
#include <span>         // std::dynamic_extent
#include <string>       // std::to_string
#include <type_traits>  // std::conditional_t
#include <utility>      // std::index_sequence

#include <tessera/core/error.hpp>  // ShapeError

namespace tessera {

// Marks a dimension whose size is only known at run time.
inline constexpr std::size_t dyn = std::dynamic_extent;

template <std::size_t... Es>
class Extents {
public:
    static constexpr std::size_t rank() noexcept { return sizeof...(Es); }
    static constexpr std::size_t rank_dynamic() noexcept { return ((Es == dyn ? 1 : 0) + ... + 0); }
    static constexpr bool is_static() noexcept { return rank_dynamic() == 0; }

    // The compile-time size of dimension r, or `dyn`.
    static constexpr std::size_t static_extent(std::size_t r) noexcept { return statics_[r]; }

    // Dynamic dimensions start at 0, as in std::extents.
    constexpr Extents() noexcept = default;

    // One value per dynamic dimension, in order: Extents<dyn, 768, dyn>(seq, batch).
    template <std::convertible_to<std::size_t>... Ds>
        requires(sizeof...(Ds) == rank_dynamic() && rank_dynamic() > 0)
    constexpr explicit Extents(Ds... dynamic_sizes) noexcept
        : dynamic_{static_cast<std::size_t>(dynamic_sizes)...} {}

    // Every size, static ones included (checked against the type): Extents<dyn, 768>(t, c) is
    // the same call whether the model's width is static or not.
    template <std::convertible_to<std::size_t>... Ss>
        requires(sizeof...(Ss) == rank() && rank_dynamic() < rank() && rank() > 0)
    constexpr explicit Extents(Ss... all_sizes) : Extents(from_sizes({static_cast<std::size_t>(all_sizes)...})) {}

    // From all rank() sizes; the static ones are checked against the type.
    static constexpr Extents from_sizes(const std::array<std::size_t, rank()>& sizes) {
        Extents e = make_unchecked(sizes);
        for (std::size_t r = 0; r < rank(); ++r) {
            if (statics_[r] != dyn && statics_[r] != sizes[r]) {
                throw ShapeError("dimension " + std::to_string(r) + " is " + std::to_string(sizes[r]) +
                                 " but the type fixes it at " + std::to_string(statics_[r]));
            }
        }
        return e;
    }

    // Converting from other extents of the same rank. Mismatched static sizes do not compile;
    // a dynamic size becoming static is explicit and checked at run time.
    template <std::size_t... Os>
        requires(sizeof...(Os) == sizeof...(Es))
    constexpr explicit((... || (Es != dyn && Os == dyn))) Extents(const Extents<Os...>& other)
        : Extents(from_sizes(other.sizes())) {
        static_assert(((Es == dyn || Os == dyn || Es == Os) && ...),
                      "Extents: a static dimension cannot convert to a different static size.");
    }

    constexpr std::size_t extent(std::size_t r) const noexcept {
        if constexpr (rank_dynamic() == 0) {
            return statics_[r];
        } else {
            return statics_[r] != dyn ? statics_[r] : dynamic_[dynamic_index_[r]];
        }
    }

    constexpr std::array<std::size_t, rank()> sizes() const noexcept {
        std::array<std::size_t, rank()> s{};
        for (std::size_t r = 0; r < rank(); ++r) s[r] = extent(r);
        return s;
    }

    // Number of elements (1 for rank 0).
    constexpr std::size_t size() const noexcept {
        std::size_t n = 1;
        for (std::size_t r = 0; r < rank(); ++r) n *= extent(r);
        return n;
    }

    template <std::size_t... Os>
    friend constexpr bool operator==(const Extents& a, const Extents<Os...>& b) noexcept {
        if constexpr (sizeof...(Os) != sizeof...(Es)) {
            return false;
        } else {
            return a.sizes() == b.sizes();
        }
    }

private:
    static constexpr std::array<std::size_t, rank()> statics_{Es...};
    // For each dimension, its index among the dynamic ones (meaningful only where dynamic).
    static constexpr std::array<std::size_t, rank()> dynamic_index_ = [] {
        std::array<std::size_t, rank()> idx{};
        std::size_t d = 0;
        for (std::size_t r = 0; r < rank(); ++r) {
            idx[r] = d;
            if (statics_[r] == dyn) ++d;
        }
        return idx;
    }();

    static constexpr Extents make_unchecked(const std::array<std::size_t, rank()>& sizes) noexcept {
        Extents e;
        if constexpr (rank_dynamic() > 0) {
            for (std::size_t r = 0; r < rank(); ++r) {
                if (statics_[r] == dyn) e.dynamic_[dynamic_index_[r]] = sizes[r];
            }
        }
        return e;
    }

    struct NoDynamicSizes {};  // an empty member: a fully static Extents is an empty class
    [[no_unique_address]] std::conditional_t<rank_dynamic() == 0, NoDynamicSizes,
                                             std::array<std::size_t, rank_dynamic()>> dynamic_{};
};

// All-dynamic extents of rank R: DynExtents<2> is Extents<dyn, dyn>.
namespace detail {
template <std::size_t R, class Seq = std::make_index_sequence<R>>
struct DynExtentsOf;
template <std::size_t R, std::size_t... I>
struct DynExtentsOf<R, std::index_sequence<I...>> {
    using type = Extents<(static_cast<void>(I), dyn)...>;
};
}  // namespace detail
template <std::size_t R>
using DynExtents = typename detail::DynExtentsOf<R>::type;

// True when dimension Ra of A and dimension Rb of B can be equal: equal sizes or either dynamic.
template <class A, std::size_t Ra, class B, std::size_t Rb>
inline constexpr bool dims_may_match = A::static_extent(Ra) == dyn || B::static_extent(Rb) == dyn ||
                                       A::static_extent(Ra) == B::static_extent(Rb);

// Same rank, every dimension possibly equal.
template <class A, class B>
inline constexpr bool extents_may_match = [] {
    if constexpr (A::rank() != B::rank()) {
        return false;
    } else {
        for (std::size_t r = 0; r < A::rank(); ++r) {
            if (A::static_extent(r) != dyn && B::static_extent(r) != dyn &&
                A::static_extent(r) != B::static_extent(r))
                return false;
        }
        return true;
    }
}();

// "(5, 768)": a shape for error messages.
template <std::size_t... Es>
std::string shape_string(const Extents<Es...>& e) {
    std::string s = "(";
    for (std::size_t r = 0; r < e.rank(); ++r) s += (r ? ", " : "") + std::to_string(e.extent(r));
    return s + ")";
}

// The run-time half of a shape check: throws ShapeError naming the operation and both operands.
inline void check_dim(std::size_t a, std::size_t b, const char* op, const char* what_a, const char* what_b) {
    if (a != b) {
        throw ShapeError(std::string(op) + ": " + what_a + " is " + std::to_string(a) + " but " + what_b +
                         " is " + std::to_string(b));
    }
}

// Operands that must have the same shape, not merely the same size.
template <class EA, class EB>
void check_same_shape(const EA& a, const EB& b, const char* op, const char* what_a, const char* what_b) {
    bool same = false;
    if constexpr (EA::rank() == EB::rank()) same = a.sizes() == b.sizes();
    if (!same) {
        throw ShapeError(std::string(op) + ": " + what_a + " " + shape_string(a) + " differs from " + what_b + " " +
                         shape_string(b));
    }
}

}  // namespace tessera
