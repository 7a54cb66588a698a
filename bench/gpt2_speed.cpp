// End-to-end speed of GPT-2 and Llama-family models on the CPU, llama-bench style: prefill of a prompt (pp) and token
// generation after a 1-token prompt (tg), tokens/s, the decode step's bandwidth as a fraction of
// the machine's read bandwidth (measured in the same run), and peak RSS against weights + KV cache.
//
//   build/bench/bench_gpt2 --model build/gpt2_fixtures/gpt2-124m [--model M2.gguf ...] [--threads 2]
//                          [--pp 16,64,512] [--tg 128] [--rounds 4] [--weights f32,bf16,q8_0,q4_0]
//                          [--batch 1,2,4,8,16] [--warm-up yes|no] [--kv-cache f32,bf16,q8_0] [--ctx-size N]
//                          [--tg-prompt N | --depth N]
// --warm-up (default yes): each timed prompt run follows an untimed run of the same prompt, as
// llama-bench's warm-up run does (the bandwidth sample before them evicts the caches; with
// "no" every prompt is timed with the weights cold, which a CPU whose last-level cache holds a
// model's weights, as some hold hundreds of MB, times very differently).
// --batch: aggregate decode tokens/s with that many sequences decoded together (each after a
// 16-token prompt, tg steps), instead of pp and tg.
// --kv-cache: each model once per KV cache precision (default f32). --tg-prompt N: tg after an
// N-token prompt instead of one token, and --batch's prompts (default 16): decoding deeper in
// the context, where the cache's reads count. --ctx-size N: a Llama-family model over N positions
// (its keys and values for the whole context are allocated up front). --depth N: llama-bench's
// -d N: each prompt (pp) and the decoding (tg) after N positions already in the cache (filled
// untimed before every run).
// Each --model (a directory or a .gguf, of any architecture tessera runs) runs as stored, or once per --weights format; all are
// measured in the same interleaved rounds (ratios free of the machine's drift). One directory of
// the 124M shape without --weights also runs the static GPT2<GPT2Small, Cpu>.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/models/load_gpt2.hpp>
#include <tessera/models/load_llama.hpp>
#include <tessera/models/open_model.hpp>
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

// Each comma-separated part of `list` read by `parse` (nothing: refused, naming the flag and
// what it takes, `expected`).
template <class Parse>
auto comma_separated(const std::string& flag, const std::string& list, const char* expected, Parse parse) {
    std::vector<typename std::invoke_result_t<Parse, std::string>::value_type> out;
    for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const auto value = parse(list.substr(at, comma - at));
        if (!value) throw std::invalid_argument(flag + ": " + expected + ", comma-separated, got '" + list + "'");
        out.push_back(*value);
        at = comma + 1;
    }
    return out;
}

// "16,64,512" -> {16, 64, 512}; an empty list or a part that is not a whole number is refused.
std::vector<std::size_t> whole_numbers(const std::string& flag, const std::string& list) {
    return comma_separated(flag, list, "whole numbers", [](const std::string& part) -> std::optional<std::size_t> {
        if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 9) return std::nullopt;
        return std::stoul(part);
    });
}

// "q8_0", or "q8_0 + bf16 KV" for a model with a bf16 KV cache.
std::string label(const tessera::LanguageModel& model) {
    std::string out(model.weight_format());
    if (model.kv_cache() != tessera::KvPrecision::f32) out += " + " + std::string(tessera::kv_precision_name(model.kv_cache())) + " KV";
    return out;
}

struct Measured {
    std::unique_ptr<tessera::LanguageModel> model;
    std::string path;
    tessera::bench::Gpt2Traffic traffic;
    std::vector<double> pp_seconds;  // per prompt length, summed over the rounds
    double tg_seconds = 0;
    std::vector<double> batch_seconds;  // per --batch size, summed over the rounds
};

