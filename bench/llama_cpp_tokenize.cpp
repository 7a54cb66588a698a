// llama_cpp_tokenize: llama.cpp's tokenizer on JSON strings, for bench/compare_llama_cpp_tokenizer.sh.
// Not part of tessera's build: it compiles against a llama.cpp tree (include/, build/bin/libllama)
// and nlohmann/json.
//
//   llama_cpp_tokenize MODEL.gguf < texts.jsonl > ids.jsonl
//
// One JSON string per input line, one JSON array of ids per output line: llama_tokenize with
// add_special false and parse_special true (control tokens' text becomes their ids, as tessera's
// --allow-special).
#include <llama.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf < texts.jsonl\n", argv[0]);
        return 2;
    }
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.vocab_only = true;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const llama_vocab* vocab = llama_model_get_vocab(model);
    for (std::string line; std::getline(std::cin, line);) {
        const std::string text = nlohmann::json::parse(line).get<std::string>();
        std::vector<llama_token> ids(text.size() + 8);
        int n = llama_tokenize(vocab, text.data(), static_cast<int>(text.size()), ids.data(), static_cast<int>(ids.size()), false, true);
        if (n < 0) {
            ids.resize(static_cast<std::size_t>(-n));
            n = llama_tokenize(vocab, text.data(), static_cast<int>(text.size()), ids.data(), static_cast<int>(ids.size()), false, true);
        }
        ids.resize(static_cast<std::size_t>(n));
        std::cout << nlohmann::json(ids).dump() << '\n';
    }
    llama_model_free(model);
    llama_backend_free();
}
