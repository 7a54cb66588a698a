// perplexity: mean negative log-likelihood and perplexity of a text under a GPT-2 checkpoint.
//
//   perplexity --model DIR --text-file F      (tokenized with DIR's vocab.json + merges.txt)
//   perplexity --model DIR --tokens-file F    (whitespace-separated token ids)
//   [--stride S] [--threads N] [--dump-logits OUT]
//
// Exit codes: 0 success, 1 bad input (files, model, tokens), 2 bad flags.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <tessera/models/open_gpt2_on.hpp>
#include <tessera/models/perplexity.hpp>
#include <tessera/tessera.hpp>

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw tessera::ArgumentError("cannot open " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<tessera::TokenId> read_token_ids(const std::string& path) {
    std::istringstream in(read_file(path));
    std::vector<tessera::TokenId> ids;
    for (std::string word; in >> word;) {
        std::size_t used = 0;
        long value = -1;
        try {
            value = std::stol(word, &used);
        } catch (const std::exception&) {
        }
        if (used != word.size() || value < 0) throw tessera::ArgumentError(path + ": '" + word + "' is not a token id");
        ids.push_back(static_cast<tessera::TokenId>(value));
    }
    return ids;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Perplexity of a text under a GPT-2 checkpoint (Hugging Face layout)"};
    std::string model_dir, text_file, tokens_file, dump_logits, backend = "cpu";
    std::size_t stride = 0;
    unsigned threads = tessera::Cpu::default_threads();
    app.add_option("--model", model_dir, "model directory: config.json, model.safetensors (+ vocab.json, merges.txt)")
        ->required();
    auto* text_opt = app.add_option("--text-file", text_file, "UTF-8 text, tokenized with the model's tokenizer");
    auto* ids_opt = app.add_option("--tokens-file", tokens_file, "whitespace-separated token ids")->excludes(text_opt);
    app.add_option("--stride", stride, "window step for texts longer than n_ctx (default n_ctx / 2)");
    app.add_option("--threads", threads, "CPU threads (cpu backend)")->check(CLI::PositiveNumber);
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
            tokenizer = tessera::BpeTokenizer::from_directory(model_dir);
            tokens = tokenizer->encode(read_file(text_file));
        } else {
            tokens = read_token_ids(tokens_file);
        }
        std::ofstream dump;
        if (!dump_logits.empty()) {
            dump.open(dump_logits, std::ios::binary);
            if (!dump) throw tessera::ArgumentError("cannot write " + dump_logits);
        }
        const auto model = tessera::open_gpt2_on(backend, model_dir, threads);
        if (tokenizer) tokenizer->check_vocab_size(model->vocabulary_size());  // ids must mean the same tokens
        const std::size_t s = stride ? stride : model->context_length() / 2;
        const auto r = tessera::evaluate_perplexity(*model, tokens, s, [&](std::size_t, std::span<const float> logits) {
            if (dump) dump.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size_bytes()));
        });
        std::printf("model: %s\ntokens: %zu, predicted: %zu, windows: %zu (n_ctx %zu, stride %zu)\n",
                    model->description().c_str(), r.tokens, r.predicted, r.windows, model->context_length(), s);
        std::printf("mean negative log-likelihood: %.6f nats\nperplexity: %.4f\n", r.mean_nll(), r.perplexity());
        if (dump && !dump.flush()) throw tessera::ArgumentError("writing " + dump_logits + " failed");
    } catch (const std::exception& e) {
        std::cerr << "perplexity: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
