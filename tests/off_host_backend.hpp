#pragma once
// OffHost: the CPU backend dressed as a device backend, so that the paths GPT2 takes only on a
// GPU run, and are checked, on any machine: weights go in through upload(), logits come out
// through download() (host_accessible is false), and each one-token step runs inside
// run_as_graph(), where, as in a CUDA graph capture, no backend memory may be allocated and
// nothing transferred. (The CPU kernels' own host scratch is not backend memory.)
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>

#include <tessera/backend/cpu.hpp>

namespace tessera::test {

class OffHost {
public:
    static constexpr const char* name = "off-host";
    static constexpr bool host_accessible = false;
    static inline int uploads = 0, downloads = 0, buffers_made_in_steps = 0;
    static inline bool in_step = false;  // inside run_as_graph: transfers are errors

    // Backend memory: the CPU's, counted when made inside a step.
    template <class T>
    struct Buffer : Cpu::Buffer<T> {
        Buffer() = default;
        explicit Buffer(std::size_t n) : Cpu::Buffer<T>(n) { buffers_made_in_steps += in_step ? 1 : 0; }
    };

    template <class T>
    static void upload(const T* host, T* dst, std::size_t n) {
        if (in_step) throw std::logic_error("OffHost: upload inside a captured step");
        ++uploads;
        std::memcpy(dst, host, n * sizeof(T));
    }
    template <class T>
    static void download(const T* src, T* host, std::size_t n) {
        if (in_step) throw std::logic_error("OffHost: download inside a captured step");
        ++downloads;
        std::memcpy(host, src, n * sizeof(T));
    }

    explicit OffHost(unsigned threads) : cpu_(threads) {}

    void gemm(MatrixView<const float, OffHost> a, MatrixView<const float, OffHost> w, VectorView<const float, OffHost> bias,
              MatrixView<float, OffHost> c) {
        cpu_.gemm(on_cpu(a), on_cpu(w), on_cpu(bias), on_cpu(c));
    }
    void gemv(MatrixView<const float, OffHost> w, VectorView<const float, OffHost> x, VectorView<const float, OffHost> bias,
              VectorView<float, OffHost> y) {
        cpu_.gemv(on_cpu(w), on_cpu(x), on_cpu(bias), on_cpu(y));
    }
    void add(VectorView<const float, OffHost> a, VectorView<const float, OffHost> b, VectorView<float, OffHost> out) {
        cpu_.add(on_cpu(a), on_cpu(b), on_cpu(out));
    }
    void layer_norm(MatrixView<const float, OffHost> x, VectorView<const float, OffHost> gamma,
                    VectorView<const float, OffHost> beta, float eps, MatrixView<float, OffHost> out) {
        cpu_.layer_norm(on_cpu(x), on_cpu(gamma), on_cpu(beta), eps, on_cpu(out));
    }
    void gelu(VectorView<const float, OffHost> x, VectorView<float, OffHost> out) { cpu_.gelu(on_cpu(x), on_cpu(out)); }
    void causal_attention(Tensor3View<const float, OffHost> q, Tensor3View<const float, OffHost> k,
                          Tensor3View<const float, OffHost> v, Tensor3View<float, OffHost> out) {
        cpu_.causal_attention(on_cpu(q), on_cpu(k), on_cpu(v), on_cpu(out));
    }
    void gather_rows(MatrixView<const float, OffHost> table, std::span<const std::int32_t> ids,
                     MatrixView<float, OffHost> out) {
        cpu_.gather_rows(on_cpu(table), ids, on_cpu(out));
    }

    // The stand-in for a CUDA graph capture: counts the steps.
    int steps = 0;
    template <class Step>
    void run_as_graph(Step&& step) {
        in_step = true;
        try {
            step();
        } catch (...) {
            in_step = false;
            throw;
        }
        in_step = false;
        ++steps;
    }

private:
    template <class T, class E>
    static TensorView<T, E, Cpu> on_cpu(TensorView<T, E, OffHost> v) {
        return TensorView<T, E, Cpu>(v.data(), v.extents());
    }
    Cpu cpu_;
};

}  // namespace tessera::test
