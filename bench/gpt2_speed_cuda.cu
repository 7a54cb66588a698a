// End-to-end GPT-2 speed on the CUDA backend, llama-bench style: prefill tokens/s at each --pp
// length, decode tokens/s after a 1-token prompt (tg), with CUDA graphs on and off, and the
// decode step's bytes per second as a fraction of the device's read bandwidth, measured in the
// same run by a streaming kernel. Wall-clock timings: every step ends with its logits on the
// host, so nothing is left in flight.
//
//   build/bench/bench_gpt2_cuda --model build/gpt2_fixtures/gpt2-124m [--pp 128,512] [--tg 128] [--device 0]
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <tessera/backend/cuda/cuda.cuh>
#include <tessera/models/load_gpt2.hpp>
#include <tessera/tessera.hpp>

#include "gpt2_runs.hpp"
#include "gpt2_traffic.hpp"

namespace {

// Each thread sums float4s with a grid stride; one write per thread keeps the sum alive.
__global__ void read_kernel(const float4* data, std::size_t n4, float* sink) {
    float acc = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const float4 v = data[i];
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 12345.678f) *sink = acc;  // practically never: the loads cannot be dropped
}

// The device's read bandwidth: best of 10 passes over 2 GiB (far beyond the L2).
double device_read_bandwidth(tessera::Cuda& cuda) {
    const std::size_t n = std::size_t{1} << 29;  // floats
    const auto on = cuda.activate();
    tessera::gpu::DeviceBuffer<float> buffer(n), sink(1);
    int sms = 0;
    tessera::gpu::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, cuda.device()), "cudaDeviceGetAttribute");
    cudaEvent_t start, stop;
    tessera::gpu::check(cudaEventCreate(&start), "cudaEventCreate");
    tessera::gpu::check(cudaEventCreate(&stop), "cudaEventCreate");
    float best_ms = 1e30f;
    for (int pass = 0; pass < 10; ++pass) {
        cudaEventRecord(start, cuda.stream());
        read_kernel<<<static_cast<unsigned>(sms * 8), 512, 0, cuda.stream()>>>(
            reinterpret_cast<const float4*>(buffer.data()), n / 4, sink.data());
        cudaEventRecord(stop, cuda.stream());
        tessera::gpu::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        best_ms = std::min(best_ms, ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return static_cast<double>(n) * sizeof(float) / (best_ms * 1e-3);
}

std::vector<std::size_t> parse_list(const std::string& s) {
    std::vector<std::size_t> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoul(item));
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::string model_dir = "build/gpt2_fixtures/gpt2-124m";
    std::vector<std::size_t> pps{128, 512};
    std::size_t tg = 128;
    int device = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--model") model_dir = value;
        else if (flag == "--pp") pps = parse_list(value);
        else if (flag == "--tg") tg = std::stoul(value);
        else if (flag == "--device") device = std::stoi(value);
        else {
            std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    if (tessera::cuda_device_count() == 0) {
        std::fprintf(stderr, "bench_gpt2_cuda: no CUDA device\n");
        return 1;
    }
    tessera::Cuda cuda(device);
    cudaDeviceProp prop{};
    tessera::gpu::check(cudaGetDeviceProperties(&prop, cuda.device()), "cudaGetDeviceProperties");
    const double bandwidth = device_read_bandwidth(cuda);
    tessera::load_gpt2(cuda, model_dir, [&](auto& model) {
        using M = std::remove_reference_t<decltype(model)>;
        const tessera::bench::Gpt2Runs<M> runs{model};
        const auto run_tg = [&] { return runs.tg(tg); };
        constexpr int rounds = 5;  // best of: the GPU is not shared, so the minimum is the steady state
        const auto best = [&](auto&& run) {
            run();  // warm-up: allocation, cuBLAS heuristics, graph instantiation
            double t = 1e300;
            for (int r = 0; r < rounds; ++r) t = std::min(t, run());
            return t;
        };
        std::printf("model %s on %s (%d SMs), fp32, batch 1\n", model.description().c_str(), prop.name, prop.multiProcessorCount);
        std::printf("device read bandwidth (streaming kernel, best of 10): %.0f GB/s\n", bandwidth / 1e9);
        for (const std::size_t pp : pps) {
            const auto prompt = runs.prompt_of(pp);
            const double t = best([&] { return runs.pp(prompt); });
            std::printf("pp%zu: %.0f tokens/s (%.2f ms, best of %d)\n", prompt.size(), prompt.size() / t, t * 1e3, rounds);
        }
        const double step_bytes = tessera::bench::Gpt2Traffic(model.shape()).decode_step_bytes(static_cast<double>(tg));
        for (const bool graphs : {true, false}) {
            cuda.use_graphs(graphs);
            const double t = best(run_tg);
            const double rate = tg / t;
            std::printf("tg%zu %s: %.0f tokens/s (%.3f ms/token, best of %d), %.1f MB read per token -> %.0f GB/s = %.2f of the device's read bandwidth\n",
                        tg, graphs ? "with CUDA graphs   " : "kernel by kernel   ", rate, 1e3 / rate, rounds, step_bytes / 1e6,
                        step_bytes * rate / 1e9, step_bytes * rate / bandwidth);
        }
        cuda.use_graphs(true);
        // Host-bound or device-bound: the GPU's busy time in the graph launches of one run.
        cuda.time_graph_launches(true);
        const double wall = run_tg();
        const double busy = cuda.take_graph_launch_seconds();
        cuda.time_graph_launches(false);
        std::printf("tg%zu with CUDA graphs, one run: the device busy %.3f of %.3f ms per token (%.2f); over that time %.0f GB/s = %.2f of the read bandwidth\n",
                    tg, 1e3 * busy / tg, 1e3 * wall / tg, busy / wall, step_bytes * tg / busy / 1e9, step_bytes * tg / busy / bandwidth);
        const double t = best([&] { return runs.tg_argmax(tg); });
        std::printf("tg%zu greedy, argmax on the device (one id copied back per token): %.0f tokens/s (%.3f ms/token)\n", tg,
                    tg / t, 1e3 * t / tg);
    });
    return 0;
}
