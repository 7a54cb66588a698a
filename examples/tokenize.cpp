// tokenize: a model's tokenizer from the command line, whatever its kind (byte-level BPE from
// tokenizer.json, vocab.json + merges.txt or a GGUF file; SentencePiece from a GGUF file).
//
//   echo "Hello world" | tokenize --model models/gpt2          -> [15496,995,198]
//   tokenize --model model.gguf --bos --text "Hello"            -> the ids a prompt starts with
//   tokenize --vocab V --merges M --text "Hello"                -> [15496]
//   tokenize --model DIR --jsonl < strings.jsonl                -> one JSON array per line
//   echo "[15496,995]" | tokenize --model DIR --decode          -> Hello world
//   tokenize --model DIR --decode --jsonl < ids.jsonl           -> one JSON string per line
//
// Exit codes: 0 success, 1 bad input (files, text, ids) or a failed write, 2 bad flags.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"
#include "json_excerpt.hpp"

#include <tessera/models/open_tokenizer.hpp>  // open_tokenizer: a model directory or a GGUF file
#include <tessera/text/bpe_tokenizer.hpp>

namespace {

// A JSON array of token ids: each a non-negative integer that fits a TokenId, written as one
// (15496.9, true, "7" and 4294982792 are refused, not rounded, converted or wrapped).
std::vector<tessera::TokenId> parse_ids(const std::string& json_text) {
    const auto j = nlohmann::json::parse(json_text);
    if (!j.is_array()) throw tessera::ArgumentError("--decode expects a JSON array of token ids");
    std::vector<tessera::TokenId> ids;
    ids.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) {
        const auto& v = j[i];
        constexpr auto most = static_cast<std::uint64_t>(std::numeric_limits<tessera::TokenId>::max());
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > most) {  // JSON parses 0, 1, ... as unsigned
            throw tessera::ArgumentError("--decode: element " + std::to_string(i) + " (" + tessera::cli::json_excerpt(v) + ") is not a token id");
        }
        ids.push_back(static_cast<tessera::TokenId>(v.get<std::uint64_t>()));
    }
    return ids;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"A model's tokenizer: text to token ids (JSON) and back"};
    std::string model_dir, vocab, merges;
    std::optional<std::string> text;
    bool decode = false, jsonl = false, allow_special = false, bos = false;
    auto* model_opt = app.add_option("--model", model_dir,
                                     "a Hugging Face model directory (tokenizer.json, or vocab.json and merges.txt) or a GGUF file");
    auto* vocab_opt = app.add_option("--vocab", vocab, "vocab.json")->excludes(model_opt);
    auto* merges_opt = app.add_option("--merges", merges, "merges.txt")->excludes(model_opt);
    vocab_opt->needs(merges_opt);
    merges_opt->needs(vocab_opt);
    app.add_option("--text", text, "the input (otherwise standard input)");
    app.add_flag("--decode", decode, "ids (a JSON array) to text");
    app.add_flag("--jsonl", jsonl, "one JSON value per input line, one result per output line");
    app.add_flag("--allow-special", allow_special, "turn control tokens' text (<|endoftext|>, <|im_end|>) into their ids");
    app.add_flag("--bos", bos, "start with BOS where the model's prompts do (add_bos_token)");
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
        const std::unique_ptr<tessera::Tokenizer> tokenizer =
            model_dir.empty() ? std::make_unique<tessera::BpeTokenizer>(tessera::BpeTokenizer::from_files(vocab, merges))
                              : tessera::open_any_tokenizer(model_dir);
        const auto encode = [&](std::string_view s, tessera::SpecialTokens special) {
            return bos ? tokenizer->encode_prompt(s, special) : tokenizer->encode(s, special);
        };
        const auto special = allow_special ? tessera::SpecialTokens::allowed : tessera::SpecialTokens::as_text;
        const std::string input = text ? *text : tessera::cli::read_input("-");
        tessera::cli::Output out;
        if (jsonl) {
            std::size_t line_no = 0;
            for (std::string_view rest = input; !rest.empty();) {
                const std::size_t eol = rest.find('\n');
                const std::string line(rest.substr(0, eol));
                rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
                ++line_no;
                if (line.empty()) continue;
                try {
                    if (decode) {
                        out.append(nlohmann::json(tokenizer->decode(parse_ids(line))).dump() + '\n');
                    } else {
                        const auto j = nlohmann::json::parse(line);
                        if (!j.is_string()) throw tessera::ArgumentError("expected a JSON string");
                        out.append(nlohmann::json(encode(j.get<std::string>(), special)).dump() + '\n');
                    }
                } catch (const std::exception& e) {
                    throw tessera::ArgumentError("line " + std::to_string(line_no) + ": " + e.what());
                }
            }
        } else if (decode) {
            out.append(tokenizer->decode(parse_ids(input)));
        } else {
            out.append(nlohmann::json(encode(input, special)).dump() + '\n');
        }
        out.finish();
    } catch (const std::exception& e) {
        std::cerr << "tokenize: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
