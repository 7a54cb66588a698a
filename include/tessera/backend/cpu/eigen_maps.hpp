#pragma once
// Eigen views of tessera's host buffers, at zero cost. tessera is row-major throughout, and
// Eigen defaults to column-major, so every matrix map names RowMajor explicitly.
//
// This is the only header that includes Eigen. GCC 12.2's AVX-512 intrinsics self-initialise a
// variable (`__m512 __Y = __Y;`, GCC bug 105593, fixed in 12.3) and -Wmaybe-uninitialized then
// fires inside Eigen's packet code, breaking -Werror builds; it is silenced for Eigen alone.
//
// The kernels built on these maps are [[gnu::noinline]]: one copy per program however many
// call sites, and no caller's small constant size propagated into Eigen's vector loops, where
// GCC 12 then warns about the dead full-width path (a false -Warray-bounds). Those that are not
// templates otherwise take `template <class Deferred = void>`, so that only a program that calls
// them compiles their Eigen expressions (backend/cpu.hpp says why).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <Eigen/Core>  // Eigen::Map, Eigen::Matrix
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstddef>  // std::size_t

namespace tessera::cpu {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<float, Eigen::Dynamic, 1>;
using Array = Eigen::Array<float, Eigen::Dynamic, 1>;

// Row-major matrices with a row stride. Every matrix product in the backend takes exactly these
// types, so Eigen's product machinery is instantiated once per kind of product (A·Bᵀ, A·B, W·x)
// rather than once per call site: the first instantiation costs the compiler ~190 MB, each
// further one ~20 MB (measured with GCC 12 at -O2), in every program that includes tessera.
using ConstMatrixMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
using MatrixMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
using ConstVectorMap = Eigen::Map<const Vector>;
using VectorMap = Eigen::Map<Vector>;
using ConstArrayMap = Eigen::Map<const Array>;
using ArrayMap = Eigen::Map<Array>;

// rows x cols at p, consecutive rows `stride` floats apart.
inline ConstMatrixMap matrix(const float* p, std::size_t rows, std::size_t cols, std::size_t stride) {
    return {p, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols),
            Eigen::OuterStride<>(static_cast<Eigen::Index>(stride))};
}
inline MatrixMap matrix(float* p, std::size_t rows, std::size_t cols, std::size_t stride) {
    return {p, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols),
            Eigen::OuterStride<>(static_cast<Eigen::Index>(stride))};
}

// Columns [begin, end) of C(m, ldc) += bias[begin, end) in every row; nothing when bias is null.
template <class Deferred = void>
inline void add_bias_columns(float* c, const float* bias, std::size_t m, std::size_t ldc, std::size_t begin, std::size_t end) {
    if (bias == nullptr) return;
    matrix(c + begin, m, end - begin, ldc).rowwise() += ConstVectorMap(bias + begin, static_cast<Eigen::Index>(end - begin)).transpose();
}

}  // namespace tessera::cpu
