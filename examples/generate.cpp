// generate: text generation from the command line, with any model tessera runs (GPT-2, and the
// Llama family: llama, qwen2, qwen3), from a GGUF file or a Hugging Face directory.
//
//   generate --model models/gpt2 -p "Once upon a time" --max-new-tokens 64 --temperature 0.8 --top-p 0.9
//   echo "prompt" | generate --model DIR --json
//   generate --model smollm2.gguf --prompt-ids 1,2,3 -n 16   (token ids in and out, no tokenizer)
//
// Streams the text to stdout (never splitting a UTF-8 character or showing part of a stop
// string), prints a timing summary to stderr. Exit codes: 0 success, 1 bad input (model
// directory, prompt, a failed write), 2 bad flags or flag values.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
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
#include <tessera/models/open_model.hpp>
#include <tessera/sampling/sampler.hpp>
#include <tessera/tessera.hpp>

namespace {

// A GGUF file holds everything; a directory needs config.json, model.safetensors (or the index
// of its shards) and, for text, a tokenizer: tokenizer.model, tokenizer.json, or vocab.json and
// merges.txt.
void require_model_files(const std::filesystem::path& dir, bool text) {
    if (tessera::model_path_kind(dir) == tessera::ModelPathKind::gguf_file) return;
    const auto has = [&](const char* file) { return std::filesystem::exists(dir / file); };
    const auto require = [&](const char* file) {
        if (!has(file)) throw tessera::ArgumentError("model directory " + dir.string() + " has no " + file);
    };
    require("config.json");
    if (!has(tessera::io::safetensors_index)) require(tessera::io::safetensors_single);
    if (!text || has("tokenizer.model") || has("tokenizer.json")) return;
    require("vocab.json");
    require("merges.txt");
}

// The KV cache's size: per position and for the whole context.
void print_kv_cache(const tessera::LanguageModel& model) {
    const std::size_t bytes = model.kv_bytes(), context = model.context_length();
    std::fprintf(stderr, "kv cache: %s, %zu bytes per token, %.1f MiB for %zu positions\n",
                 std::string(tessera::kv_precision_name(model.kv_cache())).c_str(), context ? bytes / context : 0,
                 static_cast<double>(bytes) / (1 << 20), context);
}

// "1,2,3" -> ids; anything else is an ArgumentError naming the flag.
std::vector<tessera::TokenId> parse_ids(const std::string& list) {
    std::vector<tessera::TokenId> ids;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, comma - at);
        std::size_t used = 0;
        long value = -1;
        try {
            value = std::stol(item, &used);
        } catch (const std::exception&) {
        }
        if (item.empty() || used != item.size() || value < 0 || value > std::numeric_limits<tessera::TokenId>::max()) {
            throw tessera::ArgumentError("--prompt-ids: '" + item + "' is not a token id (a comma-separated list of non-negative integers)");
        }
        ids.push_back(static_cast<tessera::TokenId>(value));
        at = comma + 1;
    }
    return ids;
}

