#pragma once
// Cpu: the host backend. Aligned heap buffers, Eigen for the arithmetic, a thread pool for
// the cores. An instance owns the threads (and per-thread scratch); Tensors only need the type.
#include <algorithm>  // std::copy_n, std::max
#include <cstddef>    // std::size_t
#include <cstdint>    // std::int32_t
#include <memory>     // std::unique_ptr
#include <span>       // std::span
#include <thread>     // std::thread::hardware_concurrency
#include <tuple>      // std::tuple, std::get
#include <type_traits>  // std::is_same_v
#include <vector>     // std::vector

#include <tessera/backend/backend.hpp>              // AttentionOperands
#include <tessera/backend/cpu/argmax.hpp>          // argmax_row
#include <tessera/backend/cpu/aligned_buffer.hpp>   // AlignedBuffer
#include <tessera/backend/cpu/attention.hpp>        // causal_attention
#include <tessera/backend/cpu/elementwise.hpp>      // add, gelu, silu_mul
#include <tessera/backend/cpu/kernel_level.hpp>     // requested_kernel_level
#include <tessera/backend/cpu/matrix_products.hpp>  // gemm, gemv
#include <tessera/backend/cpu/normalization.hpp>    // layer_norm, rms_norm
#include <tessera/backend/cpu/rotary.hpp>           // rotary
#include <tessera/backend/cpu/arranged_weights.hpp>  // arrange_weights: Q8_0, Q4_0, bf16, float
#include <tessera/backend/cpu/thread_pool.hpp>      // ThreadPool
#include <tessera/backend/cpu/weight_products.hpp>  // gemm_weights: bf16, Q8_0, Q4_0 weights
#include <tessera/core/tensor_view.hpp>             // MatrixView, VectorView, Tensor3View

namespace tessera {

class Cpu {
public:
    static constexpr const char* name = "cpu";
    static constexpr bool host_accessible = true;
    template <class T>
    using Buffer = cpu::AlignedBuffer<T>;

    // Transfers (HasTransfers): every kernel has finished when it returns, so a copy is all.
    template <class T>
    void upload(const T* host, T* dst, std::size_t n) {
        std::copy_n(host, n, dst);
    }
    template <class T>
    void download(const T* src, T* host, std::size_t n) {
        std::copy_n(src, n, host);
    }
    void synchronize() noexcept {}

    static unsigned default_threads() noexcept { return std::max(1u, std::thread::hardware_concurrency()); }

    // Throws ArgumentError for 0 threads, or a TESSERA_CPU_KERNELS the kernels do not know.
    explicit Cpu(unsigned threads = default_threads()) {
        (void)cpu::requested_kernel_level();
        set_threads(threads);
    }

    unsigned threads() const noexcept { return pool_->size(); }
    // Throws ArgumentError for 0.
    void set_threads(unsigned threads) {
        pool_ = std::make_unique<cpu::ThreadPool>(threads);
        scratch_.resize(threads);
    }
    cpu::ThreadPool& pool() noexcept { return *pool_; }

