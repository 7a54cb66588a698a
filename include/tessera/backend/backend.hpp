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
#include <tuple>     // std::tuple
#include <type_traits>  // std::is_same_v
#include <vector>       // std::vector

#include <tessera/core/concepts.hpp>     // StorageBackend
#include <tessera/core/dtype.hpp>        // bf16
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

// Causal attention over heads: q(Tq,H,D), k and v (Tk,Hkv,D), Tq <= Tk, Hkv dividing H (query
// head h reads key/value head h / (H / Hkv)); query i sits at position Tk - Tq + i and sees
// keys 0..that position; scores are scaled by 1/√D.
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

// Optional: weights stored as W rearranged in place, once, right after loading, into an order
// of the backend's own that products of any number of rows read as it lies (no second copy;
// B::ArrangedWeights<W> says whether it was, an empty one meaning the order as stored). The
// tensor then holds that order: only gemm with the ArrangedWeights may read it. The order is
// per group of B::arranged_rows rows (the rows after the last whole group as stored), so the
// rows of whole groups are an arranged matrix of their own.
template <class B, class W>
concept ArrangesWeights = requires(B& b, MatrixView<const float, B> a, MatrixView<W, B> stored, MatrixView<const W, B> w,
                                   const typename B::template ArrangedWeights<W>& arranged, VectorView<const float, B> bias,
                                   MatrixView<float, B> c) {
    { B::arranged_rows } -> std::convertible_to<std::size_t>;
    { b.arrange_weights(stored) } -> std::same_as<typename B::template ArrangedWeights<W>>;
    { arranged.empty() } -> std::convertible_to<bool>;
    b.gemm(a, w, arranged, bias, c);
};

// Optional: a table stored as W (an embedding that is also the tied head) arranged in place as
// ArrangesWeights arranges a Linear's weights, multiplied through the same gemm, and its rows
// still gathered by id, out of the backend's order.
template <class B, class W>
concept ArrangesTables = ArrangesWeights<B, W> &&
                         requires(B& b, MatrixView<const W, B> table, const typename B::template ArrangedWeights<W>& arranged,
                                  std::span<const std::int32_t> ids, MatrixView<float, B> out) { b.gather_rows(table, arranged, ids, out); };

// Whether backend B runs models whose weights are stored as W (every backend runs float), or,
// for a choice per matrix (W::formats: KQuantMix), products with each of its formats.
namespace detail {
template <class B, class Formats>
struct MultipliesEach : std::false_type {};
template <class B, class... F>
struct MultipliesEach<B, std::tuple<F...>> : std::bool_constant<((std::is_same_v<F, float> || HasGemmWith<B, F>) && ...)> {};
}  // namespace detail
template <class W>
concept ChosenPerMatrix = requires { typename W::formats; };
template <class B, class W>
concept RunsWeightsAs = std::is_same_v<W, float> || (ChosenPerMatrix<W> && detail::MultipliesEach<B, typename W::formats>::value) ||
                        (!ChosenPerMatrix<W> && HasGemmWith<B, W> && HasGatherRowsWith<B, W>);

// Copies between host memory and the backend's memory, members of the backend instance and
// ordered with the work it queued (a device backend's stream): upload() may return before the
// copy lands, but every kernel queued after it sees the data, and the host may reuse its
// source at once; download() returns with the data on the host, after everything queued
// before it. synchronize() waits for all queued work. A step run by run_as_graph (RunsGraphs)
// may not upload, download or synchronize: a captured stream cannot wait for the host.
template <class B>
concept HasTransfers = requires(B& b, const float* src, float* dst, std::size_t n) {
    b.upload(src, dst, n);
    b.download(src, dst, n);
    b.synchronize();
};

// Optional (Llama-family models need them):
// each row of x(T,C) divided by its root mean square, then scaled: x / √(mean(x²) + eps) · gamma;
template <class B>
concept HasRmsNorm = requires(B& b, MatrixView<const float, B> x, VectorView<const float, B> gamma, float eps,
                              MatrixView<float, B> out) { b.rms_norm(x, gamma, eps, out); };

// how rotary positions pair a head's elements: (2i, 2i+1) as GGUF's llama rope, or (i, i + D/2)
// as GPT-NeoX and Hugging Face;
enum class RopePairing { adjacent, halves };

// x(T,H,D) rotated in place, row r at position first + r, pair i by the angle position ·
// inv_freq[i] (D/2 frequencies on the host), and scaled by `amplitude` (YaRN's attention factor;
// 1: none);
template <class B>
concept HasRotary = requires(B& b, Tensor3View<float, B> x, std::size_t first, std::span<const double> inv_freq, RopePairing p,
                             float amplitude) { b.rotary(x, first, inv_freq, p, amplitude); };

