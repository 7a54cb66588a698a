// End-to-end GPT-2 speed on the CPU, llama-bench style: prefill of a prompt (pp) and token
// generation after a 1-token prompt (tg), tokens/s, the decode step's bandwidth as a fraction of
// the machine's read bandwidth (measured in the same run), and peak RSS against weights + KV cache.
//
//   build/bench/bench_gpt2 --model build/gpt2_fixtures/gpt2-124m [--threads 2] [--pp 512] [--tg 128]
//                          [--weights f32,bf16,q8_0,q4_0]
// With --weights, one run-time-shaped model per format, measured in the same interleaved
// rounds (ratios between formats free of the machine's drift); without, f32 and (for the 124M
// shape) the static GPT2<GPT2Small, Cpu> against the run-time-shaped model.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
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
    std::vector<tessera::WeightFormatId> formats;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--model") model_dir = value;
        else if (flag == "--threads") threads = static_cast<unsigned>(std::stoul(value));
        else if (flag == "--pp") pp = std::stoul(value);
        else if (flag == "--tg") tg = std::stoul(value);
        else if (flag == "--weights") {
            for (std::size_t at = 0; at <= value.size();) {
                const std::size_t comma = std::min(value.find(',', at), value.size());
                const auto id = tessera::weight_format_named(value.substr(at, comma - at));
                if (!id) {
                    std::fprintf(stderr, "--weights: f32, bf16, q8_0 or q4_0, comma-separated\n");
                    return 2;
                }
                formats.push_back(*id);
                at = comma + 1;
            }
        } else {
            std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    tessera::Cpu cpu(threads);
    // The run-time-shaped model, and for the 124M shape also GPT2<GPT2Small, Cpu>, measured in
    // the same rounds, interleaved, so that their ratio is free of the machine's drift.
    const tessera::GPT2Shape shape = tessera::HfGpt2Config::read(std::string(model_dir) + "/config.json").shape;
    std::vector<std::unique_ptr<tessera::LanguageModel>> models;
    std::vector<double> matrix_bytes, head_bytes;  // per weight of the matrices and the head, for each model's traffic
    const auto bytes_per_weight = [](tessera::WeightFormatId id) {
        return tessera::with_weight_type(id, [&]<class W>() { return double(sizeof(W)) / double(tessera::WeightFormat<W>::block); });
    };
    if (formats.empty()) {
        models.push_back(tessera::open_gpt2(cpu, model_dir));
        matrix_bytes.push_back(4.0);
        head_bytes.push_back(4.0);
        if (tessera::GPT2Small::shape() == shape) {
            models.push_back(tessera::open_gpt2<tessera::GPT2Small>(cpu, model_dir));
            matrix_bytes.push_back(4.0);
            head_bytes.push_back(4.0);
        }
    }
    for (const tessera::WeightFormatId id : formats) {
        models.push_back(tessera::open_gpt2(cpu, model_dir, nullptr, id));
        matrix_bytes.push_back(bytes_per_weight(id));
        head_bytes.push_back(bytes_per_weight(tessera::head_weight_format(id)));
    }
    struct Timing {
        double pp = 0, tg = 0;
    };
    std::vector<Timing> totals(models.size());
    const tessera::bench::Gpt2Runs<tessera::LanguageModel> first{*models[0]};
    const auto prompt = first.prompt_of(pp);
    for (auto& m : models) {  // warm-up, and the peak memory of a full run
        const tessera::bench::Gpt2Runs<tessera::LanguageModel> runs{*m};
        runs.pp(prompt);
        runs.tg(tg);
    }
    const double rss = peak_rss_bytes();

    // Then 4 rounds, each: a bandwidth sample, pp, a bandwidth sample, tg, for each model. The
    // machine is shared and its bandwidth drifts, so the ceiling is sampled between the runs
    // it judges (the meter's 1 GiB buffer is created after the RSS reading above).
    tessera::bench::RooflineMeter meter(cpu.pool());
    tessera::bench::RooflineSamples samples;
    constexpr int rounds = 4;
    for (int r = 0; r < rounds; ++r) {
        for (std::size_t i = 0; i < models.size(); ++i) {
            const std::size_t m = r % 2 ? models.size() - 1 - i : i;  // alternate who goes first
            const tessera::bench::Gpt2Runs<tessera::LanguageModel> runs{*models[m]};
            meter.sample(samples);
            totals[m].pp += runs.pp(prompt);
            meter.sample(samples);
            totals[m].tg += runs.tg(tg);
        }
    }
    meter.sample(samples);

    const double bw_mean = samples.mean().read_bytes_per_second;
    std::printf("%u threads; read bandwidth (1 GiB sum, sampled between the runs): mean %.1f GB/s\n", threads,
                bw_mean / 1e9);
    double all_weight_bytes = 0, kv_cache_bytes = 0;
    for (std::size_t m = 0; m < models.size(); ++m) {
        const tessera::bench::Gpt2Traffic traffic(shape, matrix_bytes[m], head_bytes[m]);
        const double step_bytes = traffic.decode_step_bytes(static_cast<double>(tg));
        all_weight_bytes += traffic.resident_weight_bytes();
        kv_cache_bytes += traffic.kv_cache_bytes();
        const double pp_mean = totals[m].pp / rounds, tg_mean = totals[m].tg / rounds;
        const double tg_rate = tg / tg_mean, step_rate_bytes = step_bytes * tg_rate;
        std::printf("model %s\n", models[m]->description().c_str());
        std::printf("  pp%zu: %.1f tokens/s (%.3f s, mean of 4)\n", prompt.size(), prompt.size() / pp_mean, pp_mean);
        std::printf("  tg%zu: %.1f tokens/s (%.2f ms/token, mean of 4), %.1f MB read per token -> %.1f GB/s\n", tg,
                    tg_rate, 1e3 / tg_rate, step_bytes / 1e6, step_rate_bytes / 1e9);
        std::printf("  decode roofline fraction: %.2f\n", step_rate_bytes / bw_mean);
    }
    if (formats.empty() && models.size() == 2) {
        std::printf("run-time shape / static GPT2Small: pp %.3f, tg %.3f (tokens/s ratios)\n",
                    totals[1].pp / totals[0].pp, totals[1].tg / totals[0].tg);
    }
    for (std::size_t m = 1; m < formats.size(); ++m) {
        std::printf("%s / %s: pp %.2f, tg %.2f (tokens/s ratios)\n", std::string(tessera::weight_format_name(formats[m])).c_str(),
                    std::string(tessera::weight_format_name(formats[0])).c_str(), totals[0].pp / totals[m].pp,
                    totals[0].tg / totals[m].tg);
    }
    std::printf("peak RSS %.1f MB (%zu model(s)); weights %.1f MB + KV cache %.1f MB = %.1f MB in all; ratio %.2f\n",
                rss / 1e6, models.size(), all_weight_bytes / 1e6, kv_cache_bytes / 1e6,
                (all_weight_bytes + kv_cache_bytes) / 1e6, rss / (all_weight_bytes + kv_cache_bytes));
}
