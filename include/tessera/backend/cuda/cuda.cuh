#pragma once
// Cuda: the device backend. thrust device_vectors for storage and element-wise work, cuBLAS
// for the matrix products, hand-written kernels for LayerNorm, softmax and attention. Every
// kernel is queued on the instance's stream; transfers (upload, download) are synchronous and
// wait for that queued work. Compiles only under nvcc.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cmath>           // std::sqrt
#include <cstddef>         // std::size_t
#include <cstdint>         // std::int32_t
#include <span>            // std::span
#include <cublas_v2.h>     // cuBLAS
#include <cuda_runtime.h>  // cudaMemcpy, streams
#include <string>          // std::to_string
#include <utility>         // std::exchange

#include <tessera/backend/cuda.hpp>                // Cuda (declaration)
#include <tessera/backend/cuda/attention.cuh>      // causal_attention_kernel
#include <tessera/backend/cuda/check.cuh>          // check, check_launch
#include <tessera/backend/cuda/device_buffer.cuh>  // DeviceBuffer
#include <tessera/backend/cuda/elementwise.cuh>    // GeluTanh, add_bias_rows_kernel
#include <tessera/backend/cuda/row_kernels.cuh>    // layer_norm_kernel, softmax_rows_kernel
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
    static void upload(const T* host, T* dst, std::size_t n) {
        gpu::check(cudaMemcpy(dst, host, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
    }
    template <class T>
    static void download(const T* src, T* host, std::size_t n) {
        gpu::check(cudaMemcpy(host, src, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy (download)");
    }

    // Throws BackendError ("no CUDA device") when there is none.
    explicit Cuda(int device = 0) {
        const int count = cuda_device_count();
        if (count == 0) throw BackendError("Cuda: no CUDA device is available");
        if (device < 0 || device >= count) {
            throw BackendError("Cuda: device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                               " found)");
        }
        gpu::check(cudaSetDevice(device), "cudaSetDevice");
        gpu::check(cudaStreamCreate(&stream_), "cudaStreamCreate");
        gpu::check(cublasCreate(&blas_), "cublasCreate");
        gpu::check(cublasSetStream(blas_, stream_), "cublasSetStream");
        // Plain fp32 arithmetic: no TF32 tensor-core shortcut, so results stay comparable to the CPU.
        gpu::check(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    }
    Cuda(Cuda&& other) noexcept
        : stream_(std::exchange(other.stream_, nullptr)), blas_(std::exchange(other.blas_, nullptr)),
          scores_(std::move(other.scores_)) {}
    Cuda& operator=(Cuda&&) = delete;
    Cuda(const Cuda&) = delete;
    Cuda& operator=(const Cuda&) = delete;
    ~Cuda() {
        if (blas_ != nullptr) cublasDestroy(blas_);
        if (stream_ != nullptr) cudaStreamDestroy(stream_);
    }

    cudaStream_t stream() const noexcept { return stream_; }
    void synchronize() { gpu::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

    // Row-major C(M,N) = A(M,K)·W(N,K)ᵀ is column-major Cᵀ(N,M) = W·Aᵀ, where the column-major
    // views of the row-major buffers are Wᵀ(K,N) and Aᵀ(K,M): hence op(T) on W, op(N) on A.
    void gemm(MatrixView<const float, Cuda> a, MatrixView<const float, Cuda> w, VectorView<const float, Cuda> bias,
              MatrixView<float, Cuda> c) {
        const int m = static_cast<int>(a.extent(0)), n = static_cast<int>(w.extent(0)), k = static_cast<int>(a.extent(1));
        if (m == 0 || n == 0) return;
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

    // y(N) = W(N,K)·x(K): the column-major view of W is Wᵀ(K,N), so op(T).
    void gemv(MatrixView<const float, Cuda> w, VectorView<const float, Cuda> x, VectorView<const float, Cuda> bias,
              VectorView<float, Cuda> y) {
        const int n = static_cast<int>(w.extent(0)), k = static_cast<int>(w.extent(1));
        if (n == 0) return;
        const float one = 1.0f, zero = 0.0f;
        if (!bias.empty()) {
            gpu::check(cudaMemcpyAsync(y.data(), bias.data(), y.size() * sizeof(float), cudaMemcpyDeviceToDevice,
                                        stream_),
                        "cudaMemcpyAsync (gemv bias)");
        }
        gpu::check(cublasSgemv(blas_, CUBLAS_OP_T, k, n, &one, w.data(), k, x.data(), 1, bias.empty() ? &zero : &one,
                                y.data(), 1),
                    "cublasSgemv");
    }

    void add(VectorView<const float, Cuda> a, VectorView<const float, Cuda> b, VectorView<float, Cuda> out) {
        thrust::transform(thrust::cuda::par.on(stream_), a.data(), a.data() + a.size(), b.data(), out.data(),
                          thrust::plus<float>());
        gpu::check_launch("thrust::transform (add)");
    }

    void gelu(VectorView<const float, Cuda> x, VectorView<float, Cuda> out) {
        thrust::transform(thrust::cuda::par.on(stream_), x.data(), x.data() + x.size(), out.data(), gpu::GeluTanh{});
        gpu::check_launch("thrust::transform (gelu)");
    }

    void layer_norm(MatrixView<const float, Cuda> x, VectorView<const float, Cuda> gamma,
                    VectorView<const float, Cuda> beta, float eps, MatrixView<float, Cuda> out) {
        if (x.extent(0) == 0) return;
        gpu::layer_norm_kernel<<<static_cast<unsigned>(x.extent(0)), gpu::row_block_threads, 0, stream_>>>(
            x.data(), gamma.data(), beta.data(), eps, out.data(), x.extent(1));
        gpu::check_launch("layer_norm_kernel");
    }

    void softmax_rows(MatrixView<float, Cuda> x) {
        if (x.extent(0) == 0) return;
        gpu::softmax_rows_kernel<<<static_cast<unsigned>(x.extent(0)), gpu::row_block_threads, 0, stream_>>>(
            x.data(), x.extent(1));
        gpu::check_launch("softmax_rows_kernel");
    }

    void causal_attention(Tensor3View<const float, Cuda> q, Tensor3View<const float, Cuda> k,
                          Tensor3View<const float, Cuda> v, Tensor3View<float, Cuda> out) {
        const std::size_t tq = q.extent(0), tk = k.extent(0), heads = q.extent(1), dim = q.extent(2);
        if (tq == 0 || heads == 0) return;
        scores_.reserve_elements(tq * heads * tk);
        const dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>(tq));
        gpu::causal_attention_kernel<<<grid, gpu::attention_block_threads, 0, stream_>>>(
            q.data(), k.data(), v.data(), out.data(), scores_.data(), tq, tk, heads, dim,
            1.0f / std::sqrt(static_cast<float>(dim)));
        gpu::check_launch("causal_attention_kernel");
    }

    void gather_rows(MatrixView<const float, Cuda> table, std::span<const std::int32_t> ids, MatrixView<float, Cuda> out) {
        const std::size_t c = table.extent(1);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            gpu::check(cudaMemcpyAsync(out.data() + i * c, table.data() + static_cast<std::size_t>(ids[i]) * c,
                                       c * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
                       "cudaMemcpyAsync (gather_rows)");
        }
    }

private:
    cudaStream_t stream_ = nullptr;
    cublasHandle_t blas_ = nullptr;
    gpu::DeviceBuffer<float> scores_;  // attention scores, one row per (query, head); grows, never shrinks
};

}  // namespace tessera