// Aggregate decode throughput against the number of sequences decoded together, each model in
// the same interleaved rounds; ratios to one sequence (the first size) of the same model.
int run_batches(std::vector<Measured>& models, const std::vector<std::size_t>& batches, std::size_t tg, int rounds,
                std::size_t prompt_tokens) {
    const std::size_t most = *std::max_element(batches.begin(), batches.end());
    std::vector<std::vector<std::unique_ptr<tessera::SequenceState>>> sequences(models.size());
    for (std::size_t i = 0; i < models.size(); ++i) {
        models[i].model->reserve_steps(most, most * prompt_tokens);
        for (std::size_t s = 0; s < most; ++s) sequences[i].push_back(models[i].model->new_sequence(prompt_tokens + tg + 1));
    }
    const auto prompt = tessera::bench::Gpt2Runs<tessera::LanguageModel>{*models[0].model}.prompt_of(prompt_tokens);
    for (int r = -1; r < rounds; ++r) {  // round -1: warm-up
        for (std::size_t i = 0; i < models.size(); ++i) {
            const std::size_t mi = r % 2 ? models.size() - 1 - i : i;
            const tessera::bench::Gpt2Runs<tessera::LanguageModel> runs{*models[mi].model};
            for (std::size_t b = 0; b < batches.size(); ++b) {
                const double s = runs.tg_batched(std::span(sequences[mi]).first(batches[b]), prompt, tg);
                if (r >= 0) models[mi].batch_seconds[b] += s;
            }
        }
    }
    for (const Measured& m : models) {
        std::printf("model %s, KV cache %s (%s): aggregate decode, %zu-token prompts, tg%zu, mean of %d\n",
                    m.model->description().c_str(), std::string(tessera::kv_precision_name(m.model->kv_cache())).c_str(),
                    m.path.c_str(), prompt_tokens, tg, rounds);
        const double one = batches[0] * tg * rounds / m.batch_seconds[0];
        for (std::size_t b = 0; b < batches.size(); ++b) {
            const double rate = batches[b] * tg * rounds / m.batch_seconds[b];
            std::printf("  %2zu sequences: %8.1f tokens/s (%.2fx %zu)\n", batches[b], rate, rate / one, batches[0]);
        }
    }
    return 0;
}

