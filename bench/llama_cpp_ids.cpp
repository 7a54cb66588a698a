// llama_cpp_ids: llama.cpp's answer on token ids, for bench/compare_llama_cpp_greedy.sh. Not part
// of tessera's build: it compiles against a llama.cpp tree (its include/ and build/bin/libllama).
//
//   llama_cpp_ids MODEL.gguf 1,2,3 STEPS [LOGITS_OUT]
//
// Runs the prompt ids as one batch, then STEPS greedy steps one token at a time (argmax of the
// logits, lowest id on a tie, as tessera's greedy), and prints {"tokens": [generated ids]}.
// LOGITS_OUT: the prompt's logits at every position, float32 little-endian [T][V].
#include <llama.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf IDS STEPS [LOGITS_OUT]\n", argv[0]);
        return 2;
    }
    std::vector<llama_token> prompt;
    std::stringstream ids(argv[2]);
    for (std::string id; std::getline(ids, id, ',');) prompt.push_back(std::stoi(id));
    const int steps = std::atoi(argv[3]);

    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(prompt.size() + steps + 16);
    cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(prompt.size());
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;

    llama_batch batch = llama_batch_init(static_cast<int32_t>(prompt.size()), 0, 1);
    for (std::size_t i = 0; i < prompt.size(); ++i) {
        batch.token[i] = prompt[i];
        batch.pos[i] = static_cast<llama_pos>(i);
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;  // every position's logits
    }
    batch.n_tokens = static_cast<int32_t>(prompt.size());
    if (llama_decode(ctx, batch)) return 1;
    if (argc > 4) {
        std::FILE* out = std::fopen(argv[4], "wb");
        if (!out) return 1;
        for (std::size_t i = 0; i < prompt.size(); ++i)
            std::fwrite(llama_get_logits_ith(ctx, static_cast<int32_t>(i)), sizeof(float), n_vocab, out);
        std::fclose(out);
    }
    const auto argmax = [&](const float* l) {
        int best = 0;
        for (int t = 1; t < n_vocab; ++t)
            if (l[t] > l[best]) best = t;
        return best;
    };
    std::vector<int> generated;
    llama_token next = argmax(llama_get_logits_ith(ctx, static_cast<int32_t>(prompt.size()) - 1));
    for (int s = 0; s < steps; ++s) {
        generated.push_back(next);
        if (s + 1 == steps) break;
        llama_batch one = llama_batch_get_one(&next, 1);
        if (llama_decode(ctx, one)) return 1;
        next = argmax(llama_get_logits_ith(ctx, -1));
    }
    std::printf("{\"tokens\": [");
    for (std::size_t i = 0; i < generated.size(); ++i) std::printf("%s%d", i ? ", " : "", generated[i]);
    std::printf("]}\n");
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
