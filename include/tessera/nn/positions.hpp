#pragma once
// Position encodings, added to the token embeddings: learned (GPT-2's wpe table) or sinusoidal
// (the original Transformer's fixed PE(pos, 2i) = sin(pos / 10000^(2i/C)), PE(pos, 2i+1) = cos(...)).
// A model takes either as its Positions policy: a template <Ctx, C, Backend> constructible from
// (ctx, c), with load(source, name) and add_to(backend, x, first_position).
#include <cmath>    // std::sin, std::cos, std::pow
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/core/tensor.hpp>        // Tensor
#include <tessera/nn/parameter.hpp>       // WeightSource
#include <tessera/ops/elementwise.hpp>    // add
#include <tessera/ops/transfer.hpp>       // copy_from_host

namespace tessera {

namespace detail {
// x(T, C) += table rows [first, first + T).
template <class Backend, class Table, TensorLike X>
void add_position_rows(Backend& backend, const Table& table, X&& x, std::size_t first) {
    const std::size_t t = x.extent(0);
    add(backend, x, table.view().rows(first, t), x);
}
}  // namespace detail

template <std::size_t Ctx, std::size_t C, class B>
struct LearnedPositions {
    Tensor<float, Extents<Ctx, C>, B> table;  // (Ctx, C), "wpe" in GPT-2 checkpoints

    LearnedPositions(std::size_t ctx, std::size_t c) : table(ctx, c) {}

    void load(const WeightSource<B>& src, const std::string& name) {
        src.table_into(name, table);
    }
    template <class Backend, TensorLike X>
    void add_to(Backend& backend, X&& x, std::size_t first_position) const {
        detail::add_position_rows(backend, table, x, first_position);
    }
};

template <std::size_t Ctx, std::size_t C, class B>
struct SinusoidalPositions {
    Tensor<float, Extents<Ctx, C>, B> table;  // (Ctx, C), computed, not read from the checkpoint

    // In host memory the table is computed at once; a device backend's is uploaded by load().
    SinusoidalPositions(std::size_t ctx, std::size_t c) : table(ctx, c) {
        if constexpr (B::host_accessible) copy_from_host(std::span<const float>(values()), table);
    }
    SinusoidalPositions()
        requires(Ctx != dyn && C != dyn)
        : SinusoidalPositions(Ctx, C) {}
    void load(const WeightSource<B>& src, const std::string&) {  // nothing to read
        if constexpr (!B::host_accessible) copy_from_host(src.backend, std::span<const float>(values()), table);
    }
    template <class Backend, TensorLike X>
    void add_to(Backend& backend, X&& x, std::size_t first_position) const {
        detail::add_position_rows(backend, table, x, first_position);
    }

private:
    std::vector<float> values() const {
        const std::size_t ctx = table.extent(0), c = table.extent(1);
        std::vector<float> host(ctx * c);
        for (std::size_t pos = 0; pos < ctx; ++pos) {
            for (std::size_t i = 0; 2 * i < c; ++i) {
                const double angle =
                    static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(c));
                host[pos * c + 2 * i] = static_cast<float>(std::sin(angle));
                if (2 * i + 1 < c) host[pos * c + 2 * i + 1] = static_cast<float>(std::cos(angle));
            }
        }
        return host;
    }
};

}  // namespace tessera
