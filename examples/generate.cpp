// generate: GPT-2 text generation from the command line.
//
//   generate --model models/gpt2 -p "Once upon a time" --max-new-tokens 64 --temperature 0.8 --top-p 0.9
//   echo "prompt" | generate --model DIR --json
//
// Streams the text to stdout (never splitting a UTF-8 character or showing part of a stop
// string), prints a timing summary to stderr. Exit codes: 0 success, 1 bad input (model
// directory, prompt, a failed write), 2 bad flags or flag values.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "command_line.hpp"

#include <tessera/generation/generator.hpp>
#include <tessera/models/open_gpt2_on.hpp>
#include <tessera/sampling/sampler.hpp>
#include <tessera/tessera.hpp>

namespace {

// A GGUF file holds everything; a directory needs the four Hugging Face files.
void require_model_files(const std::filesystem::path& dir) {
    if (tessera::model_path_kind(dir) == tessera::ModelPathKind::gguf_file) return;
    for (const char* file : tessera::hf_model_files) {
        if (!std::filesystem::exists(dir / file)) {
            throw tessera::ArgumentError("model directory " + dir.string() + " has no " + file);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Generate text with a GPT-2 checkpoint (Hugging Face layout)"};
    std::string model_dir = "models/gpt2", backend = "cpu";
    std::optional<std::string> prompt;
    tessera::SamplingParams sampling;
    tessera::GenerationOptions generation;
    generation.max_new_tokens = 64;
    unsigned threads = tessera::Cpu::default_threads();
    int device = 0;
    bool no_stream = false, json = false, verbose = false, allow_special = false;
    std::optional<std::uint64_t> seed;
    using tessera::cli::Bound, tessera::cli::real_number, tessera::cli::whole_number;
    constexpr long most = 1'000'000'000;  // counts beyond this are typing errors, not requests
    app.add_option("--model", model_dir, "a GPT-2 GGUF file, or a directory with config.json, model.safetensors, vocab.json, merges.txt");
    app.add_option("-p,--prompt", prompt, "the prompt (otherwise standard input)");
    app.add_option("--max-new-tokens,-n", generation.max_new_tokens, "tokens to generate at most")
        ->check(whole_number<std::size_t>(0, most));
    app.add_option("--temperature", sampling.temperature, "0 = greedy")->check(real_number<float>(0, Bound::closed));
    app.add_option("--top-k", sampling.top_k, "keep the k most likely tokens (0 = off)")->check(whole_number(0L, most));
    app.add_option("--top-p", sampling.top_p, "nucleus: smallest set with probability >= p (1 = off)")
        ->check(real_number(0, Bound::open, 1, Bound::closed));
    app.add_option("--min-p", sampling.min_p, "keep tokens with p >= min_p * p_max (0 = off)")
        ->check(real_number(0, Bound::closed, 1, Bound::closed));
    app.add_option("--repetition-penalty", sampling.repetition_penalty, "CTRL rule, > 0 (1 = off)")
        ->check(real_number<float>(0, Bound::open));
    app.add_option("--repeat-last-n", sampling.repeat_last_n, "tokens the penalties look back over")
        ->check(whole_number<std::size_t>(0, most));
    app.add_option("--presence-penalty", sampling.presence_penalty, "OpenAI rule, [-2, 2]")
        ->check(real_number(-2, Bound::closed, 2, Bound::closed));
    app.add_option("--frequency-penalty", sampling.frequency_penalty, "OpenAI rule, [-2, 2]")
        ->check(real_number(-2, Bound::closed, 2, Bound::closed));
    app.add_option("--no-repeat-ngram", sampling.no_repeat_ngram, "ban repeating n-grams of this size (0 = off)")
        ->check(whole_number(0L, most));
    app.add_option("--seed", seed, "random seed (default: random, reported)")
        ->check(whole_number<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max()));
    app.add_option("--stop", generation.stop, "stop string (repeatable, valid UTF-8); not included in the output");
    app.add_flag("--ignore-eos", generation.ignore_eos, "keep generating after the end-of-text token");
    app.add_flag("--context-shift", generation.context_shift, "when the context is full, drop its older half and go on");
    app.add_flag("--truncate", generation.truncate_prompt, "drop the oldest prompt tokens if the prompt does not fit");
    app.add_flag("--allow-special", allow_special, "read <|endoftext|> in the prompt as the special token");
    app.add_option("--threads", threads, "CPU threads (cpu backend)")
        ->check(whole_number(1U, std::numeric_limits<unsigned>::max()));
    std::optional<tessera::WeightFormatId> weights;
    tessera::cli::add_weights_option(app, weights);
    tessera::KvPrecision kv_cache = tessera::KvPrecision::f32;
    tessera::cli::add_kv_cache_option(app, kv_cache);
    app.add_option("--backend", backend, "cpu or cuda (GPT-2 on the GPU: needs a CUDA build and device)")->check(CLI::IsMember({"cpu", "cuda"}));
    app.add_option("--device", device, "CUDA device index (cuda backend)")->check(CLI::NonNegativeNumber);
    app.add_flag("--no-stream", no_stream, "print the text once at the end");
    app.add_flag("--json", json, "print one JSON object with the whole result (implies --no-stream)");
    app.add_flag("--verbose", verbose, "print the model and the sampling settings to stderr");
    try {
        app.parse(argc, argv);
        sampling.seed = seed;
        (void)tessera::make_sampler(sampling);  // validates every sampling parameter
        (void)tessera::StopStrings(generation.stop);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    } catch (const tessera::ArgumentError& e) {
        std::cerr << "generate: " << e.what() << "\nRun with --help for more information.\n";
        return 2;
    }
    generation.prompt_special_tokens = allow_special ? tessera::SpecialTokens::allowed : tessera::SpecialTokens::as_text;
    try {
        require_model_files(model_dir);
        const std::string text = prompt ? *prompt : tessera::cli::read_input("-");
        const auto tokenizer = tessera::open_tokenizer(model_dir);
        auto sampler = tessera::make_sampler(sampling);
        const auto model = tessera::open_gpt2_on(backend, model_dir, threads, weights, device);
        model->use_kv_cache(kv_cache);
        if (verbose) {
            std::fprintf(stderr, "model: %s%s; seed %llu\n", model->description().c_str(),
                         backend == "cpu" ? (", " + std::to_string(threads) + " threads").c_str() : "",
                         static_cast<unsigned long long>(sampler.rng().seed()));
        }
        tessera::Generator generator(*model, tokenizer, sampler);
        const bool stream = !no_stream && !json;
        tessera::cli::Output out;  // a failed write (full disk, reader gone) stops generating
        const auto c = generator.generate(text, generation, [&](std::string_view piece) {
            if (stream) out.write(piece);
        });
        if (json) {
            nlohmann::json j = {{"text", c.text},
                                {"tokens", c.tokens},
                                {"stop_reason", tessera::to_string(c.stop_reason)},
                                {"prompt_tokens", c.prompt_tokens},
                                {"truncated_prompt_tokens", c.truncated_prompt_tokens},
                                {"generated_tokens", c.tokens.size()},
                                {"context_shifts", c.context_shifts},
                                {"prefill_seconds", c.prefill_seconds},
                                {"decode_seconds", c.decode_seconds},
                                {"prefill_tokens_per_second", c.prefill_tokens_per_second()},
                                {"decode_tokens_per_second", c.decode_tokens_per_second()},
                                {"sampling_seconds", c.sampling_seconds},
                                {"total_seconds", c.total_seconds},
                                {"end_to_end_tokens_per_second", c.end_to_end_tokens_per_second()},
                                {"seed", c.seed},
                                {"backend", backend},
                                {"weights", std::string(model->weight_format())},
                                {"kv_cache", std::string(tessera::kv_precision_name(model->kv_cache()))}};
            out.write(j.dump() + '\n');
        } else {
            out.write(stream ? "\n" : c.text + '\n');
        }
        out.finish();
        std::fprintf(stderr,
                     "prompt: %zu tokens, %.1f tokens/s%s | generated: %zu tokens, %.1f tokens/s end to end "
                     "(model %.1f tokens/s, sampling %.2f ms/token) | stop: %s | seed: %llu\n",
                     c.prompt_tokens, c.prefill_tokens_per_second(),
                     c.truncated_prompt_tokens ? (" (" + std::to_string(c.truncated_prompt_tokens) + " truncated)").c_str() : "",
                     c.tokens.size(), c.end_to_end_tokens_per_second(), c.decode_tokens_per_second(),
                     c.tokens.empty() ? 0.0 : 1e3 * c.sampling_seconds / static_cast<double>(c.tokens.size()),
                     tessera::to_string(c.stop_reason),
                     static_cast<unsigned long long>(c.seed));
    } catch (const std::exception& e) {
        std::cerr << "generate: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
