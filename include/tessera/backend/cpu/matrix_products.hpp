#pragma once
// gemm and gemv on the host: Eigen does the arithmetic on one core, the thread pool splits the
// output columns (weight rows) between cores, so each core streams its own share of W.

#include <tessera/backend/cpu/eigen_maps.hpp>   // ConstMatrixMap, ...
#include <tessera/backend/cpu/matrix_products_avx512.hpp>  // avx512::gemm_columns, gemv_rows
#include <tessera/backend/cpu/products_avx2.hpp>           // avx2::few_rows_columns
#include <tessera/backend/cpu/thread_pool.hpp>  // ThreadPool

namespace tessera::cpu {

// y(N) = W(N,K) · x(K) + bias(N); bias may be null. y must not alias x or W.
template <class Deferred = void>
[[gnu::noinline]] void gemv(ThreadPool& pool, const float* w, const float* x, const float* bias, float* y, std::size_t n,
                 std::size_t k) {
    const ConstVectorMap X(x, static_cast<Eigen::Index>(k));
    // 16 rows per chunk keeps the row-blocked inner kernel on full blocks.
    pool.parallel_for(n, 16, [&](std::size_t begin, std::size_t end) {
        const auto rows = static_cast<Eigen::Index>(end - begin);
        VectorMap Y(y + begin, rows);
#if TESSERA_HAS_AVX512_KERNELS
        if (has_avx512()) {
            avx512::gemv_rows(w, x, y, begin, end, k);
        } else {
            Y.noalias() = matrix(w + begin * k, end - begin, k, k) * X;
        }
#else
        Y.noalias() = matrix(w + begin * k, end - begin, k, k) * X;
#endif
        if (bias != nullptr) Y += ConstVectorMap(bias + begin, rows);
    });
}

// C(M,N) = A(M,K) · W(N,K)ᵀ + bias(N) for few rows M, float or bf16 W, through the tiles that
// read W as stored: AVX-512's where the CPU has it, else AVX2's. False (nothing done) where
// neither takes M rows.
template <class E>
bool few_rows_product(ThreadPool& pool, const float* a, const E* w, const float* bias, float* c, std::size_t m, std::size_t n,
                      std::size_t k) {
#if TESSERA_HAS_AVX512_KERNELS
    const auto run = [&](auto columns) {
        pool.parallel_for(n, 16, [&](std::size_t begin, std::size_t end) {
            columns(a, w, c, m, k, n, begin, end);
            add_bias_columns(c, bias, m, n, begin, end);
        });
        return true;
    };
    if (has_avx512()) {
        if (m <= avx512::few_rows_max<E>) return run([](auto... args) { avx512::few_rows_columns(args...); });
    } else if (has_avx2() && m <= avx2::few_rows_max<E>) {
        return run([](auto... args) { avx2::few_rows_columns(args...); });
    }
#endif
    return false;
}

// C(M,N) = A(M,K) · W(N,K)ᵀ + bias(N); bias may be null. C must not alias A or W.
// With AVX-512 (checked at run time), a packed micro-kernel (matrix_products_avx512.hpp) for
// M >= 8; otherwise, and for fewer rows (where packing W would cost more than it saves), Eigen.
template <class Deferred = void>
[[gnu::noinline]] void gemm(ThreadPool& pool, const float* a, const float* w, const float* bias, float* c, std::size_t m,
                 std::size_t n, std::size_t k) {
    if (m == 1) return gemv(pool, w, a, bias, c, n, k);  // one row: the decode step's product
    if (few_rows_product(pool, a, w, bias, c, m, n, k)) return;
    const ConstMatrixMap A = matrix(a, m, k, k);
    // 64 columns per chunk: a whole number of the micro-kernel's panels.
    pool.parallel_for(n, 64, [&](std::size_t begin, std::size_t end) {
        const auto cols = static_cast<Eigen::Index>(end - begin);
        MatrixMap block = matrix(c + begin, m, end - begin, n);
#if TESSERA_HAS_AVX512_KERNELS
        if (m >= avx512::mr && k > 0 && has_avx512()) {
            avx512::gemm_columns(a, w, c, m, k, n, begin, end);
        } else {
            block.noalias() = A * matrix(w + begin * k, end - begin, k, k).transpose();
        }
#else
        block.noalias() = A * matrix(w + begin * k, end - begin, k, k).transpose();
#endif
        if (bias != nullptr) block.rowwise() += ConstVectorMap(bias + begin, cols).transpose();
    });
}

}  // namespace tessera::cpu
