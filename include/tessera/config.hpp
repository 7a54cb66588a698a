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

// The files' parsers (Gpt2Files, LlamaFiles: what opening a model compiles besides the model)
// are compiled once in tessera::models where a program links it: there TESSERA_COMPILED_MODELS
// is defined, a program's headers only declare them, and src/models/model_files.cpp (which
// defines TESSERA_MODELS_SOURCE) holds their definitions. Header-only code keeps them inline.
// Macros because C++ has no other way to say "inline here, compiled once there" of a function
// that is not a template.
#if !defined(TESSERA_COMPILED_MODELS)
#define TESSERA_PARSER_DEFINITIONS 1
#define TESSERA_PARSER_INLINE inline
#elif defined(TESSERA_MODELS_SOURCE)
#define TESSERA_PARSER_DEFINITIONS 1
#define TESSERA_PARSER_INLINE
#else
#define TESSERA_PARSER_DEFINITIONS 0
#endif