// Generation on token ids alone (a model whose tokenizer tessera cannot read yet): the prompt's
// ids, then sampled ids until max_new_tokens or a full context; no text, so no stop strings or
// end-of-text. Prints the generated ids as a JSON array (or, with --json, an object with timing).
template <class Sampler>
int generate_ids(tessera::LanguageModel& model, const std::vector<tessera::TokenId>& prompt, Sampler& sampler,
                 std::size_t max_new_tokens, bool json) {
    using clock = std::chrono::steady_clock;
    for (const tessera::TokenId id : prompt) {
        if (static_cast<std::size_t>(id) >= model.vocabulary_size()) {
            throw tessera::ArgumentError("--prompt-ids: token " + std::to_string(id) + " is outside the model's vocabulary of " +
                                         std::to_string(model.vocabulary_size()));
        }
    }
    if (prompt.empty()) throw tessera::ArgumentError("--prompt-ids: no tokens");
    if (prompt.size() > model.context_length()) {
        throw tessera::ArgumentError("--prompt-ids: " + std::to_string(prompt.size()) + " tokens exceed the context of " +
                                     std::to_string(model.context_length()));
    }
    std::vector<tessera::TokenId> history = prompt, generated;
    std::vector<float> logits;
    const auto t0 = clock::now();
    const auto first = model.prefill(prompt);
    logits.assign(first.begin(), first.end());
    const double prefill_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    const auto t1 = clock::now();
    while (generated.size() < max_new_tokens) {
        const tessera::TokenId next = sampler.sample(logits, history);
        generated.push_back(next);
        history.push_back(next);
        if (generated.size() == max_new_tokens || model.position() == model.context_length()) break;
        const auto step = model.decode(next);
        logits.assign(step.begin(), step.end());
    }
    const double decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
    nlohmann::json out = generated;
    if (json) {
        out = {{"tokens", generated},
               {"prompt_tokens", prompt.size()},
               {"prefill_seconds", prefill_seconds},
               {"decode_seconds", decode_seconds},
               {"seed", sampler.rng().seed()},
               {"weights", std::string(model.weight_format())}};
    }
    tessera::cli::Output output;
    output.write(out.dump() + '\n');
    output.finish();
    std::fprintf(stderr, "prompt: %zu tokens, %.1f tokens/s | generated: %zu tokens, %.1f tokens/s\n", prompt.size(),
                 static_cast<double>(prompt.size()) / prefill_seconds, generated.size(),
                 generated.size() > 1 ? static_cast<double>(generated.size() - 1) / decode_seconds : 0.0);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Generate text with a GPT-2 or Llama-family model (a GGUF file or a Hugging Face directory)"};
    std::string model_dir = "models/gpt2", backend = "cpu";
    std::optional<std::string> prompt, prompt_ids;
    tessera::SamplingParams sampling;
    tessera::GenerationOptions generation;
    generation.max_new_tokens = 64;
    unsigned threads = tessera::Cpu::default_threads();
    int device = 0;
    bool no_stream = false, json = false, verbose = false, allow_special = false;
    std::optional<std::size_t> context;
    using tessera::cli::Bound, tessera::cli::real_number, tessera::cli::whole_number;
    constexpr long most = 1'000'000'000;  // counts beyond this are typing errors, not requests
    app.add_option("--model", model_dir, "a GGUF file, or a directory with config.json, model.safetensors, vocab.json, merges.txt");
    auto* text_prompt = app.add_option("-p,--prompt", prompt, "the prompt (otherwise standard input)");
    app.add_option("--prompt-ids", prompt_ids, "the prompt as token ids (1,2,3): generates ids, printed as JSON, without a tokenizer")
        ->excludes(text_prompt);
    app.add_option("--max-new-tokens,-n", generation.max_new_tokens, "tokens to generate at most")
        ->check(whole_number<std::size_t>(0, most));
    tessera::cli::add_sampling_options(app, sampling);
    app.add_option("--stop", generation.stop, "stop string (repeatable, valid UTF-8); not included in the output");
    app.add_flag("--ignore-eos", generation.ignore_eos, "keep generating after the end-of-text token");
    app.add_flag("--context-shift", generation.context_shift, "when the context is full, drop its older half and go on");
    app.add_flag("--truncate", generation.truncate_prompt, "drop the oldest prompt tokens if the prompt does not fit");
    app.add_flag("--allow-special", allow_special, "read control tokens in the prompt (<|endoftext|>, <|im_end|>) as their ids");
    app.add_option("--ctx-size,-c", context, "positions to keep keys and values for (default: the model's context)")
        ->check(whole_number<std::size_t>(1, most));
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
        require_model_files(model_dir, !prompt_ids);
        if (prompt_ids) {
            const auto ids = parse_ids(*prompt_ids);
            auto sampler = tessera::make_sampler(sampling);
            const auto model = tessera::open_model_on(backend, model_dir, threads, weights, device, context);
            model->use_kv_cache(kv_cache);
            if (verbose) {
                std::fprintf(stderr, "model: %s; seed %llu\n", model->description().c_str(),
                             static_cast<unsigned long long>(sampler.rng().seed()));
                print_kv_cache(*model);
            }
            return generate_ids(*model, ids, sampler, generation.max_new_tokens, json);
        }
        const std::string text = prompt ? *prompt : tessera::cli::read_input("-");
        const auto tokenizer = [&] {
            try {
                return tessera::open_any_tokenizer(model_dir);
            } catch (const tessera::Error& e) {
                // A Llama-family model with a GPT-2-style tokenizer runs on text; with another, on ids.
                if (const std::string arch = tessera::model_architecture(model_dir); arch != "gpt2") {
                    throw tessera::ArgumentError(std::string(e.what()) + "\n(" + model_dir + " holds a " + arch +
                                                 " model whose tokenizer tessera does not read yet: give the prompt as token ids, --prompt-ids)");
                }
                throw;
            }
        }();
        auto sampler = tessera::make_sampler(sampling);
        const auto model = tessera::open_model_on(backend, model_dir, threads, weights, device, context);
        model->use_kv_cache(kv_cache);
        if (verbose) {
            std::fprintf(stderr, "model: %s%s; seed %llu\n", model->description().c_str(),
                         backend == "cpu" ? (", " + std::to_string(threads) + " threads").c_str() : "",
                         static_cast<unsigned long long>(sampler.rng().seed()));
            print_kv_cache(*model);
        }
        tessera::Generator generator(*model, *tokenizer, sampler);
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
