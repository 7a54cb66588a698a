#pragma once
// Cuda: the device backend. thrust's device allocation for storage, cuBLAS for the matrix
// products of many rows, hand-written kernels for the products of few rows (decoding), the
// element-wise work, LayerNorm, fused causal attention, the embedding lookup and the greedy
// argmax. One instance is one device and one non-blocking stream: every operation makes that
// device current for its duration (a scoped Activation) and queues on that stream, transfers
// included (upload and download_async queue; download waits for the data), so nothing runs on
// the legacy default stream and work of two instances, or of another thread, cannot interleave
// with a step's graph capture. run_as_graph() replays a queued step as a CUDA graph. The
// contract it keeps is backend/backend.hpp's. Compiles only under nvcc.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <algorithm>       // std::min
#include <cmath>           // std::sqrt
#include <cstddef>         // std::size_t
#include <cstdint>         // std::int32_t
#include <span>            // std::span
#include <cublas_v2.h>     // cuBLAS
#include <cuda_runtime.h>  // cudaMemcpy, streams
#include <string>          // std::to_string
#include <utility>         // std::exchange

#include <tessera/backend/backend.hpp>               // RopePairing
#include <tessera/backend/cuda.hpp>                  // Cuda (declaration)
#include <tessera/backend/cuda/activation.cuh>       // Activation
#include <tessera/backend/cuda/argmax.cuh>           // argmax_rows_kernel
#include <tessera/backend/cuda/attention.cuh>        // causal_attention_kernel
#include <tessera/backend/cuda/check.cuh>            // check, check_launch
#include <tessera/backend/cuda/device_buffer.cuh>    // DeviceBuffer
#include <tessera/backend/cuda/elementwise.cuh>      // add_kernel, gelu_kernel, silu_mul_kernel, rotary_kernel, gather_rows_kernel
#include <tessera/backend/cuda/graph.cuh>            // GraphRunner
#include <tessera/backend/cuda/matrix_products.cuh>  // skinny_gemm_kernel, add_bias_rows_kernel
#include <tessera/backend/cuda/pinned_buffer.cuh>    // PinnedBuffer
#include <tessera/backend/cuda/row_kernels.cuh>      // layer_norm_kernel, rms_norm_kernel
#include <tessera/core/error.hpp>                  // BackendError
#include <tessera/core/tensor_view.hpp>            // MatrixView, VectorView, Tensor3View

namespace tessera {

// Number of CUDA devices the runtime sees (0 without a driver or a GPU).
inline int cuda_device_count() noexcept {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" error
        return 0;
    }
    return count;
}

class Cuda {
public:
    static constexpr const char* name = "cuda";
    static constexpr bool host_accessible = false;
    template <class T>
    using Buffer = gpu::DeviceBuffer<T>;
    template <class T>
    using HostBuffer = gpu::PinnedBuffer<T>;

