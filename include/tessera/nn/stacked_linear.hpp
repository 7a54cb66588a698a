#pragma once
// StackedLinear<B, W, N>: N linear maps of the same input (q, k and v; gate and up) as one
// matrix, their rows stacked in order, so that a step makes one product where it made N. Why:
// decode reads each weight once whatever the grouping, but each product of a thin layer also
// pays a start (the threads handed their rows, the first lines fetched from memory) of about
// 3-4 µs on a 2-core Zen 5, a fifth of a SmolLM2-135M Q4_0 layer's q, k and v (bench/RESULTS.md,
// Issue #34, ninth part). Each output is computed from its own row alone, so stacking changes
// no arithmetic but the order of threads.
//
// The product lands in a caller's scratch (`room`); take() copies one map's outputs out of it
// into where they belong (the queries, a cache's keys, the gate). In a KQuantMix model the maps
// may be stored in different formats (a Q4_K_M file's v in Q6_K, q and k in Q4_K), so there
// they stay N products, each into its own part of the room.
#include <array>    // std::array
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <utility>  // std::index_sequence

#include <tessera/core/tensor.hpp>          // MatrixView
#include <tessera/core/weight_formats.hpp>  // KQuantMix
#include <tessera/nn/linear.hpp>            // Linear
#include <tessera/nn/parameter.hpp>         // WeightSource
#include <tessera/ops/elementwise.hpp>      // copy_columns, copy

namespace tessera {

namespace detail {
template <std::size_t N>
std::size_t sum(const std::array<std::size_t, N>& a) {
    std::size_t s = 0;
    for (std::size_t x : a) s += x;
    return s;
}
// Where each map's outputs start among the stacked outputs.
template <std::size_t N>
std::array<std::size_t, N> starts(const std::array<std::size_t, N>& outputs) {
    std::array<std::size_t, N> first{};
    for (std::size_t i = 1; i < N; ++i) first[i] = first[i - 1] + outputs[i - 1];
    return first;
}
}  // namespace detail

template <class B, WeightType W, std::size_t N>
struct StackedLinear {
    Linear<dyn, dyn, B, W> stacked;     // (sum of outputs, In)
    std::array<std::size_t, N> outputs;  // each map's

    StackedLinear(std::size_t in, const std::array<std::size_t, N>& out, bool biased)
        : stacked(in, detail::sum(out), biased), outputs(out) {}

    // Floats of room a product over `rows` rows needs.
    std::size_t room_floats(std::size_t rows) const noexcept { return rows * stacked.out_features(); }

    void load(const WeightSource<B>& src, const std::array<std::string, N>& names) {
        stacked.load_stacked(src, names, outputs);
    }
    void prepare_batches(B& backend) { stacked.prepare_batches(backend); }

    // Every map's outputs for x(T, In), into room's first room_floats(T) floats.
    template <class Backend, TensorLike X, class Room>
    void operator()(Backend& backend, const X& x, Room room) const {
        stacked(backend, x, product(room, x.extent(0)));
    }
    // out(T, outputs[map]) = map `map`'s outputs of the last product into `room`.
    template <class Backend, class Room, TensorLike Out>
    void take(Backend& backend, Room room, std::size_t map, Out&& out) const {
        copy_columns(backend, product(room, out.extent(0)), detail::starts(outputs)[map], out);
    }

private:
    template <class Room>
    MatrixView<float, B> product(Room room, std::size_t rows) const {
        return MatrixView<float, B>(room.data(), DynExtents<2>(rows, stacked.out_features()));
    }
};

// In a KQuantMix model: N products, each map in the format its file stores it in (Linear's
// KQuantMix specialization), map i's (T, outputs[i]) outputs contiguous in the room.
template <class B, std::size_t N>
struct StackedLinear<B, KQuantMix, N> {
    std::array<Linear<dyn, dyn, B, KQuantMix>, N> maps;
    std::array<std::size_t, N> outputs;

    StackedLinear(std::size_t in, const std::array<std::size_t, N>& out, bool biased)
        : maps(make(in, out, biased, std::make_index_sequence<N>{})), outputs(out) {}

    std::size_t room_floats(std::size_t rows) const noexcept { return rows * detail::sum(outputs); }

    void load(const WeightSource<B>& src, const std::array<std::string, N>& names) {
        for (std::size_t i = 0; i < N; ++i) maps[i].load(src, names[i]);
    }
    void prepare_batches(B& backend) {
        for (auto& m : maps) m.prepare_batches(backend);
    }

    template <class Backend, TensorLike X, class Room>
    void operator()(Backend& backend, const X& x, Room room) const {
        for (std::size_t i = 0; i < N; ++i) maps[i](backend, x, part(room, x.extent(0), i));
    }
    template <class Backend, class Room, TensorLike Out>
    void take(Backend& backend, Room room, std::size_t map, Out&& out) const {
        copy(backend, part(room, out.extent(0), map), out);
    }

private:
    template <std::size_t... I>
    static std::array<Linear<dyn, dyn, B, KQuantMix>, N> make(std::size_t in, const std::array<std::size_t, N>& out, bool biased,
                                                              std::index_sequence<I...>) {
        return {Linear<dyn, dyn, B, KQuantMix>(in, out[I], biased)...};
    }
    template <class Room>
    MatrixView<float, B> part(Room room, std::size_t rows, std::size_t map) const {
        return MatrixView<float, B>(room.data() + rows * detail::starts(outputs)[map], DynExtents<2>(rows, outputs[map]));
    }
};

}  // namespace tessera
