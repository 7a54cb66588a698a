#pragma once
// The contract a backend fulfils: storage plus the kernels the nn layer needs. Each kernel is a
// concept of its own, so a backend missing one fails with one readable error naming it.
//
// Kernels take fully dynamic views (MatrixView, VectorView, Tensor3View), so each backend
// instantiates each kernel once; the static shape checks happen one level up, in ops/.
// All kernels allow the output to alias an input of the same shape (in-place use).
#include <concepts>  // std::same_as
#include <cstdint>   // std::int32_t
#include <span>      // std::span
#include <type_traits>  // std::is_same_v

#include <tessera/core/concepts.hpp>     // StorageBackend
#include <tessera/core/tensor_view.hpp>  // MatrixView, VectorView, Tensor3View

namespace tessera {

// C(M,N) = A(M,K) · W(N,K)ᵀ + bias(N). W is [out, in]; bias may be empty.
template <class B>
concept HasGemm = requires(B& b, MatrixView<const float, B> a, MatrixView<const float, B> w,
                           VectorView<const float, B> bias, MatrixView<float, B> c) { b.gemm(a, w, bias, c); };

// y(N) = W(N,K) · x(K) + bias(N); bias may be empty.
template <class B>
concept HasGemv = requires(B& b, MatrixView<const float, B> w, VectorView<const float, B> x,
                           VectorView<const float, B> bias, VectorView<float, B> y) { b.gemv(w, x, bias, y); };

// out = a + b, element-wise.
template <class B>
concept HasAdd = requires(B& b, VectorView<const float, B> x, VectorView<float, B> out) { b.add(x, x, out); };

// Each row of x(T,C) normalised to zero mean and unit variance, then scaled and shifted.
template <class B>
concept HasLayerNorm = requires(B& b, MatrixView<const float, B> x, VectorView<const float, B> gamma,
                                VectorView<const float, B> beta, float eps, MatrixView<float, B> out) {
    b.layer_norm(x, gamma, beta, eps, out);
};

// GELU in GPT-2's tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
template <class B>
concept HasGelu = requires(B& b, VectorView<const float, B> x, VectorView<float, B> out) { b.gelu(x, out); };

// Causal attention over heads: q(Tq,H,D), k and v (Tk,H,D), Tq <= Tk; query i sits at
// position Tk - Tq + i and sees keys 0..that position; scores are scaled by 1/√D.
template <class B>
concept HasCausalAttention = requires(B& b, Tensor3View<const float, B> q, Tensor3View<const float, B> kv,
                                      Tensor3View<float, B> out) { b.causal_attention(q, kv, kv, out); };

// out(T, C) = table rows ids[0..T) (the embedding lookup); ids live on the host and are in range.
template <class B>
concept HasGatherRows = requires(B& b, MatrixView<const float, B> table, std::span<const std::int32_t> ids,
                                 MatrixView<float, B> out) { b.gather_rows(table, ids, out); };

// The same with W(N, K) stored as bf16, Q8_0 or Q4_0 (core/weight_formats.hpp): w is the
// stored matrix, N rows of K / block elements. Optional: a backend without it cannot run a
// model whose weights are stored as W.
template <class B, class W>
concept HasGemmWith = requires(B& b, MatrixView<const float, B> a, MatrixView<const W, B> w,
                               VectorView<const float, B> bias, MatrixView<float, B> c) { b.gemm(a, w, bias, c); };

// out(T, C) = table rows ids[0..T) widened to float, for a table stored as W.
template <class B, class W>
concept HasGatherRowsWith = requires(B& b, MatrixView<const W, B> table, std::span<const std::int32_t> ids,
                                     MatrixView<float, B> out) { b.gather_rows(table, ids, out); };

// Optional: weights stored as W also kept in a second layout for products of several rows
// (B::PackedWeights<W>, made once by pack_weights; an empty one means none).
template <class B, class W>
concept HasPackedWeights = requires(B& b, MatrixView<const float, B> a, MatrixView<const W, B> w,
                                    const typename B::template PackedWeights<W>& packed, VectorView<const float, B> bias,
                                    MatrixView<float, B> c) {
    { b.pack_weights(w) } -> std::same_as<typename B::template PackedWeights<W>>;
    { packed.empty() } -> std::convertible_to<bool>;
    b.gemm(a, w, packed, bias, c);
};

// Whether backend B runs models whose weights are stored as W (every backend runs float).
template <class B, class W>
concept RunsWeightsAs = std::is_same_v<W, float> || (HasGemmWith<B, W> && HasGatherRowsWith<B, W>);

// Copies between host memory and the backend's memory.
template <class B>
concept HasTransfers = requires(const float* src, float* dst, std::size_t n) {
    B::upload(src, dst, n);
    B::download(src, dst, n);
};

template <class B>
concept Backend = StorageBackend<B> && HasTransfers<B> && HasGemm<B> && HasGemv<B> && HasAdd<B> && HasLayerNorm<B> &&
                  HasGelu<B> && HasCausalAttention<B> && HasGatherRows<B>;

// Optional: sizes the backend's own attention scratch for up to `queries` queries over up to
// `keys` keys, so that no later call within those sizes allocates. Models call it with the
// whole context before each step, so decoding never allocates.
template <class B>
concept ReservesAttentionScratch = requires(B& b, std::size_t n) { b.reserve_attention(n, n); };

// One sequence's operands of a batched attention (HasBatchedAttention).
template <class B>
struct AttentionOperands {
    Tensor3View<const float, B> q, k, v;
    Tensor3View<float, B> out;
};

// Optional: causal attention for several sequences in one call (each entry as
// HasCausalAttention computes it, with the same results); a batched step uses it.
template <class B>
concept HasBatchedAttention = requires(B& b, std::span<const AttentionOperands<B>> each) { b.causal_attention(each); };

// Optional: dst = src within the backend's memory. Models need it to run several sequences in
// one step (each sequence's keys and values are copied into its own cache).
template <class B>
concept HasCopy = requires(B& b, VectorView<const float, B> src, VectorView<float, B> dst) { b.copy(src, dst); };

// Optional: runs a step that only queues work on the backend as one replayable unit (a CUDA
// graph), to save per-kernel launch overhead. Models use it for the decode step when present.
template <class B>
concept RunsGraphs = requires(B& b, void (*step)()) { b.run_as_graph(step); };

}  // namespace tessera
