# Flags for tessera's own executables (tests, examples, benchmarks), never for consumers:
# link `tessera_build_flags` next to tessera::tessera.
add_library(tessera_build_flags INTERFACE)

if(TESSERA_WERROR)
  set(_tessera_werror -Werror)
endif()
target_compile_options(tessera_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic ${_tessera_werror}>
  # nvcc: the same warnings on its host pass.
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra $<$<BOOL:${TESSERA_WERROR}>:-Xcompiler=-Werror>>)

if(TESSERA_NATIVE)
  target_compile_options(tessera_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-march=native>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-march=native>)
endif()

# nvcc's C++ dialect and warnings for tessera's .cu files. CMake 3.25 does not know nvcc 13's
# C++20 flag, so it is given by hand. nvcc's own warnings are errors too, less two that Eigen's
# headers raise in any .cu file: 20012 ("__host__ annotation is ignored on a ... defaulted
# function", DenseStorage) and the constexpr calls that Eigen documents as needing
# --expt-relaxed-constexpr.
add_library(tessera_cuda_std INTERFACE)
target_compile_options(tessera_cuda_std INTERFACE
  $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr --diag-suppress=20012
                             $<$<BOOL:${TESSERA_WERROR}>:--Werror=all-warnings>>)
