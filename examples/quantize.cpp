// quantize: a GPT-2 or a Llama-family model (llama, qwen2, qwen3; a Hugging Face directory or a
// GGUF file) as one GGUF file in llama.cpp's layout, its matrices in the format asked for
// (models/gguf_file_format.hpp: a model format, or llama-quantize's K-quant mixes), with its tokenizer:
// all `generate --model FILE.gguf` (or llama.cpp) needs.
//
//   quantize --model models/gpt2 --weights q8_0 --out gpt2-q8_0.gguf
//   quantize --model models/gpt2 --weights q4_k_m --out gpt2-q4_k_m.gguf   (llama-quantize's mix)
//
// The output never replaces one of the model's files or anything but a regular file, and only
// once it is complete (io::OutputFile): a failure leaves every file as it was.
//
// Exit codes: 0 success, 1 bad input (model files) or a failed write, 2 bad flags.
#include <CLI/CLI.hpp>

#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "command_line.hpp"

#include <tessera/models/write_gpt2_gguf.hpp>
#include <tessera/models/open_model.hpp>  // model_architecture
#include <tessera/models/write_llama_gguf.hpp>
#include <tessera/tessera.hpp>

int main(int argc, char** argv) {
    CLI::App app{"Write a GPT-2 or a Llama-family model as a GGUF file (llama.cpp's layout) with its matrices in f32, bf16, "
                 "q8_0, q4_0, or as llama-quantize's q4_k_m, q5_k_m or q6_k"};
    std::string model, out, name;
    app.add_option("--model", model,
                   "a GGUF file, or a directory with config.json and model.safetensors (or its shards), and vocab.json and merges.txt "
                   "(GPT-2: required)")
        ->required();
    app.add_option("--out", out, "the GGUF file to write (replaced only once it is complete)")->required();
    app.add_option("--name", name, "general.name in the file (default: the model's file or directory name)");
    std::optional<tessera::GgufFileFormat> weights;
    app.add_option_function<std::string>(
           "--weights",
           [&weights](const std::string& text) {
               weights = tessera::GgufFileFormat::named(text);
               if (!weights) {
                   throw CLI::ValidationError("--weights", "must be one of " + std::string(tessera::GgufFileFormat::names) +
                                                                ", got '" + text + "'");
               }
           },
           "how the matrices are stored: " + std::string(tessera::GgufFileFormat::names) +
               " (the K-quants per tensor as llama-quantize chooses them)")
        ->type_name("FORMAT")
        ->required();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);  // prints the usage error (or the help)
        return rc == 0 ? 0 : 2;
    }
    try {
        if (const std::size_t at = tessera::utf8::first_invalid(name); at != name.size()) {
            throw tessera::ArgumentError("--name is not valid UTF-8 (at byte " + std::to_string(at) + ")");
        }
        if (name.empty()) name = std::filesystem::path(model).lexically_normal().filename().string();
        if (name.empty()) name = std::filesystem::path(model).lexically_normal().parent_path().filename().string();
        std::string shape;
        if (tessera::model_architecture(model) == "gpt2") {
            const tessera::Gpt2Files files(model);
            const auto tokenizer = tessera::open_tokenizer(model);
            tessera::write_gpt2_gguf(files, &tokenizer, *weights, out, name);
            shape = files.hyperparameters().shape.describe();
        } else {  // a Llama-family model (model_architecture refuses the rest)
            const tessera::LlamaFiles files(model);
            // A directory's tokenizer where it has one: tokenizer.model first for "llama", as
            // llama.cpp's converter takes it, else tokenizer.json or vocab.json and merges.txt;
            // a GGUF file's tokenizer metadata is copied.
            const std::filesystem::path dir(model);
            std::unique_ptr<tessera::Tokenizer> tokenizer;
            if (!files.gguf()) {
                if (files.shape().architecture == "llama" && std::filesystem::exists(dir / "tokenizer.model")) {
                    tokenizer = std::make_unique<tessera::SentencePieceTokenizer>(tessera::sentencepiece_from_model_file(dir / "tokenizer.model"));
                } else if (std::filesystem::exists(dir / "tokenizer.json") ||
                           (std::filesystem::exists(dir / "vocab.json") && std::filesystem::exists(dir / "merges.txt"))) {
                    tokenizer = std::make_unique<tessera::BpeTokenizer>(tessera::open_tokenizer(model));
                }
            }
            tessera::write_llama_gguf(files, tokenizer.get(), *weights, out, name);
            shape = files.shape().describe();
        }
        std::cout << "wrote " << out << ": " << shape << ", matrices " << weights->name() << ", "
                  << std::filesystem::file_size(out) << " bytes\n";
    } catch (const std::exception& e) {
        std::cerr << "quantize: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
