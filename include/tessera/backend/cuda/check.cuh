#pragma once
// Turning CUDA runtime and cuBLAS status codes into BackendError, naming the failed call.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cublas_v2.h>    // cublasStatus_t
#include <cuda_runtime.h>  // cudaError_t
#include <string>          // std::string

#include <tessera/core/error.hpp>  // BackendError

namespace tessera::gpu {

inline void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        throw BackendError(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")");
    }
}

inline void check(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS) {
        throw BackendError(std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusName(status));
    }
}

// After a kernel launch: reports a bad launch configuration at once, not at the next sync.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace tessera::gpu
