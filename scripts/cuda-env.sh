# Sourced by the scripts: points CMake at nvcc when the CUDA toolkit is in its usual place and
# not already on PATH, so the CUDA backend is compiled wherever the toolkit exists.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
