#pragma once
// StackedLinear<B, W, N>: N linear maps of the same input (q, k and v; gate and up) as one
// matrix, their rows stacked in order when loaded, so that a decode step makes one product
// where it made N. Why: decode reads each weight once whatever the grouping, but each product
// of a thin layer also pays a start (the threads handed their rows, the first lines fetched
// from memory) of about 3-4 µs on a 2-core Zen 5, a fifth of a SmolLM2-135M Q4_0 layer's q, k
// and v (bench/RESULTS.md, Issue #34, ninth part). The product lands in a caller's scratch
// (`room`), from which each map's columns are copied to where they belong (the queries, a
// cache's keys, the gate); a prompt's rows run each map apart (together_rows_max). Each output
// is computed from its own weight row alone, so where every map is whole groups of the arranged
// layout's rows stacking changes no arithmetic (a map of fewer rows alone may take another
// kernel than its rows stacked do).
//
// In a KQuantMix model the maps may be stored in different formats (a Q4_K_M file's v in Q6_K,
// q and k in Q4_K): there they stay N products, each straight into its output.
#include <array>    // std::array
#include <cstddef>  // std::size_t
#include <numeric>  // std::accumulate
#include <string>   // std::string, std::to_string
#include <utility>  // std::index_sequence

#include <tessera/backend/backend.hpp>      // ArrangesWeights, HasPackedWeights
#include <tessera/core/error.hpp>           // ShapeError
#include <tessera/core/tensor.hpp>          // MatrixView
#include <tessera/core/weight_formats.hpp>  // KQuantMix
#include <tessera/nn/linear.hpp>            // Linear
#include <tessera/nn/parameter.hpp>         // WeightSource
#include <tessera/ops/elementwise.hpp>      // copy_columns

namespace tessera {

namespace detail {
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

    // Rows of x up to which the maps run as one product (decode, a batched step); more (a
    // prompt) run each map over its own rows straight into its output where the arranged
    // groups allow (maps_apart), as the product's output there (T x the sum of outputs) would
    // pass through the cache twice more, copied out: prompts up to 20% slower on a 2-core Zen 3.
    static constexpr std::size_t together_rows_max = 16;

    StackedLinear(std::size_t in, const std::array<std::size_t, N>& out, bool biased)
        : stacked(in, std::accumulate(out.begin(), out.end(), std::size_t{0}), biased), outputs(out), first_(detail::starts(out)) {}

    // Floats of room a product over `rows` rows needs.
    std::size_t room_floats(std::size_t rows) const noexcept { return rows * stacked.out_features(); }

    void load(const WeightSource<B>& src, const std::array<std::string, N>& names) {
        stacked.load_stacked(src, names, outputs);
    }
    void prepare_batches(B& backend) { stacked.prepare_batches(backend); }

    // outs[i](T, outputs[i]) = map i's outputs for x(T, In); room: at least room_floats(T) floats.
    template <class Backend, TensorLike X, class Room, TensorLike... Out>
        requires(sizeof...(Out) == N)
    void operator()(Backend& backend, const X& x, Room room, Out&&... outs) const {
        const std::size_t t = x.extent(0);
        std::size_t i = 0;
        if (t > together_rows_max && maps_apart()) {
            ((stacked.rows_product(backend, x, first_[i], outputs[i], outs), ++i), ...);
            return;
        }
        if (room.size() < room_floats(t)) {
            throw ShapeError("StackedLinear: room for " + std::to_string(room.size()) + " floats, a product over " +
                             std::to_string(t) + " rows needs " + std::to_string(room_floats(t)));
        }
        const MatrixView<float, B> all(room.data(), DynExtents<2>(t, stacked.out_features()));
        stacked(backend, x, all);
        ((copy_columns(backend, all, first_[i], outs), ++i), ...);
    }

private:
    std::array<std::size_t, N> first_;  // where each map's rows start

    // Whether each map's rows can be multiplied alone: where the backend arranged the weights,
    // every map but the last a whole number of its groups (so each starts a group); where it
    // keeps a packed copy instead, never (a map's rows of it are not at hand).
    bool maps_apart() const noexcept {
        if constexpr (ArrangesWeights<B, W>) {
            for (std::size_t i = 0; i + 1 < N; ++i) {
                if (outputs[i] % B::arranged_rows != 0) return false;
            }
            return true;
        } else {
            return !HasPackedWeights<B, W>;
        }
    }
};

// In a KQuantMix model: N products, each map in the format its file stores it in (Linear's
// KQuantMix specialization), each straight into its output (no room used).
template <class B, std::size_t N>
struct StackedLinear<B, KQuantMix, N> {
    std::array<Linear<dyn, dyn, B, KQuantMix>, N> maps;
    std::array<std::size_t, N> outputs;

    StackedLinear(std::size_t in, const std::array<std::size_t, N>& out, bool biased)
        : maps(make(in, out, biased, std::make_index_sequence<N>{})), outputs(out) {}

    std::size_t room_floats(std::size_t rows) const noexcept { return rows * std::accumulate(outputs.begin(), outputs.end(), std::size_t{0}); }

    void load(const WeightSource<B>& src, const std::array<std::string, N>& names) {
        for (std::size_t i = 0; i < N; ++i) maps[i].load(src, names[i]);
    }
    void prepare_batches(B& backend) {
        for (auto& m : maps) m.prepare_batches(backend);
    }

    template <class Backend, TensorLike X, class Room, TensorLike... Out>
        requires(sizeof...(Out) == N)
    void operator()(Backend& backend, const X& x, Room, Out&&... outs) const {
        std::size_t i = 0;
        (maps[i++](backend, x, outs), ...);
    }

private:
    template <std::size_t... I>
    static std::array<Linear<dyn, dyn, B, KQuantMix>, N> make(std::size_t in, const std::array<std::size_t, N>& out, bool biased,
                                                              std::index_sequence<I...>) {
        return {Linear<dyn, dyn, B, KQuantMix>(in, out[I], biased)...};
    }
};

}  // namespace tessera