    // Throws BackendError ("no CUDA device") when there is none.
    explicit Cuda(int device = 0) : device_(device) {
        const int count = cuda_device_count();
        if (count == 0) throw BackendError("Cuda: no CUDA device is available");
        if (device < 0 || device >= count) {
            throw BackendError("Cuda: device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                               " found)");
        }
        const gpu::Activation on(device_, nullptr);
        // Non-blocking: no implicit ordering with the legacy default stream, which another
        // thread's cudaMemcpy or allocation may use while this stream is captured.
        gpu::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        gpu::check(cublasCreate(&blas_), "cublasCreate");
        gpu::check(cublasSetStream(blas_, stream_), "cublasSetStream");
        // Plain fp32 arithmetic: no TF32 tensor-core shortcut, so results stay comparable to the CPU.
        gpu::check(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    }
    Cuda(Cuda&& other) noexcept
        : device_(other.device_), stream_(std::exchange(other.stream_, nullptr)), blas_(std::exchange(other.blas_, nullptr)),
          graph_(std::move(other.graph_)), use_graphs_(other.use_graphs_), argmax_ids_(std::move(other.argmax_ids_)),
          argmax_host_(std::move(other.argmax_host_)) {}
    Cuda& operator=(Cuda&&) = delete;
    Cuda(const Cuda&) = delete;
    Cuda& operator=(const Cuda&) = delete;
    ~Cuda() {
        if (stream_ == nullptr) return;
        try {
            const gpu::Activation on(device_, nullptr);
            argmax_ids_ = {};
            cudaStreamSynchronize(stream_);
            if (blas_ != nullptr) cublasDestroy(blas_);
            cudaStreamDestroy(stream_);
        } catch (...) {  // cudaGetDevice failed: nothing left to release properly
        }
    }

    int device() const noexcept { return device_; }
    cudaStream_t stream() const noexcept { return stream_; }

    // This backend's device and stream for the caller's scope (ActivatesOnThread): tensors
    // made meanwhile are allocated on its device and zero-filled on its stream.
    gpu::Activation activate() const { return gpu::Activation(device_, stream_); }

    // Transfers (HasTransfers, HasAsyncDownload), queued on the stream. From pageable host
    // memory, upload returns once the source is staged; download returns with the data.
    template <class T>
    void upload(const T* host, T* dst, std::size_t n) {
        const auto on = activate();
        gpu::check(cudaMemcpyAsync(dst, host, n * sizeof(T), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (upload)");
    }
    template <class T>
    void download(const T* src, T* host, std::size_t n) {
        const auto on = activate();
        gpu::check(cudaMemcpyAsync(host, src, n * sizeof(T), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (download)");
        synchronize();
    }
    // Into a HostBuffer (pinned): queued only, valid after synchronize(); may be captured in a graph.
    template <class T>
    void download_async(const T* src, T* host, std::size_t n) {
        const auto on = activate();
        gpu::check(cudaMemcpyAsync(host, src, n * sizeof(T), cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (download_async)");
    }
    void synchronize() {
        const auto on = activate();
        gpu::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }

    // Row-major C(M,N) = A(M,K)·W(N,K)ᵀ: up to skinny_max_rows rows in one pass over W with the
    // bias fused; more through cuBLAS, where row-major C is column-major Cᵀ(N,M) = W·Aᵀ and the
    // column-major views of the row-major buffers are Wᵀ(K,N) and Aᵀ(K,M): hence op(T) on W.
    void gemm(MatrixView<const float, Cuda> a, MatrixView<const float, Cuda> w, VectorView<const float, Cuda> bias,
              MatrixView<float, Cuda> c) {
        const auto on = activate();
        const int m = static_cast<int>(a.extent(0)), n = static_cast<int>(w.extent(0)), k = static_cast<int>(a.extent(1));
        if (m == 0 || n == 0) return;
        if (m <= gpu::skinny_max_rows) {
            skinny_gemm(a.data(), w.data(), bias.empty() ? nullptr : bias.data(), c.data(), m, n, k);
            return;
        }
        const float one = 1.0f, zero = 0.0f;
        gpu::check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w.data(), k, a.data(), k, &zero,
                                c.data(), n),
                    "cublasSgemm");
        if (!bias.empty()) {
            const std::size_t total = c.size();
            const unsigned blocks = static_cast<unsigned>((total + 255) / 256);
            gpu::add_bias_rows_kernel<<<blocks, 256, 0, stream_>>>(c.data(), bias.data(), c.extent(0), c.extent(1));
            gpu::check_launch("add_bias_rows_kernel");
        }
    }

    // y(N) = W(N,K)·x(K) + bias: the one-row product.
    void gemv(MatrixView<const float, Cuda> w, VectorView<const float, Cuda> x, VectorView<const float, Cuda> bias,
              VectorView<float, Cuda> y) {
        const auto on = activate();
        const int n = static_cast<int>(w.extent(0)), k = static_cast<int>(w.extent(1));
        if (n == 0) return;
        skinny_gemm(x.data(), w.data(), bias.empty() ? nullptr : bias.data(), y.data(), 1, n, k);
    }

    void add(VectorView<const float, Cuda> a, VectorView<const float, Cuda> b, VectorView<float, Cuda> out) {
        if (out.size() == 0) return;
        const auto on = activate();
        gpu::add_kernel<<<gpu::elementwise_blocks(out.size()), gpu::elementwise_threads, 0, stream_>>>(a.data(), b.data(),
                                                                                                   out.data(), out.size());
        gpu::check_launch("add_kernel");
    }

    void gelu(VectorView<const float, Cuda> x, VectorView<float, Cuda> out) {
        if (out.size() == 0) return;
        const auto on = activate();
        gpu::gelu_kernel<<<gpu::elementwise_blocks(out.size()), gpu::elementwise_threads, 0, stream_>>>(x.data(), out.data(),
                                                                                                    out.size());
        gpu::check_launch("gelu_kernel");
    }

    void silu_mul(VectorView<const float, Cuda> gate, VectorView<const float, Cuda> up, VectorView<float, Cuda> out) {
        if (out.size() == 0) return;
        const auto on = activate();
        gpu::silu_mul_kernel<<<gpu::elementwise_blocks(out.size()), gpu::elementwise_threads, 0, stream_>>>(gate.data(), up.data(),
                                                                                                        out.data(), out.size());
        gpu::check_launch("silu_mul_kernel");
    }

    void rms_norm(MatrixView<const float, Cuda> x, VectorView<const float, Cuda> gamma, float eps, MatrixView<float, Cuda> out) {
        const auto on = activate();
        if (x.extent(0) == 0) return;
        gpu::rms_norm_kernel<<<static_cast<unsigned>(x.extent(0)), gpu::row_block_threads, 0, stream_>>>(x.data(), gamma.data(), eps,
                                                                                                     out.data(), x.extent(1));
        gpu::check_launch("rms_norm_kernel");
    }

    void rotary(Tensor3View<float, Cuda> x, std::size_t first, std::span<const double> inv_freq, RopePairing pairing,
                float amplitude) {
        if (x.extent(0) == 0) return;
        if (inv_freq.size() > gpu::rotary_max_pairs) {
            throw BackendError("Cuda::rotary: heads of " + std::to_string(x.extent(2)) + " are over the " +
                               std::to_string(2 * gpu::rotary_max_pairs) + " supported");
        }
        const auto on = activate();
        gpu::RotaryFrequencies f{};
        std::copy(inv_freq.begin(), inv_freq.end(), f.inv_freq);
        gpu::rotary_kernel<<<static_cast<unsigned>(x.extent(0)), 64, 0, stream_>>>(x.data(), x.extent(1), x.extent(2), first, f,
                                                                                  pairing == RopePairing::halves, amplitude);
        gpu::check_launch("rotary_kernel");
    }

    // Each row's greedy token (HasArgmaxRows): one kernel, then the ids (4 bytes a row) through
    // pinned memory; waits for them.
    void argmax_rows(MatrixView<const float, Cuda> x, std::span<std::int32_t> out) {
        const std::size_t rows = x.extent(0);
        if (rows == 0) return;
        const auto on = activate();
        if (argmax_ids_.size() < rows) argmax_ids_ = gpu::DeviceBuffer<std::int32_t>(rows);
        if (argmax_host_.size() < rows) argmax_host_ = gpu::PinnedBuffer<std::int32_t>(rows);
        gpu::argmax_rows_kernel<<<static_cast<unsigned>(rows), gpu::argmax_threads, 0, stream_>>>(x.data(), x.extent(1),
                                                                                               argmax_ids_.data());
        gpu::check_launch("argmax_rows_kernel");
        download_async(argmax_ids_.data(), argmax_host_.data(), rows);
        synchronize();
        std::copy_n(argmax_host_.data(), rows, out.data());
    }

    void layer_norm(MatrixView<const float, Cuda> x, VectorView<const float, Cuda> gamma,
                    VectorView<const float, Cuda> beta, float eps, MatrixView<float, Cuda> out) {
        const auto on = activate();
        if (x.extent(0) == 0) return;
        const std::size_t cols = x.extent(1);
        if (cols > gpu::layer_norm_max_cols) {
            throw BackendError("layer_norm: rows of " + std::to_string(cols) + " values; the CUDA kernel takes at most " +
                               std::to_string(gpu::layer_norm_max_cols));
        }
        const auto launch = [&](auto kernel, int threads) {
            kernel<<<static_cast<unsigned>(x.extent(0)), threads, 0, stream_>>>(x.data(), gamma.data(), beta.data(), eps,
                                                                               out.data(), cols);
        };
        const std::size_t t = gpu::row_block_threads;
        if (cols <= 4 * t) launch(gpu::layer_norm_kernel<4>, gpu::row_block_threads);
        else if (cols <= 16 * t) launch(gpu::layer_norm_kernel<16>, gpu::row_block_threads);
        else if (cols <= 16 * 1024) launch(gpu::layer_norm_kernel<16>, 1024);
        else launch(gpu::layer_norm_kernel<64>, 1024);
        gpu::check_launch("layer_norm_kernel");
    }

    // One block per (head, query): 32 warps splitting the keys when there are few blocks
    // (decoding), 4 when the queries alone fill the GPU (prefill).
    void causal_attention(Tensor3View<const float, Cuda> q, Tensor3View<const float, Cuda> k,
                          Tensor3View<const float, Cuda> v, Tensor3View<float, Cuda> out) {
        const auto on = activate();
        const std::size_t tq = q.extent(0), tk = k.extent(0), heads = q.extent(1), dim = q.extent(2);
        if (tq == 0 || heads == 0 || dim == 0) return;
        const dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>(tq));
        const unsigned threads = (tq * heads >= 1024 ? 4 : gpu::attention_max_warps) * gpu::warp_size;
        const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
        const auto launch = [&](auto kernel) {
            kernel<<<grid, threads, 0, stream_>>>(q.data(), k.data(), v.data(), out.data(), tq, tk, heads, k.extent(1), dim, scale);
            gpu::check_launch("causal_attention_kernel");
        };
        if (dim <= 32) launch(gpu::causal_attention_kernel<1>);
        else if (dim <= 64) launch(gpu::causal_attention_kernel<2>);
        else if (dim <= 128) launch(gpu::causal_attention_kernel<4>);
        else if (dim <= 256) launch(gpu::causal_attention_kernel<8>);
        else throw BackendError("Cuda::causal_attention: head size " + std::to_string(dim) + " is over the 256 supported");
    }

    void gather_rows(MatrixView<const float, Cuda> table, std::span<const std::int32_t> ids, MatrixView<float, Cuda> out) {
        const auto on = activate();
        const std::size_t cols = table.extent(1);
        for (std::size_t first = 0; first < ids.size(); first += gpu::gather_ids_per_launch) {
            const std::size_t count = std::min(gpu::gather_ids_per_launch, ids.size() - first);
            gpu::TokenIds chunk{};
            std::copy_n(ids.data() + first, count, chunk.id);
            gpu::gather_rows_kernel<<<static_cast<unsigned>(count), 256, 0, stream_>>>(table.data(), chunk,
                                                                                      out.data() + first * cols, cols);
            gpu::check_launch("gather_rows_kernel");
        }
    }

    // Runs step() (which queues work on this backend only) as one CUDA graph, or directly when
    // graphs are switched off. Results are the same either way; graphs save launch overhead.
    template <class Step>
    void run_as_graph(Step&& step) {
        const auto on = activate();
        if (use_graphs_) graph_.run(stream_, step);
        else step();
    }
    void use_graphs(bool on) noexcept { use_graphs_ = on; }
    // GraphRunner's measurement hook: the device time of the graph launches since the last call.
    void time_graph_launches(bool on) {
        const auto active = activate();
        graph_.time_launches(on);
    }
    double take_graph_launch_seconds() {
        const auto active = activate();
        return graph_.take_timed_seconds();
    }

private:
    int device_;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t blas_ = nullptr;
    gpu::GraphRunner graph_;
    bool use_graphs_ = true;
    gpu::DeviceBuffer<std::int32_t> argmax_ids_;    // argmax_rows' ids on the device
    gpu::PinnedBuffer<std::int32_t> argmax_host_;   // ... and on their way to the host

    void skinny_gemm(const float* a, const float* w, const float* bias, float* c, int m, int n, int k) {
        constexpr int warps = gpu::skinny_block_threads / gpu::warp_size;
        const unsigned blocks = static_cast<unsigned>((n + warps - 1) / warps);
        if (k % 4 == 0 && gpu::aligned16(a) && gpu::aligned16(w)) {
            gpu::skinny_gemm_kernel<true><<<blocks, gpu::skinny_block_threads, 0, stream_>>>(a, w, bias, c, m, n, k);
        } else {
            gpu::skinny_gemm_kernel<false><<<blocks, gpu::skinny_block_threads, 0, stream_>>>(a, w, bias, c, m, n, k);
        }
        gpu::check_launch("skinny_gemm_kernel");
    }
};

}  // namespace tessera
