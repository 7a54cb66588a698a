// tokenize: GPT-2 byte-level BPE from the command line.
//
//   echo "Hello world" | tokenize --model models/gpt2          -> [15496,995,198]
//   tokenize --vocab V --merges M --text "Hello"                -> [15496]
//   tokenize --model DIR --jsonl < strings.jsonl                -> one JSON array per line
//   echo "[15496,995]" | tokenize --model DIR --decode          -> Hello world
//   tokenize --model DIR --decode --jsonl < ids.jsonl           -> one JSON string per line
//
// Exit codes: 0 success, 1 bad input (files, text, ids), 2 bad flags.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <tessera/text/bpe_tokenizer.hpp>

namespace {

std::string read_all(std::istream& in) { return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}; }

std::vector<tessera::TokenId> parse_ids(const std::string& json_text) {
    const auto j = nlohmann::json::parse(json_text);
    if (!j.is_array()) throw tessera::ArgumentError("--decode expects a JSON array of token ids");
    return j.get<std::vector<tessera::TokenId>>();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"GPT-2 byte-level BPE: text to token ids (JSON) and back"};
    std::string model_dir, vocab, merges;
    std::optional<std::string> text;
    bool decode = false, jsonl = false, allow_special = false;
    auto* model_opt = app.add_option("--model", model_dir, "Hugging Face model directory with vocab.json and merges.txt");
    auto* vocab_opt = app.add_option("--vocab", vocab, "vocab.json")->excludes(model_opt);
    auto* merges_opt = app.add_option("--merges", merges, "merges.txt")->excludes(model_opt);
    vocab_opt->needs(merges_opt);
    merges_opt->needs(vocab_opt);
    app.add_option("--text", text, "the input (otherwise standard input)");
    app.add_flag("--decode", decode, "ids (a JSON array) to text");
    app.add_flag("--jsonl", jsonl, "one JSON value per input line, one result per output line");
    app.add_flag("--allow-special", allow_special, "turn <|endoftext|> in the text into its special id");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);  // prints the usage error (or the help)
        return rc == 0 ? 0 : 2;
    }
    if (model_dir.empty() && vocab.empty()) {
        std::cerr << "tokenize: give --model DIR, or --vocab and --merges\n" << app.help();
        return 2;
    }
    try {
        const auto tokenizer = model_dir.empty() ? tessera::BpeTokenizer::from_files(vocab, merges)
                                                 : tessera::BpeTokenizer::from_directory(model_dir);
        const auto special = allow_special ? tessera::SpecialTokens::allowed : tessera::SpecialTokens::as_text;
        if (jsonl) {
            std::size_t line_no = 0;
            for (std::string line; std::getline(std::cin, line);) {
                ++line_no;
                if (line.empty()) continue;
                try {
                    if (decode) {
                        std::cout << nlohmann::json(tokenizer.decode(parse_ids(line))).dump() << '\n';
                    } else {
                        std::cout << nlohmann::json(tokenizer.encode(nlohmann::json::parse(line).get<std::string>(), special))
                                  << '\n';
                    }
                } catch (const std::exception& e) {
                    throw tessera::ArgumentError("line " + std::to_string(line_no) + ": " + e.what());
                }
            }
            return 0;
        }
        const std::string input = text ? *text : read_all(std::cin);
        if (decode) {
            std::cout << tokenizer.decode(parse_ids(input));
        } else {
            std::cout << nlohmann::json(tokenizer.encode(input, special)).dump() << '\n';
        }
    } catch (const std::exception& e) {
        std::cerr << "tokenize: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
