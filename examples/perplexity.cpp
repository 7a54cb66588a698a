// perplexity: mean negative log-likelihood and perplexity of a text under a GPT-2 checkpoint.
//
//   perplexity --model DIR --text-file F      (tokenized with DIR's vocab.json + merges.txt)
//   perplexity --model DIR --tokens-file F    (whitespace-separated token ids)
//   [--stride S] [--threads N] [--dump-logits OUT]
//
// Exit codes: 0 success, 1 bad input (files, model, tokens) or a failed write, 2 bad flags.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"

#include <tessera/models/open_gpt2_on.hpp>
#include <tessera/models/perplexity.hpp>
#include <tessera/tessera.hpp>

namespace {

// Whitespace-separated token ids, each a whole number that fits a TokenId ("4294967299" is
// refused, not wrapped to 3).
std::vector<tessera::TokenId> read_token_ids(const std::string& path) {
    const std::string text = tessera::cli::read_input(path);
    std::vector<tessera::TokenId> ids;
    for (std::size_t i = text.find_first_not_of(" \t\r\n"); i != std::string::npos; i = text.find_first_not_of(" \t\r\n", i)) {
        const std::size_t end = std::min(text.find_first_of(" \t\r\n", i), text.size());
        const std::string_view word(text.data() + i, end - i);
        const auto id = tessera::cli::parse_whole_number<tessera::TokenId>(word, 0, std::numeric_limits<tessera::TokenId>::max());
        if (!id) {
            throw tessera::ArgumentError(path + ": '" + std::string(word) + "' (token " + std::to_string(ids.size()) +
                                         ") is not a token id");
        }
        ids.push_back(*id);
        i = end;
    }
    return ids;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Perplexity of a text under a GPT-2 checkpoint (Hugging Face layout)"};
    std::string model_dir, text_file, tokens_file, dump_logits, backend = "cpu";
    std::size_t stride = 0;
    using tessera::cli::whole_number;
    unsigned threads = tessera::Cpu::default_threads();
    app.add_option("--model", model_dir, "a GPT-2 GGUF file, or a directory with config.json, model.safetensors (+ vocab.json, merges.txt)")
        ->required();
    auto* text_opt = app.add_option("--text-file", text_file, "UTF-8 text, tokenized with the model's tokenizer");
    auto* ids_opt = app.add_option("--tokens-file", tokens_file, "whitespace-separated token ids")->excludes(text_opt);
    app.add_option("--stride", stride, "window step for texts longer than n_ctx (default n_ctx / 2)")
        ->check(whole_number<std::size_t>(1, std::numeric_limits<std::uint32_t>::max()));
    app.add_option("--threads", threads, "CPU threads (cpu backend)")
        ->check(whole_number(1U, std::numeric_limits<unsigned>::max()));
    std::optional<tessera::WeightFormatId> weights;
    tessera::cli::add_weights_option(app, weights);
    app.add_option("--backend", backend, "cpu or cuda (GPT-2 on the GPU: needs a CUDA build and device)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    app.add_option("--dump-logits", dump_logits,
                   "write every position's logits to this file: raw little-endian float32, row-major [T][V] "
                   "(T tokens, V vocabulary entries; row t holds the logits that predict token t+1)");
    try {
        app.parse(argc, argv);
        if (text_opt->count() + ids_opt->count() != 1) throw CLI::RequiredError("--text-file or --tokens-file");
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    try {
        std::optional<tessera::BpeTokenizer> tokenizer;
        std::vector<tessera::TokenId> tokens;
        if (!text_file.empty()) {
            tokenizer = tessera::open_tokenizer(model_dir);
            tokens = tokenizer->encode(tessera::cli::read_input(text_file));
        } else {
            tokens = read_token_ids(tokens_file);
        }
        std::optional<tessera::cli::Output> dump;
        if (!dump_logits.empty()) dump.emplace(dump_logits);
        const auto model = tessera::open_gpt2_on(backend, model_dir, threads, weights);
        if (tokenizer) tokenizer->check_vocab_size(model->vocabulary_size());  // ids must mean the same tokens
        const std::size_t s = stride ? stride : model->context_length() / 2;
        const auto r = tessera::evaluate_perplexity(*model, tokens, s, [&](std::size_t, std::span<const float> logits) {
            if (dump) dump->append({reinterpret_cast<const char*>(logits.data()), logits.size_bytes()});
        });
        if (dump) dump->finish();
        char report[1024];
        std::snprintf(report, sizeof report,
                      "model: %s\ntokens: %zu, predicted: %zu, windows: %zu (n_ctx %zu, stride %zu)\n"
                      "mean negative log-likelihood: %.6f nats\nperplexity: %.4f\n",
                      model->description().c_str(), r.tokens, r.predicted, r.windows, model->context_length(), s,
                      r.mean_nll(), r.perplexity());
        tessera::cli::Output out;
        out.write(report);
        out.finish();
    } catch (const std::exception& e) {
        std::cerr << "perplexity: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