int run(int argc, char** argv) {
    std::vector<std::string> paths;
    unsigned threads = 2;
    std::vector<std::size_t> pps{512};
    std::size_t tg = 128;
    int rounds = 4;
    std::vector<tessera::WeightFormatId> formats;
    std::vector<std::size_t> batches;
    bool warm_up = true;
    std::vector<tessera::KvPrecision> kv_caches;
    std::optional<std::size_t> tg_prompt, context;
    std::size_t depth = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--model") paths.push_back(value);
        else if (flag == "--threads") threads = static_cast<unsigned>(whole_numbers(flag, value).at(0));
        else if (flag == "--pp") pps = whole_numbers(flag, value);
        else if (flag == "--tg") tg = whole_numbers(flag, value).at(0);
        else if (flag == "--batch") batches = whole_numbers(flag, value);
        else if (flag == "--rounds") rounds = std::max(1, static_cast<int>(whole_numbers(flag, value).at(0)));
        else if (flag == "--warm-up" && (value == "yes" || value == "no")) warm_up = value == "yes";
        else if (flag == "--ctx-size") context = whole_numbers(flag, value).at(0);
        else if (flag == "--tg-prompt") tg_prompt = std::max<std::size_t>(1, whole_numbers(flag, value).at(0));
        else if (flag == "--depth") depth = whole_numbers(flag, value).at(0), tg_prompt = std::max<std::size_t>(1, depth);
        else if (flag == "--kv-cache") {
            for (const auto kv : comma_separated(flag, value, "f32, bf16 or q8_0", tessera::kv_precision_named)) kv_caches.push_back(kv);
        } else if (flag == "--weights") {
            for (const auto id : comma_separated(flag, value, "f32, bf16, q8_0 or q4_0", tessera::weight_format_named)) formats.push_back(id);
        } else {
            throw std::invalid_argument("unknown flag " + flag);
        }
    }
    if (paths.empty()) paths.push_back("build/gpt2_fixtures/gpt2-124m");
    tessera::Cpu cpu(threads);
    // Every model (each path: as stored, or once per --weights format) is measured in the same
    // interleaved rounds, so that their ratios are free of the machine's drift. A single
    // directory of the 124M shape without --weights also runs the static GPT2<GPT2Small, Cpu>.
    std::vector<Measured> models;
    const auto bytes_per_weight = [](tessera::WeightFormatId id) {
        return tessera::with_stored_type(id, [&]<class W>() { return double(sizeof(W)) / double(tessera::WeightFormat<W>::block); });
    };
    // The bytes per weight of a GGUF file's blocks' matrices (blk.N.*, two dimensions) as stored.
    const auto block_matrix_bytes_per_weight = [](const std::string& path) {
        const tessera::io::GgufFile file(path);
        double bytes = 0, weights = 0;
        for (const tessera::io::GgufTensorInfo& t : file.tensors()) {
            if (t.name.starts_with("blk.") && t.ne.size() == 2) {
                bytes += static_cast<double>(t.bytes);
                weights += static_cast<double>(t.elements());
            }
        }
        return weights > 0 ? bytes / weights : 4.0;
    };
    const auto kv_bytes_per_value = [&](tessera::KvPrecision kv) {  // the cache's formats are weight formats' types
        return bytes_per_weight(kv == tessera::KvPrecision::f32    ? tessera::WeightFormatId::f32
                                : kv == tessera::KvPrecision::bf16 ? tessera::WeightFormatId::bf16
                                                                   : tessera::WeightFormatId::q8_0);
    };
    if (kv_caches.empty()) kv_caches.push_back(tessera::KvPrecision::f32);
    const auto add = [&](const auto& open, const std::string& path, const auto& shape) {
        for (const tessera::KvPrecision kv : kv_caches) {
            std::unique_ptr<tessera::LanguageModel> model = open();
            model->use_kv_cache(kv);
            // A K-quant file's matrices (KQuantMix) are read at the bytes its blocks' matrices hold.
            const bool mix = model->weight_format() == tessera::WeightFormat<tessera::KQuantMix>::name;
            const auto id = mix ? tessera::WeightFormatId::k_quant_mix : *tessera::weight_format_named(model->weight_format());
            const tessera::bench::Gpt2Traffic traffic(shape, mix ? block_matrix_bytes_per_weight(path) : bytes_per_weight(id),
                                                      bytes_per_weight(tessera::head_weight_format(id, shape.n_embd)),
                                                      kv_bytes_per_value(kv));
            models.push_back({std::move(model), path, traffic, std::vector<double>(pps.size()), 0.0, std::vector<double>(batches.size())});
        }
    };
    for (const std::string& path : paths) {
        if (tessera::model_architecture(path) != "gpt2") {
            tessera::LlamaShape shape = tessera::LlamaFiles(path).shape();
            if (context) shape.n_ctx = std::min(shape.n_ctx, *context);
            if (formats.empty()) add([&] { return tessera::open_llama(cpu, path, nullptr, std::nullopt, context); }, path, shape);
            for (const tessera::WeightFormatId id : formats) add([&] { return tessera::open_llama(cpu, path, nullptr, id, context); }, path, shape);
            continue;
        }
        const tessera::GPT2Shape shape = tessera::Gpt2Files(path).hyperparameters().shape;
        if (formats.empty()) add([&] { return tessera::open_gpt2(cpu, path); }, path, shape);
        for (const tessera::WeightFormatId id : formats) add([&] { return tessera::open_gpt2(cpu, path, nullptr, id); }, path, shape);
        if (formats.empty() && paths.size() == 1 && tessera::GPT2Small::shape() == shape &&
            std::filesystem::is_directory(path)) {
            add([&] { return tessera::open_gpt2<tessera::GPT2Small>(cpu, path); }, path, shape);
        }
    }
    if (!batches.empty()) return run_batches(models, batches, tg, rounds, tg_prompt.value_or(16));
    const tessera::bench::Gpt2Runs<tessera::LanguageModel> first{*models[0].model};
    std::vector<std::vector<tessera::TokenId>> prompts;
    for (const std::size_t pp : pps) prompts.push_back(first.prompt_of(pp));
    for (auto& m : models) {  // warm-up, and the peak memory of a full run
        const tessera::bench::Gpt2Runs<tessera::LanguageModel> runs{*m.model};
        runs.pp(prompts.back(), depth);
        runs.tg(tg, tg_prompt.value_or(1));
    }
    const double rss = peak_rss_bytes();

    // Then the rounds, each: a bandwidth sample, the prompts (each after its warm-up run), a
    // bandwidth sample, tg (after its untimed 1-token prompt), for each model. The machine is
    // shared and its bandwidth drifts, so the ceiling is sampled between the runs it judges (the
    // meter's 1 GiB buffer is created after the RSS reading above).
    tessera::bench::RooflineMeter meter(cpu.pool());
    tessera::bench::RooflineSamples samples;
    for (int r = 0; r < rounds; ++r) {
        for (std::size_t i = 0; i < models.size(); ++i) {
            Measured& m = models[r % 2 ? models.size() - 1 - i : i];  // alternate who goes first
            const tessera::bench::Gpt2Runs<tessera::LanguageModel> runs{*m.model};
            meter.sample(samples);
            for (std::size_t p = 0; p < prompts.size(); ++p) {
                if (warm_up) runs.pp(prompts[p], depth);
                m.pp_seconds[p] += runs.pp(prompts[p], depth);
            }
            meter.sample(samples);
            m.tg_seconds += runs.tg(tg, tg_prompt.value_or(1));
        }
    }
    meter.sample(samples);

    const double bw_mean = samples.mean().read_bytes_per_second;
    std::printf("%u threads; read bandwidth (1 GiB sum, sampled between the runs): mean %.1f GB/s\n", threads,
                bw_mean / 1e9);
    if (depth > 0) std::printf("each prompt and the decoding after %zu positions already in the cache (--depth)\n", depth);
    double all_weight_bytes = 0, kv_cache_bytes = 0;
    for (const Measured& m : models) {
        const double step_bytes = m.traffic.decode_step_bytes(static_cast<double>(tg), static_cast<double>(tg_prompt.value_or(1)));
        all_weight_bytes += m.traffic.resident_weight_bytes();
        kv_cache_bytes += m.traffic.kv_cache_bytes();
        const double tg_rate = tg * rounds / m.tg_seconds, step_rate_bytes = step_bytes * tg_rate;
        std::printf("model %s, KV cache %s (%s)\n", m.model->description().c_str(),
                    std::string(tessera::kv_precision_name(m.model->kv_cache())).c_str(), m.path.c_str());
        for (std::size_t p = 0; p < prompts.size(); ++p) {
            const double mean = m.pp_seconds[p] / rounds;
            std::printf("  pp%zu: %.1f tokens/s (%.4f s, mean of %d)\n", prompts[p].size(), prompts[p].size() / mean, mean, rounds);
        }
        std::printf("  tg%zu: %.1f tokens/s (%.2f ms/token, mean of %d), %.1f MB read per token -> %.1f GB/s\n", tg,
                    tg_rate, 1e3 / tg_rate, rounds, step_bytes / 1e6, step_rate_bytes / 1e9);
        std::printf("  decode roofline fraction: %.2f\n", step_rate_bytes / bw_mean);
    }
    for (std::size_t m = 1; m < models.size(); ++m) {
        std::printf("%s / %s: pp%zu %.2f, tg %.2f (tokens/s ratios)\n", label(*models[m].model).c_str(),
                    label(*models[0].model).c_str(), prompts.back().size(),
                    models[0].pp_seconds.back() / models[m].pp_seconds.back(), models[0].tg_seconds / models[m].tg_seconds);
    }
    std::printf("peak RSS %.1f MB (%zu model(s)); weights %.1f MB + KV cache %.1f MB = %.1f MB in all; ratio %.2f\n",
                rss / 1e6, models.size(), all_weight_bytes / 1e6, kv_cache_bytes / 1e6,
                (all_weight_bytes + kv_cache_bytes) / 1e6, rss / (all_weight_bytes + kv_cache_bytes));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_gpt2: %s\n", e.what());
        return 2;
    }
}
