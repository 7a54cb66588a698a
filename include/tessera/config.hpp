#pragma once
// Library-wide configuration: version and the host/device annotation.

namespace tessera {

inline constexpr int version_major = 0;
inline constexpr int version_minor = 1;
inline constexpr int version_patch = 0;

}  // namespace tessera

// Functions usable from both host and CUDA device code (storage-type conversions).
// A macro because `__host__ __device__` are attributes that no template can express.
#if defined(__CUDACC__)
#define TESSERA_HOST_DEVICE __host__ __device__
#else
#define TESSERA_HOST_DEVICE
#endif
