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