// the gated SiLU: out = gate · σ(gate) · up, element-wise.
template <class B>
concept HasSiluMul = requires(B& b, VectorView<const float, B> x, VectorView<float, B> out) { b.silu_mul(x, x, out); };

template <class B>
concept Backend = StorageBackend<B> && HasTransfers<B> && HasGemm<B> && HasGemv<B> && HasAdd<B> && HasLayerNorm<B> &&
                  HasGelu<B> && HasCausalAttention<B> && HasGatherRows<B>;

// Optional: sizes the backend's own attention scratch for up to `queries` queries over up to
// `keys` keys of heads of `head_dim` (reserve_attention(queries, keys, head_dim); optionally
// widened keys and values and `group` query heads per key/value head after it), so that no
// later call within those sizes allocates. Models call it with the whole context before each
// step, so decoding never allocates.
template <class B>
concept ReservesAttentionScratch = requires(B& b, std::size_t n) { b.reserve_attention(n, n, n); };

// One sequence's operands of a batched attention (HasBatchedAttention); keys and values
// stored as KV (float, or bf16 or Q8_0 where the backend has HasAttentionOver<B, KV>).
template <class B, class KV = float>
struct AttentionOperands {
    Tensor3View<const float, B> q;
    Tensor3View<const KV, B> k, v;
    Tensor3View<float, B> out;
};

// Optional: causal attention for several sequences in one call (each entry as
// HasCausalAttention computes it, with the same results); a batched step uses it.
template <class B, class KV = float>
concept HasBatchedAttention = requires(B& b, std::span<const AttentionOperands<B, KV>> each) { b.causal_attention(each); };

// Optional: causal attention over keys and values stored as KV (bf16 or Q8_0 blocks: a KV
// cache of that precision), computed in float from their widened values, one sequence and
// several. A Q8_0 tensor's last extent counts blocks of 32 values (head_dim / 32).
template <class B, class KV>
concept HasAttentionOver = HasBatchedAttention<B, KV> &&
                           requires(B& b, Tensor3View<const float, B> q, Tensor3View<const KV, B> kv,
                                    Tensor3View<float, B> out) { b.causal_attention(q, kv, kv, out); };
template <class B>
concept HasBf16Attention = HasAttentionOver<B, bf16>;

// Optional: dst = src within the backend's memory. Models need it to run several sequences in
// one step (each sequence's keys and values are copied into its own cache).
template <class B>
concept HasCopy = requires(B& b, VectorView<const float, B> src, VectorView<float, B> dst) { b.copy(src, dst); };

// Optional: runs a step that only queues work on the backend as one replayable unit (a CUDA
// graph), to save per-kernel launch overhead. Models use it for the decode step when present.
// The step may queue kernels and download_async (HasAsyncDownload) only: no allocation of
// backend memory (a Buffer), no upload, download or synchronize (HasTransfers).
template <class B>
concept RunsGraphs = requires(B& b, void (*step)()) { b.run_as_graph(step); };

// Optional: host memory the backend copies to without staging (CUDA's pinned memory), and a
// download into it that only queues the copy: the host reads it after synchronize(). It may
// be queued inside run_as_graph, so a step's results come back in the same replay.
template <class B>
concept HasAsyncDownload = requires(B& b, const float* src, typename B::template HostBuffer<float>& dst, std::size_t n) {
    requires std::constructible_from<typename B::template HostBuffer<float>, std::size_t>;
    { dst.data() } -> std::same_as<float*>;
    b.download_async(src, dst.data(), n);
};

// Host memory for results read back from backend B: its HostBuffer where it has one, else a
// std::vector.
template <class B, class T>
struct host_buffer {
    using type = std::vector<T>;
};
template <class B, class T>
    requires HasAsyncDownload<B>
struct host_buffer<B, T> {
    using type = typename B::template HostBuffer<T>;
};
template <class B, class T>
using host_buffer_t = typename host_buffer<B, T>::type;

// Optional: out[r] = the column of the largest value in row r of x, the lowest among equals,
// or -1 when the row holds a NaN or +infinity (which no sampler accepts); out is on the host
// and written when the call returns. A device backend finds greedy tokens this way without
// copying the logits out.
template <class B>
concept HasArgmaxRows = requires(B& b, MatrixView<const float, B> x, std::span<std::int32_t> out) { b.argmax_rows(x, out); };

// Optional: makes the backend current on this thread until the returned guard ends (CUDA: its
// device, and its stream for the zero fill of new buffers), so that buffers allocated in that
// time land on its device. Models hold one while they allocate.
template <class B>
concept ActivatesOnThread = requires(B& b) { b.activate(); };

// The guard of b.activate() where B has one, else an empty object.
template <class B>
auto activate(B& b) {
    if constexpr (ActivatesOnThread<B>) return b.activate();
    else return 0;
}

}  // namespace tessera
