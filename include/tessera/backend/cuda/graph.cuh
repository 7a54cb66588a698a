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
    GraphRunner(GraphRunner&& other) noexcept
        : exec_(std::exchange(other.exec_, nullptr)), start_(std::exchange(other.start_, nullptr)),
          stop_(std::exchange(other.stop_, nullptr)), timing_(other.timing_), pending_(other.pending_),
          timed_seconds_(other.timed_seconds_) {}
    GraphRunner& operator=(GraphRunner&&) = delete;
    ~GraphRunner() {
        if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
        if (start_ != nullptr) cudaEventDestroy(start_);
        if (stop_ != nullptr) cudaEventDestroy(stop_);
    }

    // A measurement hook: while on, each launch is timed on the device by two events around
    // it, and take_timed_seconds() sums them. Set against a step's wall time, it says how much
    // of the step the GPU is busy; the rest is the host capturing the step and updating the graph.
    void time_launches(bool on) {
        if (on && start_ == nullptr) {
            check(cudaEventCreate(&start_), "cudaEventCreate");
            check(cudaEventCreate(&stop_), "cudaEventCreate");
        }
        timing_ = on;
    }
    // The sum so far (waits for the last timed launch), and back to zero.
    double take_timed_seconds() {
        collect();
        return std::exchange(timed_seconds_, 0.0);
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
        if (timing_) {
            collect();
            check(cudaEventRecord(start_, stream), "cudaEventRecord");
        }
        check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
        if (timing_) {
            check(cudaEventRecord(stop_, stream), "cudaEventRecord");
            pending_ = true;
        }
    }

private:
    struct Owned {
        cudaGraph_t graph;
        ~Owned() { cudaGraphDestroy(graph); }
    };
    cudaGraphExec_t exec_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;  // time_launches' events, made when first on
    bool timing_ = false, pending_ = false;          // pending_: a timed launch not yet summed
    double timed_seconds_ = 0;

    void collect() {
        if (!pending_) return;
        check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
        timed_seconds_ += ms * 1e-3;
        pending_ = false;
    }
};

}  // namespace tessera::gpu
