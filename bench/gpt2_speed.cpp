// End-to-end GPT-2 speed on the CPU, llama-bench style: prefill of a prompt (pp) and token
// generation after a 1-token prompt (tg), tokens/s, the decode step's bandwidth as a fraction of
// the machine's read bandwidth (measured in the same run), and peak RSS against weights + KV cache.
//
//   build/bench/bench_gpt2 --model build/gpt2_fixtures/gpt2-124m [--threads 2] [--pp 512] [--tg 128]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <tessera/models/load_gpt2.hpp>
#include <tessera/tessera.hpp>

#include "gpt2_runs.hpp"
#include "gpt2_traffic.hpp"
#include "roofline.hpp"

namespace {

// Peak resident set size of this process so far, in bytes (Linux: VmHWM).
double peak_rss_bytes() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string model_dir = "build/gpt2_fixtures/gpt2-124m";
    unsigned threads = 2;
    std::size_t pp = 512, tg = 128;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--model") model_dir = value;
        else if (flag == "--threads") threads = static_cast<unsigned>(std::stoul(value));
        else if (flag == "--pp") pp = std::stoul(value);
        else if (flag == "--tg") tg = std::stoul(value);
        else {
            std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    tessera::Cpu cpu(threads);
    tessera::load_gpt2(cpu, model_dir, [&](auto& model) {
        using M = std::remove_reference_t<decltype(model)>;
        const tessera::bench::Gpt2Runs<M> runs{model};
        const auto prompt = runs.prompt_of(pp);
        const auto run_pp = [&] { return runs.pp(prompt); };
        const auto run_tg = [&] { return runs.tg(tg); };
        run_pp();  // warm-up, and the peak memory of a full run
        run_tg();
        const double rss = peak_rss_bytes();

        // Then 3 rounds, each: a bandwidth sample, pp, a bandwidth sample, tg. The machine is
        // shared and its bandwidth drifts, so the ceiling is sampled between the runs it judges
        // (the meter's 1 GiB buffer is created after the RSS reading above).
        tessera::bench::RooflineMeter meter(cpu.pool());
        tessera::bench::RooflineSamples samples;
        double pp_total = 0, tg_total = 0;
        constexpr int rounds = 3;
        for (int r = 0; r < rounds; ++r) {
            meter.sample(samples);
            pp_total += run_pp();
            meter.sample(samples);
            tg_total += run_tg();
        }
        meter.sample(samples);
        const double pp_best = pp_total / rounds, tg_best = tg_total / rounds;  // means

        using Traffic = tessera::bench::Gpt2Traffic<M>;
        const double step_bytes = Traffic::decode_step_bytes(static_cast<double>(tg));
        const double all_weight_bytes = Traffic::resident_weight_bytes();
        const double kv_cache_bytes = Traffic::kv_cache_bytes();

        const double bw_mean = samples.mean().read_bytes_per_second;

        const double tg_rate = tg / tg_best, step_rate_bytes = step_bytes * tg_rate;
        std::printf("model %s, %u threads\n", M::config::name, threads);
        std::printf("pp%zu: %.1f tokens/s (%.3f s, mean of 3)\n", prompt.size(), prompt.size() / pp_best, pp_best);
        std::printf("tg%zu: %.1f tokens/s (%.2f ms/token, mean of 3), %.1f MB read per token -> %.1f GB/s\n", tg, tg_rate,
                    1e3 / tg_rate, step_bytes / 1e6, step_rate_bytes / 1e9);
        std::printf("read bandwidth (1 GiB sum, sampled between the runs): mean %.1f GB/s\n", bw_mean / 1e9);
        std::printf("decode roofline fraction: %.2f\n", step_rate_bytes / bw_mean);
        std::printf("peak RSS %.1f MB; weights %.1f MB + KV cache %.1f MB = %.1f MB; ratio %.2f\n", rss / 1e6,
                    all_weight_bytes / 1e6, kv_cache_bytes / 1e6, (all_weight_bytes + kv_cache_bytes) / 1e6,
                    rss / (all_weight_bytes + kv_cache_bytes));
    });
}
