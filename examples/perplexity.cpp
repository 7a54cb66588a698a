// perplexity: mean negative log-likelihood and perplexity of a text under a GPT-2 checkpoint.
//
//   perplexity --model DIR --text-file F      (tokenized with DIR's vocab.json + merges.txt)
//   perplexity --model DIR --tokens-file F    (whitespace-separated token ids)
//   [--stride S] [--threads N] [--dump-logits OUT] [--weights FORMAT] [--kv-cache f32|bf16|q8_0]
//   [--kl-divergence-base OUT]   (save this model's distributions: run it with f32 weights)
//   [--kl-divergence BASE]       (compare with them: KL divergence, top-1 agreement, as
//                                 llama.cpp's perplexity --kl-divergence reports them)
//
// Outputs (--dump-logits, --kl-divergence-base) are checked against every input first and
// replace their file only once complete (io::OutputFile): a failure leaves every file as it was.
//
// Exit codes: 0 success, 1 bad input (files, model, tokens) or a failed write, 2 bad flags.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <span>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"

#include <tessera/models/open_model.hpp>
#include <tessera/models/kl_divergence.hpp>
#include <tessera/models/model_files.hpp>
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

// A --kl-divergence-base file: "TSRKLD01", the vocabulary size and token count (u64), the
// tokens (i32), then one row of V float32 logits per position (row t predicts token t + 1).
constexpr std::string_view kl_magic = "TSRKLD01";

std::string kl_header(std::size_t vocab, std::span<const tessera::TokenId> tokens) {
    std::string h(kl_magic);
    const std::uint64_t sizes[2] = {vocab, tokens.size()};
    h.append(reinterpret_cast<const char*>(sizes), sizeof sizes);
    h.append(reinterpret_cast<const char*>(tokens.data()), tokens.size_bytes());
    return h;
}