    // Kernels: shapes are checked by the ops/ layer before they arrive here. Those that are not
    // templates for another reason take `Deferred` (always void), as their cpu:: kernels do: a
    // template's body is compiled only in a program that calls it, so one that includes the
    // backend and never runs it (a program that opens models through open_model_on) does not
    // compile Eigen's expressions and the kernels (about 80 MB of compiler memory; bench/RESULTS.md).
    template <class Deferred = void>
    void gemm(MatrixView<const float, Cpu> a, MatrixView<const float, Cpu> w, VectorView<const float, Cpu> bias,
              MatrixView<float, Cpu> c) {
        cpu::gemm<Deferred>(*pool_, a.data(), w.data(), bias_or_null(bias), c.data(), a.extent(0), w.extent(0), a.extent(1));
    }
    template <class Deferred = void>
    void gemv(MatrixView<const float, Cpu> w, VectorView<const float, Cpu> x, VectorView<const float, Cpu> bias,
              VectorView<float, Cpu> y) {
        cpu::gemv<Deferred>(*pool_, w.data(), x.data(), bias_or_null(bias), y.data(), w.extent(0), w.extent(1));
    }
    // Weights stored as bf16, Q8_0 or Q4_0: w holds N rows of K / block elements.
    template <class W>
        requires(!std::is_same_v<W, float> && WeightType<W>)
    void gemm(MatrixView<const float, Cpu> a, MatrixView<const W, Cpu> w, VectorView<const float, Cpu> bias,
              MatrixView<float, Cpu> c) {
        cpu::gemm_weights(*pool_, a.data(), w.data(), bias_or_null(bias), c.data(), a.extent(0), w.extent(0), a.extent(1));
    }
    // A Q4_0 model's Q6_K head packed once more for its products of several rows (a batched
    // step; HasPackedWeights, used by Embedding; empty without AVX-512 VNNI): the table stays
    // as stored for gather_rows. cpu::PackedIntegerWeights says what it costs.
    template <class W>
    using PackedWeights = cpu::PackedIntegerWeights;
    template <class Deferred = void>
    cpu::PackedIntegerWeights pack_weights(MatrixView<const Q6_K, Cpu> w) {
        return cpu::pack_integer_weights<Deferred>(*pool_, w.data(), w.extent(0), w.extent(1) * WeightFormat<Q6_K>::block);
    }
    template <class Deferred = void>
    void gemm(MatrixView<const float, Cpu> a, MatrixView<const Q6_K, Cpu> w, const cpu::PackedIntegerWeights& packed,
              VectorView<const float, Cpu> bias, MatrixView<float, Cpu> c) {
        if (a.extent(0) < 2 || packed.empty()) return gemm(a, w, bias, c);  // one row: gemv over W as stored
        cpu::prepacked_q6_k_gemm<Deferred>(*pool_, a.data(), packed, bias_or_null(bias), c.data(), a.extent(0), w.extent(0), a.extent(1));
    }
    // A Linear's Q8_0, Q4_0, bf16 and float weights arranged in place once loaded (ArrangesWeights;
    // where the CPU has the instructions): cpu/arranged_weights.hpp says how and why.
    template <class W>
    using ArrangedWeights = cpu::Arrangement;
    static constexpr std::size_t arranged_rows = cpu::arranged_rows;  // rows per arranged group
    template <class W>
        requires std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>
    cpu::Arrangement arrange_weights(MatrixView<W, Cpu> w) {
        return cpu::arrange_integer(*pool_, w.data(), w.extent(0), w.extent(1) * WeightFormat<W>::block);
    }
    template <class Deferred = void>
    cpu::Arrangement arrange_weights(MatrixView<bf16, Cpu> w) { return cpu::arrange_bf16<Deferred>(*pool_, w.data(), w.extent(0), w.extent(1)); }
    template <class Deferred = void>
    cpu::Arrangement arrange_weights(MatrixView<float, Cpu> w) { return cpu::arrange_float<Deferred>(*pool_, w.data(), w.extent(0), w.extent(1)); }
    template <class W>
        requires std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0> || std::is_same_v<W, bf16> || std::is_same_v<W, float>
    void gemm(MatrixView<const float, Cpu> a, MatrixView<const W, Cpu> w, const cpu::Arrangement& arranged,
              VectorView<const float, Cpu> bias, MatrixView<float, Cpu> c) {
#if TESSERA_HAS_AVX512_KERNELS
        if (arranged.arranged) {
            const std::size_t m = a.extent(0), n = w.extent(0), k = a.extent(1);
            const float* b = bias_or_null(bias);
            if constexpr (std::is_same_v<W, bf16> || std::is_same_v<W, float>) {
                if (arranged.for_avx2) return cpu::avx2_arranged_float_gemm(*pool_, a.data(), w.data(), b, c.data(), m, n, k);
                if constexpr (std::is_same_v<W, bf16>) return cpu::arranged_bf16_gemm(*pool_, a.data(), w.data(), b, c.data(), m, n, k);
                else return cpu::arranged_float_gemm(*pool_, a.data(), w.data(), b, c.data(), m, n, k);
            } else {
                if (arranged.for_avx2) return cpu::avx2_arranged_integer_gemm(*pool_, a.data(), w.data(), b, c.data(), m, n, k);
                return cpu::arranged_integer_gemm(*pool_, a.data(), w.data(), b, c.data(), m, n, k);
            }
        }
#endif
        gemm(a, w, bias, c);
    }
    template <class Deferred = void>
    void add(VectorView<const float, Cpu> a, VectorView<const float, Cpu> b, VectorView<float, Cpu> out) {
        cpu::add<Deferred>(*pool_, a.data(), b.data(), out.data(), out.size());
    }
    void copy(VectorView<const float, Cpu> src, VectorView<float, Cpu> dst) {
        std::copy_n(src.data(), src.size(), dst.data());
    }
    template <class Deferred = void>
    void layer_norm(MatrixView<const float, Cpu> x, VectorView<const float, Cpu> gamma, VectorView<const float, Cpu> beta,
                    float eps, MatrixView<float, Cpu> out) {
        cpu::layer_norm<Deferred>(*pool_, x.data(), gamma.data(), beta.data(), eps, out.data(), x.extent(0), x.extent(1));
    }
    template <class Deferred = void>
    void gelu(VectorView<const float, Cpu> x, VectorView<float, Cpu> out) {
        cpu::gelu<Deferred>(*pool_, x.data(), out.data(), out.size());
    }
    template <class Deferred = void>
    void rms_norm(MatrixView<const float, Cpu> x, VectorView<const float, Cpu> gamma, float eps, MatrixView<float, Cpu> out) {
        cpu::rms_norm<Deferred>(*pool_, x.data(), gamma.data(), eps, out.data(), x.extent(0), x.extent(1));
    }
    void rotary(Tensor3View<float, Cpu> x, std::size_t first, std::span<const double> inv_freq, RopePairing pairing,
                float amplitude) {
        cpu::rotary(*pool_, x.data(), x.extent(0), x.extent(1), x.extent(2), first, inv_freq.data(), pairing == RopePairing::halves,
                    amplitude);
    }
    template <class Deferred = void>
    void silu_mul(VectorView<const float, Cpu> gate, VectorView<const float, Cpu> up, VectorView<float, Cpu> out) {
        cpu::silu_mul<Deferred>(*pool_, gate.data(), up.data(), out.data(), out.size());
    }
    // Per-thread room for attention over heads of `head_dim`, `group` query heads per key/value
    // head: score rows, a head's keys arranged and, for keys and values stored in bf16 or Q8_0
    // (`widened`), room to widen them; models reserve the whole context before each step.
    void reserve_attention(std::size_t queries, std::size_t keys, std::size_t head_dim, bool widened = false,
                           std::size_t group = 1) {
        const std::size_t floats = cpu::attention_scratch_floats(queries, keys, head_dim, widened, group);
        for (auto& row : scratch_) {
            if (row.size() < floats) row = cpu::AlignedBuffer<float>(floats);
        }
    }
    // Keys and values in float, bf16 or Q8_0 (a KV cache of that precision: HasAttentionOver).
    template <class KV>
        requires std::is_same_v<KV, float> || std::is_same_v<KV, bf16> || std::is_same_v<KV, Q8_0>
    void causal_attention(Tensor3View<const float, Cpu> q, Tensor3View<const KV, Cpu> k, Tensor3View<const KV, Cpu> v,
                          Tensor3View<float, Cpu> out) {
        const std::size_t tk = k.extent(0);
        // a no-op when the caller reserved
        reserve_attention(q.extent(0), tk, q.extent(2), !std::is_same_v<KV, float>, q.extent(1) / k.extent(1));
        cpu::causal_attention(*pool_, scratch_, q.data(), k.data(), v.data(), out.data(), q.extent(0), tk, q.extent(1),
                              k.extent(1), q.extent(2));
    }

