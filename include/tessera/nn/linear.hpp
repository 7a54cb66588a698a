#pragma once
// Linear<In, Out, B, W>: y = x · Wᵀ + b with W stored [out, in] (each output's weights
// contiguous) as float, or as bf16 / Q8_0 / Q4_0 (W; core/weight_formats.hpp), then [out, in /
// block] of those, quantized when loaded. In and Out are compile-time sizes or `dyn`; the
// constructor takes the run-time sizes. A backend may arrange the weights in place once loaded
// (ArrangesWeights: the CPU's Q8_0, Q4_0 and bf16) or, when it does not, keep a second layout
// for products of several rows (HasPackedWeights, after prepare_batches()).
#include <cstddef>    // std::size_t
#include <span>       // std::span
#include <string>     // std::string
#include <vector>     // std::vector

#include <tessera/backend/backend.hpp>          // HasPackedWeights
#include <tessera/core/tensor.hpp>             // Tensor
#include <tessera/core/weight_formats.hpp>     // WeightType, WeightFormat
#include <tessera/nn/parameter.hpp>            // WeightSource, whole_blocks
#include <tessera/ops/matrix_products.hpp>     // gemm
#include <tessera/ops/transfer.hpp>            // copy_from_host

namespace tessera {

template <std::size_t In, std::size_t Out, class B, WeightType W = float>
struct Linear {
    static constexpr std::size_t block = WeightFormat<W>::block;
    static_assert(In == dyn || In % block == 0, "Linear: the input width must be a whole number of the format's blocks.");
    static constexpr std::size_t stored_in = In == dyn ? dyn : In / block;

    // (Out, In / block); on a backend that ArrangesWeights in its own order once loaded, so
    // read it only through operator().
    Tensor<W, Extents<Out, stored_in>, B> weight;
    Tensor<float, Extents<Out>, B> bias;  // (Out), or empty: no bias
    // The backend's packed copy (empty until prepare_batches) or what arranging did (load).
    [[no_unique_address]] typename detail::KeptLayoutOf<B, W, ArrangesWeights<B, W>>::type packed{};

    // `biased` false: y = x · Wᵀ, and no bias is read (Llama's projections).
    Linear(std::size_t in, std::size_t out, bool biased = true) : weight(out, whole_blocks<W>(in, "Linear")), bias(biased ? out : 0) {}
    Linear()
        requires(In != dyn && Out != dyn)
        : Linear(In, Out) {}

    std::size_t in_features() const noexcept { return weight.extent(1) * block; }
    std::size_t out_features() const noexcept { return weight.extent(0); }

    // Outputs [first, first + Out) of the linear map `name` (weight and bias) with `total`
    // outputs: all of them, or a third of c_attn (q, k and v one after the other).
    void load(const WeightSource<B>& src, const std::string& name, std::size_t total = 0, std::size_t first = 0) {
        if (total == 0) total = out_features();
        src.linear_into(name + ".weight", total, first, weight);
        if (bias.size() != 0) {
            const std::vector<float> b = src.vector(name + ".bias", total);
            copy_from_host(src.backend, std::span<const float>(b.data() + first, out_features()), bias);
        }
        if constexpr (ArrangesWeights<B, W>) {
            packed = src.backend.arrange_weights(MatrixView<W, B>(weight.data(), DynExtents<2>(weight.extent(0), weight.extent(1))));
        }
    }

    // Lets the backend pack the weights for products of several rows, where it can (a model
    // reserved for batched steps); a no-op where it arranged them instead or keeps no second
    // layout. Call again after loading new weights.
    void prepare_batches(B& backend) {
        if constexpr (HasPackedWeights<B, W> && !ArrangesWeights<B, W>) {
            packed = backend.pack_weights(MatrixView<const W, B>(weight.data(), DynExtents<2>(weight.extent(0), weight.extent(1))));
        }
    }

    // y(T, Out) = x(T, In) · Wᵀ + b.
    template <class Backend, TensorLike X, TensorLike Y>
    void operator()(Backend& backend, const X& x, Y&& y) const {
        if constexpr (ArrangesWeights<Backend, W>) {
            return gemm(backend, x, weight, packed, bias, y);  // (the arranged order, or as stored)
        } else if constexpr (HasPackedWeights<Backend, W>) {
            if (!packed.empty()) return gemm(backend, x, weight, packed, bias, y);
        }
        gemm(backend, x, weight, bias, y);
    }
};

}  // namespace tessera
