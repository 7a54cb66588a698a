#pragma once
// GraphRunner: replays a step that only queues work on a stream as a CUDA graph. Decoding one
// token is ~150 small kernels whose launch overhead would otherwise dominate; captured into a
// graph they launch as one. The step's arguments (cache offsets, token ids) change every token,
// so each call captures anew and updates the executable graph in place, which is cheap while
// the topology stays the same; only a change of topology instantiates again.
#ifndef __CUDACC__
#error "tessera/backend/cuda/*.cuh compile only under nvcc: include them from .cu files (see backend/cuda.hpp)."
#endif
#include <cuda_runtime.h>  // cudaGraph_t, cudaGraphExec_t, stream capture
#include <utility>         // std::exchange

#include <tessera/backend/cuda/check.cuh>  // check

namespace tessera::gpu {

class GraphRunner {
public:
    GraphRunner() = default;
    GraphRunner(GraphRunner&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
    GraphRunner& operator=(GraphRunner&&) = delete;
    ~GraphRunner() {
        if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    }

    // Captures what step() queues on `stream` and launches it there. step must not synchronise,
    // allocate or copy to or from pageable host memory (the capture fails with a BackendError).
    template <class Step>
    void run(cudaStream_t stream, Step&& step) {
        check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        try {
            step();
        } catch (...) {
            cudaGraph_t broken = nullptr;
            cudaStreamEndCapture(stream, &broken);  // ends the capture whatever its state
            if (broken != nullptr) cudaGraphDestroy(broken);
            cudaGetLastError();
            throw;
        }
        cudaGraph_t graph = nullptr;
        check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
        const Owned owned{graph};
        if (exec_ != nullptr) {
            cudaGraphExecUpdateResultInfo info{};
            if (cudaGraphExecUpdate(exec_, graph, &info) != cudaSuccess) {
                cudaGetLastError();  // a changed topology: instantiate afresh below
                cudaGraphExecDestroy(std::exchange(exec_, nullptr));
            }
        }
        if (exec_ == nullptr) check(cudaGraphInstantiate(&exec_, graph, 0ULL), "cudaGraphInstantiate");
        check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
    }

private:
    struct Owned {
        cudaGraph_t graph;
        ~Owned() { cudaGraphDestroy(graph); }
    };
    cudaGraphExec_t exec_ = nullptr;
};

}  // namespace tessera::gpu