    // Several sequences at once (a batched step): see cpu::causal_attention_each. The list of
    // pointers lives in the backend, grown once, so that a step allocates nothing.
    template <class KV>
        requires std::is_same_v<KV, float> || std::is_same_v<KV, bf16> || std::is_same_v<KV, Q8_0>
    void causal_attention(std::span<const AttentionOperands<Cpu, KV>> each) {
        auto& list = std::get<std::vector<cpu::AttentionSequence<KV>>>(attention_lists_);
        list.clear();
        std::size_t most_q = 0, most_k = 0;
        for (const auto& e : each) {
            list.push_back({e.q.data(), e.k.data(), e.v.data(), e.out.data(), e.q.extent(0), e.k.extent(0)});
            most_q = std::max(most_q, e.q.extent(0));
            most_k = std::max(most_k, e.k.extent(0));
        }
        if (each.empty()) return;
        // a no-op when the caller reserved
        reserve_attention(most_q, most_k, each[0].q.extent(2), !std::is_same_v<KV, float>, each[0].q.extent(1) / each[0].k.extent(1));
        cpu::causal_attention_each(*pool_, scratch_, std::span<const cpu::AttentionSequence<KV>>(list), each[0].q.extent(1),
                                   each[0].k.extent(1), each[0].q.extent(2));
    }

