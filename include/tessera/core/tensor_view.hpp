#pragma once
// TensorView<T, Extents, Backend>: a non-owning, row-major (layout_right) window onto memory of
// one backend. Cheap to copy; T may be const. Views are what kernels receive: a Tensor converts
// to its view, a static view converts implicitly to a more dynamic one.
#include <array>        // std::array
#include <cstddef>      // std::size_t
#include <string>       // std::to_string
#include <type_traits>  // std::is_convertible_v, std::remove_const_t

#include <tessera/core/dtype.hpp>    // StorageType
#include <tessera/core/extents.hpp>  // Extents, DynExtents

namespace tessera {

namespace detail {
// Extents<3, 4> -> Extents<dyn, 4>: the shape of a range of rows.
template <class E>
struct WithDynamicLeading;
template <std::size_t E0, std::size_t... Es>
struct WithDynamicLeading<Extents<E0, Es...>> {
    using type = Extents<dyn, Es...>;
};
}  // namespace detail

template <class T, class E, class B>
class TensorView {
    static_assert(StorageType<T>, "TensorView: the element type must be float, bf16, f16, int32_t or a block format (Q8_0, Q4_0, the K-quants, Q5_0, Q5_1).");

public:
    using element_type = T;
    using value_type = std::remove_const_t<T>;
    using extents_type = E;
    using backend_type = B;

    constexpr TensorView() noexcept = default;
    constexpr TensorView(T* data, E extents) noexcept : data_(data), extents_(extents) {}

    // Adds const and/or makes dimensions dynamic; making them static is explicit and checked.
    template <class U, class E2>
        requires(std::is_convertible_v<U*, T*> && std::is_constructible_v<E, E2>)
    constexpr explicit(!std::is_convertible_v<E2, E>) TensorView(const TensorView<U, E2, B>& other)
        : data_(other.data()), extents_(E(other.extents())) {}

    static constexpr std::size_t rank() noexcept { return E::rank(); }
    constexpr T* data() const noexcept { return data_; }
    constexpr const E& extents() const noexcept { return extents_; }
    constexpr std::size_t extent(std::size_t r) const noexcept { return extents_.extent(r); }
    constexpr std::size_t size() const noexcept { return extents_.size(); }
    constexpr bool empty() const noexcept { return size() == 0; }
    constexpr TensorView view() const noexcept { return *this; }

    // Element access, only for backends whose memory the host can read.
    template <class... I>
        requires(sizeof...(I) == E::rank() && B::host_accessible)
    constexpr T& operator()(I... idx) const noexcept {
        const std::array<std::size_t, E::rank()> i{static_cast<std::size_t>(idx)...};
        std::size_t offset = 0;
        for (std::size_t r = 0; r < E::rank(); ++r) offset = offset * extents_.extent(r) + i[r];
        return data_[offset];
    }

    // The same elements seen as one dimension.
    constexpr TensorView<T, Extents<dyn>, B> flat() const noexcept { return {data_, Extents<dyn>(size())}; }

    // Rows [begin, begin + count) of the leading dimension, which becomes dynamic.
    constexpr auto rows(std::size_t begin, std::size_t count) const {
        static_assert(E::rank() >= 1, "TensorView::rows: a rank-0 view has no rows.");
        using RowsExtents = typename detail::WithDynamicLeading<E>::type;
        if (begin > extent(0) || count > extent(0) - begin) {
            throw ShapeError("TensorView::rows: rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                             ") are outside the " + std::to_string(extent(0)) + " rows of the view");
        }
        std::array<std::size_t, E::rank()> s = extents_.sizes();
        const std::size_t row_size = extent(0) == 0 ? 0 : size() / extent(0);
        s[0] = count;
        return TensorView<T, RowsExtents, B>(data_ + begin * row_size, RowsExtents::from_sizes(s));
    }

private:
    T* data_ = nullptr;
    [[no_unique_address]] E extents_{};
};

// The fully dynamic views that backend kernels take: one kernel instantiation serves every shape.
template <class T, class B>
using VectorView = TensorView<T, DynExtents<1>, B>;
template <class T, class B>
using MatrixView = TensorView<T, DynExtents<2>, B>;
template <class T, class B>
using Tensor3View = TensorView<T, DynExtents<3>, B>;

}  // namespace tessera