// A base file opened for comparison: checked to belong to this model and these tokens.
class KlBase {
public:
    KlBase(const std::string& path, std::size_t vocab, std::span<const tessera::TokenId> tokens)
        : file_(path), vocab_(vocab), row_(vocab) {
        const std::string want = kl_header(vocab, tokens);
        first_row_ = want.size();
        if (file_.size() < want.size()) fail("too short to be a --kl-divergence-base file");
        std::string got(want.size(), '\0');
        file_.read(0, std::as_writable_bytes(std::span(got.data(), got.size())));
        if (got.compare(0, kl_magic.size(), kl_magic) != 0) fail("not a --kl-divergence-base file");
        if (got.compare(kl_magic.size(), 8, want, kl_magic.size(), 8) != 0) {
            fail("was made with another vocabulary size than this model's " + std::to_string(vocab));
        }
        if (got != want) fail("was made from other tokens than this text's " + std::to_string(tokens.size()));
        if (file_.size() != first_row_ + tokens.size() * vocab * sizeof(float)) fail("has the wrong size (truncated?)");
    }
    // Logits that are not finite would make every figure NaN: refused, naming the position.
    std::span<const float> row(std::size_t position) {
        file_.read(first_row_ + position * vocab_ * sizeof(float), std::as_writable_bytes(std::span(row_)));
        for (std::size_t i = 0; i < row_.size(); ++i) {
            if (!std::isfinite(row_[i])) {
                fail("holds " + std::string(std::isnan(row_[i]) ? "NaN" : "an infinity") + " at position " +
                     std::to_string(position) + ", token " + std::to_string(i));
            }
        }
        return row_;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw tessera::FormatError(file_.path() + ": " + what); }
    tessera::io::ReadOnlyFile file_;
    std::size_t vocab_;
    std::vector<float> row_;
    std::size_t first_row_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Perplexity of a text under a GPT-2 or Llama-family model (a GGUF file or a Hugging Face directory)"};
    std::string model_dir, text_file, tokens_file, dump_logits, kl_base_out, kl_base_in, backend = "cpu";
    std::size_t stride = 0;
    using tessera::cli::whole_number;
    unsigned threads = tessera::Cpu::default_threads();
    int device = 0;
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
    tessera::KvPrecision kv_cache = tessera::KvPrecision::f32;
    tessera::cli::add_kv_cache_option(app, kv_cache);
    app.add_option("--backend", backend, "cpu or cuda (GPT-2 on the GPU: needs a CUDA build and device)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    app.add_option("--device", device, "CUDA device index (cuda backend)")->check(CLI::NonNegativeNumber);
    app.add_option("--dump-logits", dump_logits,
                   "write every position's logits to this file: raw little-endian float32, row-major [T][V] "
                   "(T tokens, V vocabulary entries; row t holds the logits that predict token t+1)");
    app.add_option("--kl-divergence-base", kl_base_out,
                   "save this model's logits (with the tokens) to compare other formats with, as llama.cpp does");
    app.add_option("--kl-divergence", kl_base_in,
                   "compare with a --kl-divergence-base file of the same text: KL divergence per position "
                   "(mean, median, 99th percentile, max) and top-1 agreement");
    try {
        app.parse(argc, argv);
        if (text_opt->count() + ids_opt->count() != 1) throw CLI::RequiredError("--text-file or --tokens-file");
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    try {
        // Every input is opened and checked before any output is created, and no output may be
        // an input or the other output: a failure leaves every file as it was.
        std::vector<std::filesystem::path> inputs = tessera::model_files(model_dir);
        for (const std::string* in : {&text_file, &tokens_file, &kl_base_in})
            if (!in->empty()) inputs.emplace_back(*in);
        if (!dump_logits.empty() && !kl_base_out.empty() && tessera::io::same_file(dump_logits, kl_base_out)) {
            throw tessera::ArgumentError("--dump-logits and --kl-divergence-base name the same file, " + dump_logits);
        }
        std::unique_ptr<tessera::Tokenizer> tokenizer;
        std::vector<tessera::TokenId> tokens;
        if (!text_file.empty()) {
            // Any kind the model file holds; BOS first where the model's prompts start with one
            // (as transformers tokenizes a text with its special tokens).
            tokenizer = tessera::open_any_tokenizer(model_dir);
            tokens = tokenizer->encode_prompt(tessera::cli::read_input(text_file));
        } else {
            tokens = read_token_ids(tokens_file);
        }
        const auto model = tessera::open_model_on(backend, model_dir, threads, weights, device);
        model->use_kv_cache(kv_cache);
        if (tokenizer) tokenizer->check_vocab_size(model->vocabulary_size());  // ids must mean the same tokens
        std::optional<KlBase> kl_in;
        if (!kl_base_in.empty()) kl_in.emplace(kl_base_in, model->vocabulary_size(), tokens);
        std::optional<tessera::cli::Output> dump, kl_out;
        if (!dump_logits.empty()) dump.emplace(dump_logits, inputs);
        if (!kl_base_out.empty()) {
            kl_out.emplace(kl_base_out, inputs);
            kl_out->append(kl_header(model->vocabulary_size(), tokens));
        }
        tessera::DistributionComparison comparison;
        double base_nll = 0;
        const std::size_t s = stride ? stride : model->context_length() / 2;
        const auto r = tessera::evaluate_perplexity(*model, tokens, s, [&](std::size_t t, std::span<const float> logits) {
            const std::string_view bytes(reinterpret_cast<const char*>(logits.data()), logits.size_bytes());
            if (dump) dump->append(bytes);
            if (kl_out) kl_out->append(bytes);
            if (kl_in && t + 1 < tokens.size()) {  // the positions that predict a token
                const auto base = kl_in->row(t);
                comparison.add(base, logits);
                base_nll += tessera::negative_log_likelihood(base, tokens[t + 1]);
            }
        });
        if (dump) dump->finish();
        if (kl_out) kl_out->finish();
        char report[1024];
        std::snprintf(report, sizeof report,
                      "model: %s\ntokens: %zu, predicted: %zu, windows: %zu (n_ctx %zu, stride %zu)\n"
                      "mean negative log-likelihood: %.6f nats\nperplexity: %.4f\n",
                      model->description().c_str(), r.tokens, r.predicted, r.windows, model->context_length(), s,
                      r.mean_nll(), r.perplexity());
        tessera::cli::Output out;
        out.write(report);
        if (kl_in) {
            const double n = static_cast<double>(comparison.positions());
            std::snprintf(report, sizeof report,
                          "base perplexity: %.4f (this / base: %.6f)\n"
                          "KL divergence from the base: mean %.6f, median %.6f, 99th percentile %.6f, max %.6f nats "
                          "over %zu positions\ntop-1 agreement with the base: %.4f%%\n",
                          std::exp(base_nll / n), std::exp(r.mean_nll() - base_nll / n), comparison.mean(),
                          comparison.quantile(0.5), comparison.quantile(0.99), comparison.quantile(1.0),
                          comparison.positions(), 100.0 * comparison.top1_agreement());
            out.write(report);
        }
        out.finish();
    } catch (const std::exception& e) {
        std::cerr << "perplexity: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
