#pragma once
// OffHost: the CPU backend dressed as a device backend with a stream, so that the contract a
// GPU backend must keep (backend/backend.hpp) is checked on any machine:
// - its memory is not the host's (host_accessible is false): weights go in through upload(),
//   logits come out through download() or download_async() into a HostBuffer;
// - work is queued, as on a CUDA stream, and runs only when the host waits for it
//   (synchronize(), download(), argmax_rows()): a result read without that wait is stale, so a
//   transfer outside the backend's ordering fails a test;
// - each one-token step runs inside run_as_graph(), where, as in a CUDA graph capture, a
//   buffer allocated, an upload, a download or a synchronize is an error thrown at once;
//   download_async() is allowed there, into a HostBuffer only (CUDA's pinned memory).
// (The CPU kernels' own host scratch is not backend memory.)
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <tessera/backend/cpu.hpp>

namespace tessera::test {

class OffHost {
public:
    static constexpr const char* name = "off-host";
    static constexpr bool host_accessible = false;
    static inline int uploads = 0, downloads = 0;
    static inline bool in_step = false;  // inside run_as_graph

    // Backend memory: the CPU's; allocating it inside a captured step is an error.
    template <class T>
    struct Buffer : Cpu::Buffer<T> {
        Buffer() = default;
        explicit Buffer(std::size_t n) : Cpu::Buffer<T>(refuse_in_step(n, "a buffer allocated")) {}
    };
    // Host memory async downloads may target (CUDA: pinned); where it is, is remembered.
    template <class T>
    class HostBuffer {
    public:
        explicit HostBuffer(std::size_t n = 0) : values_(n) { pinned().push_back(this); }
        HostBuffer(HostBuffer&& other) noexcept : values_(std::move(other.values_)) { pinned().push_back(this); }
        HostBuffer& operator=(HostBuffer&& other) noexcept {
            values_ = std::move(other.values_);
            return *this;
        }
        ~HostBuffer() { std::erase(pinned(), this); }
        T* data() noexcept { return values_.data(); }
        const T* data() const noexcept { return values_.data(); }
        std::size_t size() const noexcept { return values_.size(); }
        operator std::span<const T>() const noexcept { return values_; }

        // Whether [p, p + n) lies in one HostBuffer<T>.
        static bool holds(const T* p, std::size_t n) {
            for (const HostBuffer* b : pinned()) {
                if (p >= b->data() && p + n <= b->data() + b->size()) return true;
            }
            return false;
        }

    private:
        static std::vector<HostBuffer*>& pinned() {
            static std::vector<HostBuffer*> all;
            return all;
        }
        std::vector<T> values_;
    };

    explicit OffHost(unsigned threads) : cpu_(threads) {}

    // Transfers, ordered with the queued work. The host's source is copied at once (CUDA stages
    // a pageable source before returning), the copy into backend memory is queued.
    template <class T>
    void upload(const T* host, T* dst, std::size_t n) {
        refuse_in_step(n, "an upload");
        ++uploads;
        queue_.push_back([dst, staged = std::vector<T>(host, host + n)] { std::copy(staged.begin(), staged.end(), dst); });
    }
    template <class T>
    void download(const T* src, T* host, std::size_t n) {
        refuse_in_step(n, "a download");
        synchronize();
        ++downloads;
        std::memcpy(host, src, n * sizeof(T));
    }
    template <class T>
    void download_async(const T* src, T* host, std::size_t n) {
        if (!HostBuffer<T>::holds(host, n)) throw std::logic_error("OffHost: an async download into memory that is not a HostBuffer");
        ++downloads;
        queue_.push_back([=] { std::memcpy(host, src, n * sizeof(T)); });
    }
    void synchronize() {
        refuse_in_step(0, "a synchronize");
        for (std::size_t i = 0; i < queue_.size(); ++i) queue_[i]();
        queue_.clear();
    }
    std::size_t queued() const noexcept { return queue_.size(); }

    void gemm(MatrixView<const float, OffHost> a, MatrixView<const float, OffHost> w, VectorView<const float, OffHost> bias,
              MatrixView<float, OffHost> c) {
        later([=, this] { cpu_.gemm(on_cpu(a), on_cpu(w), on_cpu(bias), on_cpu(c)); });
    }
    void gemv(MatrixView<const float, OffHost> w, VectorView<const float, OffHost> x, VectorView<const float, OffHost> bias,
              VectorView<float, OffHost> y) {
        later([=, this] { cpu_.gemv(on_cpu(w), on_cpu(x), on_cpu(bias), on_cpu(y)); });
    }
    void add(VectorView<const float, OffHost> a, VectorView<const float, OffHost> b, VectorView<float, OffHost> out) {
        later([=, this] { cpu_.add(on_cpu(a), on_cpu(b), on_cpu(out)); });
    }
    void layer_norm(MatrixView<const float, OffHost> x, VectorView<const float, OffHost> gamma,
                    VectorView<const float, OffHost> beta, float eps, MatrixView<float, OffHost> out) {
        later([=, this] { cpu_.layer_norm(on_cpu(x), on_cpu(gamma), on_cpu(beta), eps, on_cpu(out)); });
    }
    void gelu(VectorView<const float, OffHost> x, VectorView<float, OffHost> out) {
        later([=, this] { cpu_.gelu(on_cpu(x), on_cpu(out)); });
    }
    void causal_attention(Tensor3View<const float, OffHost> q, Tensor3View<const float, OffHost> k,
                          Tensor3View<const float, OffHost> v, Tensor3View<float, OffHost> out) {
        later([=, this] { cpu_.causal_attention(on_cpu(q), on_cpu(k), on_cpu(v), on_cpu(out)); });
    }
    // The ids travel by value, as in a CUDA launch's parameters.
    void gather_rows(MatrixView<const float, OffHost> table, std::span<const std::int32_t> ids,
                     MatrixView<float, OffHost> out) {
        later([=, this, copy = std::vector<std::int32_t>(ids.begin(), ids.end())] { cpu_.gather_rows(on_cpu(table), copy, on_cpu(out)); });
    }
    // Queued, then waited for: the ids are on the host when it returns.
    void argmax_rows(MatrixView<const float, OffHost> x, std::span<std::int32_t> out) {
        later([=, this] { cpu_.argmax_rows(on_cpu(x), out); });
        synchronize();
    }

    // The stand-in for a CUDA graph capture: what the step queues runs at the next wait, as
    // the graph's launch would; counts the steps.
    int steps = 0;
    template <class Step>
    void run_as_graph(Step&& step) {
        in_step = true;
        const std::size_t before = queue_.size();
        try {
            step();
        } catch (...) {
            in_step = false;
            queue_.resize(before);  // an abandoned capture queues nothing
            throw;
        }
        in_step = false;
        ++steps;
    }

private:
    static std::size_t refuse_in_step(std::size_t n, const char* what) {
        if (in_step) throw std::logic_error(std::string("OffHost: ") + what + " inside a captured step");
        return n;
    }
    template <class F>
    void later(F&& work) {
        queue_.emplace_back(std::forward<F>(work));
    }
    template <class T, class E>
    static TensorView<T, E, Cpu> on_cpu(TensorView<T, E, OffHost> v) {
        return TensorView<T, E, Cpu>(v.data(), v.extents());
    }
    Cpu cpu_;
    std::vector<std::function<void()>> queue_;
};

}  // namespace tessera::test
