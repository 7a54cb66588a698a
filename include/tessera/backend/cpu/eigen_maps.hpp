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
// GCC 12 then warns about the dead full-width path (a false -Warray-bounds).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <Eigen/Core>  // Eigen::Map, Eigen::Matrix
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace tessera::cpu {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<float, Eigen::Dynamic, 1>;
using Array = Eigen::Array<float, Eigen::Dynamic, 1>;

using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstVectorMap = Eigen::Map<const Vector>;
using VectorMap = Eigen::Map<Vector>;
using ConstArrayMap = Eigen::Map<const Array>;
using ArrayMap = Eigen::Map<Array>;

}  // namespace tessera::cpu