    void gather_rows(MatrixView<const float, Cpu> table, std::span<const std::int32_t> ids, MatrixView<float, Cpu> out) {
        const std::size_t c = table.extent(1);
        for (std::size_t i = 0; i < ids.size(); ++i)
            std::copy_n(table.data() + static_cast<std::size_t>(ids[i]) * c, c, out.data() + i * c);
    }

    template <class W>
        requires(!std::is_same_v<W, float> && WeightType<W>)
    void gather_rows(MatrixView<const W, Cpu> table, std::span<const std::int32_t> ids, MatrixView<float, Cpu> out) {
        const std::size_t c = out.extent(1), stored = table.extent(1);
        for (std::size_t i = 0; i < ids.size(); ++i)
            WeightFormat<W>::dequantize(table.data() + static_cast<std::size_t>(ids[i]) * stored, out.data() + i * c, c);
    }
    // Rows of a float or bf16 table arranged in place (ArrangesTables: the tied head's table,
    // multiplied as a Linear's arranged weights are), read back out of its order.
    template <class T>
        requires std::is_same_v<T, float> || std::is_same_v<T, bf16>
    void gather_rows(MatrixView<const T, Cpu> table, const cpu::Arrangement& arranged, std::span<const std::int32_t> ids,
                     MatrixView<float, Cpu> out) {
        if (arranged.empty()) return gather_rows(table, ids, out);
        const std::size_t n = table.extent(0), c = table.extent(1);
        for (std::size_t r = 0; r < ids.size(); ++r)
            for (std::size_t e = 0; e < c; ++e)
                out.data()[r * c + e] = static_cast<float>(cpu::arranged_element(table.data(), n, c, arranged, static_cast<std::size_t>(ids[r]), e));
    }
    // The same for a Q8_0 or Q4_0 table, each block read back out of its group.
    template <class W>
        requires std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>
    void gather_rows(MatrixView<const W, Cpu> table, const cpu::Arrangement& arranged, std::span<const std::int32_t> ids,
                     MatrixView<float, Cpu> out) {
        if (arranged.empty()) return gather_rows(table, ids, out);
        const std::size_t n = table.extent(0), blocks = table.extent(1), c = out.extent(1);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            for (std::size_t b = 0; b < blocks; ++b) {
                const W block = cpu::arranged_block(table.data(), n, blocks, arranged, static_cast<std::size_t>(ids[i]), b);
                WeightFormat<W>::dequantize(&block, out.data() + i * c + b * WeightFormat<W>::block, WeightFormat<W>::block);
            }
        }
    }

    // Each row's greedy token (HasArgmaxRows).
    void argmax_rows(MatrixView<const float, Cpu> x, std::span<std::int32_t> out) {
        for (std::size_t r = 0; r < x.extent(0); ++r) out[r] = cpu::argmax_row(x.data() + r * x.extent(1), x.extent(1));
    }

private:
    static const float* bias_or_null(VectorView<const float, Cpu> bias) noexcept {
        return bias.empty() ? nullptr : bias.data();
    }

    std::unique_ptr<cpu::ThreadPool> pool_;
    std::vector<cpu::AlignedBuffer<float>> scratch_;  // attention scores per thread, 64-byte aligned
    // A batched step's sequences, for float, bf16 and Q8_0 keys and values.
    std::tuple<std::vector<cpu::AttentionSequence<float>>, std::vector<cpu::AttentionSequence<bf16>>,
               std::vector<cpu::AttentionSequence<Q8_0>>>
        attention_lists_;
};

}  // namespace tessera
