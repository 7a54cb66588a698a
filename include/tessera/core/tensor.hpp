#pragma once
// Tensor<T, Extents, Backend>: owns its elements in the backend's memory (host heap or device).
// Move-only: copying weights should never happen by accident. Storage is always heap or device
// memory, even for fully static shapes (large static shapes are for type checking, not the stack).
#include <array>    // std::array
#include <cstddef>  // std::size_t
#include <utility>  // std::move

#include <tessera/core/concepts.hpp>     // StorageBackend
#include <tessera/core/extents.hpp>      // Extents
#include <tessera/core/tensor_view.hpp>  // TensorView

namespace tessera {

template <class T, class E, StorageBackend B>
class Tensor {
    static_assert(StorageType<T> && !std::is_const_v<T>, "Tensor: the element type must be float, bf16, f16, int32_t or a block format (Q8_0, Q4_0, the K-quants, Q5_0, Q5_1).");

public:
    using element_type = T;
    using value_type = T;
    using extents_type = E;
    using backend_type = B;
    using buffer_type = typename B::template Buffer<T>;

    // A fully static shape needs no arguments: Tensor<float, Extents<768>, Cpu> bias;
    Tensor()
        requires(E::is_static())
        : Tensor(E{}) {}
    explicit Tensor(E extents) : extents_(extents), buffer_(extents.size()) {}
    // One value per dynamic dimension: Tensor<float, Extents<dyn, 768>, Cpu> x(seq_len);
    template <std::convertible_to<std::size_t>... Ds>
        requires(sizeof...(Ds) == E::rank_dynamic() && E::rank_dynamic() > 0)
    explicit Tensor(Ds... dynamic_sizes) : Tensor(E(dynamic_sizes...)) {}
    // Every size, static ones included and checked: Tensor<float, Extents<dyn, C>, Cpu> x(t, c)
    // compiles whether C is a number or `dyn`, which is what run-time-shaped models need.
    template <std::convertible_to<std::size_t>... Ss>
        requires(sizeof...(Ss) == E::rank() && E::rank_dynamic() < E::rank())
    explicit Tensor(Ss... all_sizes) : Tensor(E(all_sizes...)) {}

    Tensor(Tensor&&) noexcept = default;
    Tensor& operator=(Tensor&&) noexcept = default;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;

    static constexpr std::size_t rank() noexcept { return E::rank(); }
    const E& extents() const noexcept { return extents_; }
    std::size_t extent(std::size_t r) const noexcept { return extents_.extent(r); }
    std::size_t size() const noexcept { return extents_.size(); }
    T* data() noexcept { return buffer_.data(); }
    const T* data() const noexcept { return buffer_.data(); }

    TensorView<T, E, B> view() noexcept { return {data(), extents_}; }
    TensorView<const T, E, B> view() const noexcept { return {data(), extents_}; }
    operator TensorView<T, E, B>() noexcept { return view(); }
    operator TensorView<const T, E, B>() const noexcept { return view(); }

    template <class... I>
        requires(sizeof...(I) == E::rank() && B::host_accessible)
    T& operator()(I... idx) noexcept {
        return view()(idx...);
    }
    template <class... I>
        requires(sizeof...(I) == E::rank() && B::host_accessible)
    const T& operator()(I... idx) const noexcept {
        return view()(idx...);
    }

private:
    [[no_unique_address]] E extents_;
    buffer_type buffer_;
};

}  // namespace tessera
