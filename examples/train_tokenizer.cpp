// train_tokenizer: a byte-level BPE vocabulary trained on text files (text/bpe_trainer.hpp),
// written as tokenizer.json + tokenizer_config.json (as Hugging Face's tokenizers writes them
// for the chosen pre-tokenizer's model family) and vocab.json + merges.txt, which tokenize,
// generate and Hugging Face's implementations all load.
//
//   train_tokenizer --input corpus.txt --out DIR --vocab-size 32000 --pre llama3
//                   --special "<|endoftext|>" --special "<|im_start|>" --special "<|im_end|>"
//
// Each input file is cut into documents at blank lines (and at the fortune files' "%" lines),
// pre-tokenized on its own. Existing files in DIR are replaced whole, only when all is written;
// an input is never overwritten. Exit codes: 0 success, 1 bad input or a failed write, 2 bad flags.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"

#include <tessera/text/bpe_tokenizer.hpp>
#include <tessera/text/bpe_trainer.hpp>
#include <tessera/text/tokenizer_json.hpp>

namespace {

using nlohmann::ordered_json;

// Documents: the text between blank lines or lines holding only "%".
std::vector<std::string_view> documents(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (std::size_t at = 0; at <= text.size();) {
        const std::size_t eol = std::min(text.find('\n', at), text.size());
        const std::string_view line = text.substr(at, eol - at);
        const bool separator = line.empty() || line == "%" || line == "\r";
        if (separator || eol == text.size()) {
            const std::size_t end = separator ? at : text.size();
            if (end > start) out.push_back(text.substr(start, end - start));
            start = std::min(eol + 1, text.size());
        }
        at = eol + 1;
    }
    return out;
}

ordered_json byte_level_step(bool use_regex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

ordered_json pre_tokenizer_json(tessera::PreTokenizer pre) {
    using tessera::PreTokenizer;
    const auto split = [](std::string_view pattern) {
        return ordered_json{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}};
    };
    switch (pre) {
        case PreTokenizer::gpt2: return byte_level_step(true);
        case PreTokenizer::llama3:
            return {{"type", "Sequence"}, {"pretokenizers", {split(tessera::tokenizer_json::llama3_pattern), byte_level_step(false)}}};
        case PreTokenizer::qwen2:
            return {{"type", "Sequence"}, {"pretokenizers", {split(tessera::tokenizer_json::qwen2_pattern), byte_level_step(false)}}};
        case PreTokenizer::smollm:
            return {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level_step(true)}}};
    }
    return nullptr;
}

void write(const std::filesystem::path& path, std::string_view text, const std::vector<std::filesystem::path>& inputs) {
    tessera::cli::Output out(path, inputs);
    out.append(text);
    out.finish();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Train a byte-level BPE tokenizer on text files"};
    std::vector<std::string> inputs, specials;
    std::string out_dir, pre_name = "gpt2";
    std::size_t vocab_size = 32000;
    unsigned threads = 2;
    app.add_option("--input", inputs, "text files (UTF-8)")->required();
    app.add_option("--out", out_dir, "the directory to write tokenizer.json, tokenizer_config.json, vocab.json, merges.txt to")->required();
    app.add_option("--vocab-size", vocab_size, "tokens in all: special tokens, 256 bytes, merges")->check(CLI::Range(std::size_t{256}, std::size_t{1} << 22));
    app.add_option("--pre", pre_name, "pre-tokenizer: gpt2, llama3, qwen2, smollm")->check(CLI::IsMember({"gpt2", "llama3", "qwen2", "smollm"}));
    app.add_option("--special", specials, "a special token (repeatable): ids 0, 1, ... in order; the first is BOS and EOS");
    app.add_option("--threads", threads, "threads for counting")->check(CLI::Range(1u, 256u));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    try {
        tessera::BpeTrainingOptions options;
        for (const auto p : {tessera::PreTokenizer::gpt2, tessera::PreTokenizer::llama3, tessera::PreTokenizer::qwen2, tessera::PreTokenizer::smollm}) {
            if (tessera::name(p) == pre_name) options.pre = p;
        }
        options.vocab_size = vocab_size;
        options.special_tokens = specials;
        options.threads = threads;
        std::vector<std::string> contents;
        std::vector<std::filesystem::path> input_paths;
        for (const std::string& file : inputs) {
            contents.push_back(tessera::cli::read_input(file));
            input_paths.emplace_back(file);
        }
        std::vector<std::string_view> texts;
        std::size_t bytes = 0;
        for (std::size_t i = 0; i < contents.size(); ++i) {
            if (const std::size_t bad = tessera::utf8::first_invalid(contents[i]); bad != contents[i].size()) {
                throw tessera::ArgumentError(inputs[i] + ": invalid UTF-8 at byte offset " + std::to_string(bad));
            }
            for (const std::string_view d : documents(contents[i])) texts.push_back(d);
            bytes += contents[i].size();
        }
        const auto start = std::chrono::steady_clock::now();
        const tessera::TrainedBpe trained = tessera::train_bpe(texts, options);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        // The files, built as the tokenizer they describe, which is then loaded back as a check.
        ordered_json added = ordered_json::array();
        for (std::size_t i = 0; i < trained.special_tokens.size(); ++i) {
            added.push_back({{"id", i}, {"content", trained.special_tokens[i]}, {"single_word", false}, {"lstrip", false},
                             {"rstrip", false}, {"normalized", false}, {"special", true}});
        }
        ordered_json vocab = ordered_json::object();
        for (const auto& [token, id] : trained.vocab) vocab[token] = id;
        ordered_json merges = ordered_json::array();
        std::string merges_txt = "#version: 0.2\n";
        for (const auto& [a, b] : trained.merges) {
            merges.push_back(ordered_json::array({a, b}));
            merges_txt += a + " " + b + "\n";
        }
        const ordered_json tokenizer = {
            {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added}, {"normalizer", nullptr},
            {"pre_tokenizer", pre_tokenizer_json(options.pre)},
            {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
            {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                       {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                       {"ignore_merges", options.pre == tessera::PreTokenizer::llama3}, {"vocab", vocab}, {"merges", merges}}}};
        ordered_json config = {{"tokenizer_class", "PreTrainedTokenizerFast"}, {"add_bos_token", false}, {"clean_up_tokenization_spaces", false}};
        if (!trained.special_tokens.empty()) {
            config["bos_token"] = trained.special_tokens.front();
            config["eos_token"] = trained.special_tokens.front();
        }
        const std::string tokenizer_text = tokenizer.dump(1) + "\n", config_text = config.dump(2) + "\n";
        (void)tessera::tokenizer_from_json(tokenizer_text, "the trained tokenizer.json", config_text, "its tokenizer_config.json");
        const std::filesystem::path dir(out_dir);
        std::filesystem::create_directories(dir);
        write(dir / "tokenizer.json", tokenizer_text, input_paths);
        write(dir / "tokenizer_config.json", config_text, input_paths);
        write(dir / "vocab.json", vocab.dump() + "\n", input_paths);
        write(dir / "merges.txt", merges_txt, input_paths);
        std::fprintf(stderr, "train_tokenizer: %zu bytes in %zu documents -> %zu tokens (%zu merges) in %.2f s; wrote %s\n", bytes,
                     texts.size(), trained.vocab.size(), trained.merges.size(), seconds, out_dir.c_str());
    } catch (const std::exception& e) {
        std::cerr << "train_tokenizer: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
