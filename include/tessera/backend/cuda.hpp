#pragma once
// Cuda: the name of the CUDA backend, visible to host-only code. Its definition (thrust device
// buffers, cuBLAS, kernels) is in tessera/backend/cuda/cuda.cuh and compiles only under nvcc:
// thrust types must not cross into host-only translation units, whose ABI differs. So
// Tensor<T, E, Cuda> is instantiated in .cu files only, and host code reaches it through plain
// functions those files export.
namespace tessera {

class Cuda;

}  // namespace tessera
