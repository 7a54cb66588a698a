#pragma once
// Linear<In, Out, B, W>: y = x · Wᵀ + b with W stored [out, in] (each output's weights
// contiguous) as float, or as bf16 / Q8_0 / Q4_0 / a K-quant type (W; core/weight_formats.hpp),
// then [out, in / block] of those, quantized when loaded; for a KQuantMix model, in whichever
// of those its file stores it (the specialization below). In and Out are compile-time sizes or
// `dyn`; the constructor takes the run-time sizes. A backend may arrange the weights in place once loaded
// (ArrangesWeights: the CPU's Q8_0, Q4_0 and bf16) or, when it does not, keep a second layout
// for products of several rows (HasPackedWeights, after prepare_batches()).
#include <cstddef>    // std::size_t
#include <span>       // std::span
#include <string>     // std::string
#include <tuple>      // std::tuple
#include <type_traits>  // std::is_same_v
#include <utility>    // std::forward
#include <variant>    // std::variant, std::visit
#include <vector>     // std::vector

#include <tessera/backend/backend.hpp>          // HasPackedWeights
#include <tessera/core/error.hpp>              // ArgumentError
#include <tessera/core/tensor.hpp>             // Tensor
#include <tessera/core/weight_formats.hpp>     // WeightType, WeightFormat
#include <tessera/nn/parameter.hpp>            // WeightSource, whole_blocks
#include <tessera/ops/matrix_products.hpp>     // gemm
#include <tessera/ops/transfer.hpp>            // copy_from_host

namespace tessera {

template <std::size_t In, std::size_t Out, class B, WeightType W = float>
struct Linear {
    using weight_format = W;
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
        load_rows(src, name, total == 0 ? out_features() : total, first, 0, out_features());
        arrange(src.backend);
    }
    // Several linear maps of the same input, `names[i]` with `outputs[i]` outputs, stacked by rows
    // in that order (q, k and v; gate and up: StackedLinear); out_features() is their sum.
    void load_stacked(const WeightSource<B>& src, std::span<const std::string> names, std::span<const std::size_t> outputs) {
        std::size_t row = 0;
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (outputs[i] > out_features() - row) throw ArgumentError("Linear: the stacked maps have more outputs than the layer");
            load_rows(src, names[i], outputs[i], 0, row, outputs[i]);
            row += outputs[i];
        }
        if (row != out_features()) throw ArgumentError("Linear: the stacked maps have fewer outputs than the layer");
        arrange(src.backend);
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

    // y(T, count) = x(T, In) · W[first, first + count)ᵀ + b[first, first + count): one map of
    // several stacked by load_stacked, over its own rows. On a backend that arranged W, `first`
    // must be a whole number of its groups of rows and so must `count` unless the rows end W
    // (StackedLinear::maps_apart checks); a backend's packed copy is not used.
    template <class Backend, TensorLike X, TensorLike Y>
    void rows_product(Backend& backend, const X& x, std::size_t first, std::size_t count, Y&& y) const {
        const auto rows = weight.view().rows(first, count);
        const auto b = bias.size() == 0 ? bias.view() : bias.view().rows(first, count);
        if constexpr (ArrangesWeights<Backend, W>) gemm(backend, x, rows, packed, b, y);
        else gemm(backend, x, rows, b, y);
    }

private:
    // Outputs [first, first + count) of the map `name` with `total` outputs into rows
    // [row, row + count).
    void load_rows(const WeightSource<B>& src, const std::string& name, std::size_t total, std::size_t first, std::size_t row,
                   std::size_t count) {
        auto rows = weight.view().rows(row, count);
        src.linear_into(name + ".weight", total, first, rows);
        if (bias.size() != 0) {
            const std::vector<float> b = src.vector(name + ".bias", total);
            copy_from_host(src.backend, std::span<const float>(b.data() + first, count), bias.view().rows(row, count));
        }
    }
    void arrange([[maybe_unused]] B& backend) {
        if constexpr (ArrangesWeights<B, W>) {
            packed = backend.arrange_weights(MatrixView<W, B>(weight.data(), DynExtents<2>(weight.extent(0), weight.extent(1))));
        }
    }
};

// Linear in a KQuantMix model: its matrix in the format its file stores it in (one of
// KQuantMix::formats; float for any other), as llama.cpp runs each tensor in its own type: a
// Q4_K_M file's attention values and some feed-forward down projections are Q6_K, the rest
// Q4_K, or Q5_0 / Q8_0 where rows are not whole super-blocks. The choice is made when it
// loads, and each alternative is the Linear of its format, with that format's kernels.
template <std::size_t In, std::size_t Out, class B>
struct Linear<In, Out, B, KQuantMix> {
    // An alternative's compile-time input width where it fits that format's blocks, else dyn
    // (checked when made: whole_blocks).
    template <class F>
    static constexpr std::size_t in_as = In == dyn || In % WeightFormat<F>::block == 0 ? In : dyn;
    template <class Formats>
    struct AlternativesOf;
    template <class... F>
    struct AlternativesOf<std::tuple<F...>> {
        using type = std::variant<std::monostate, Linear<in_as<F>, Out, B, F>...>;
    };
    typename AlternativesOf<KQuantMix::formats>::type as_stored;  // monostate until loaded

    Linear(std::size_t in, std::size_t out, bool biased = true) : in_(in), out_(out), biased_(biased) {}
    Linear()
        requires(In != dyn && Out != dyn)
        : Linear(In, Out) {}

    std::size_t in_features() const noexcept { return in_; }
    std::size_t out_features() const noexcept { return out_; }
    // The format the loaded matrix is kept in (f32 before it loads).
    WeightFormatId format() const noexcept {
        return std::visit([]<class L>(const L&) {
            if constexpr (std::is_same_v<L, std::monostate>) return WeightFormatId::f32;
            else return WeightFormat<typename L::weight_format>::id;
        }, as_stored);
    }

    void load(const WeightSource<B>& src, const std::string& name, std::size_t total = 0, std::size_t first = 0) {
        if (total == 0) total = out_;
        const TensorRequest request{src.prefix + name + ".weight", TensorRequest::Role::linear, total, in_};
        [&]<class... F>(std::tuple<F...>*) {
            // The first listed format the file stores it in; float (listed last) for any other.
            (void)((std::is_same_v<F, float> || src.file.stores_as(request, WeightFormat<F>::id)
                        ? (as_stored.template emplace<Linear<in_as<F>, Out, B, F>>(in_, out_, biased_), true)
                        : false) ||
                   ...);
        }(static_cast<KQuantMix::formats*>(nullptr));
        std::visit([&]<class L>(L& l) {
            if constexpr (!std::is_same_v<L, std::monostate>) l.load(src, name, total, first);
        }, as_stored);
    }
    void prepare_batches(B& backend) {
        std::visit([&]<class L>(L& l) {
            if constexpr (!std::is_same_v<L, std::monostate>) l.prepare_batches(backend);
        }, as_stored);
    }

    template <class Backend, TensorLike X, TensorLike Y>
    void operator()(Backend& backend, const X& x, Y&& y) const {
        std::visit([&]<class L>(const L& l) {
            if constexpr (std::is_same_v<L, std::monostate>) throw ArgumentError("Linear: multiplied before its weights were loaded");
            else l(backend, x, std::forward<Y>(y));
        }, as_stored);
    }

private:
    std::size_t in_, out_;
    bool biased_;
};

}  // namespace tessera
