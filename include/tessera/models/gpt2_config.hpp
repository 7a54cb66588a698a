#pragma once
// GPT-2 shapes as types. Every dimension is a compile-time constant, so a weight of the wrong
// shape fails to compile; the sequence length stays dynamic.
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <tuple>    // std::tuple

namespace tessera {

template <std::size_t Layers, std::size_t Heads, std::size_t Embd, std::size_t Ctx, std::size_t Vocab>
struct GPT2Config {
    static constexpr std::size_t n_layer = Layers;   // decoder blocks, e.g. 12
    static constexpr std::size_t n_head = Heads;     // attention heads, e.g. 12
    static constexpr std::size_t n_embd = Embd;      // channels C, e.g. 768
    static constexpr std::size_t n_ctx = Ctx;        // positions, e.g. 1024
    static constexpr std::size_t vocab_size = Vocab; // tokens V, e.g. 50257
    static constexpr std::size_t head_dim = Embd / Heads;  // e.g. 64
    static constexpr std::size_t n_inner = 4 * Embd;       // FFN width, e.g. 3072
    static_assert(Embd % Heads == 0, "GPT2Config: n_embd must be a multiple of n_head.");
};

// The published GPT-2 models.
struct GPT2Small : GPT2Config<12, 12, 768, 1024, 50257> {
    static constexpr const char* name = "gpt2 (124M)";
};
struct GPT2Medium : GPT2Config<24, 16, 1024, 1024, 50257> {
    static constexpr const char* name = "gpt2-medium (355M)";
};
struct GPT2Large : GPT2Config<36, 20, 1280, 1024, 50257> {
    static constexpr const char* name = "gpt2-large (774M)";
};
struct GPT2XL : GPT2Config<48, 25, 1600, 1024, 50257> {
    static constexpr const char* name = "gpt2-xl (1558M)";
};
struct DistilGPT2 : GPT2Config<6, 12, 768, 1024, 50257> {
    static constexpr const char* name = "distilgpt2 (82M)";
};
// Small shapes for tests and the bundled demo (tools/gpt2_reference.py makes their checkpoints).
struct GPT2TestTiny : GPT2Config<2, 4, 64, 128, 512> {
    static constexpr const char* name = "test-tiny";
};
struct GPT2TestOddHeads : GPT2Config<3, 3, 48, 64, 320> {  // a head count that is not a power of two
    static constexpr const char* name = "test-odd-heads";
};
struct GPT2TestVocab : GPT2Config<2, 2, 32, 256, 50257> {  // GPT-2's vocabulary: works with its tokenizer
    static constexpr const char* name = "test-vocab";
};

// The shapes load_gpt2 can dispatch to.
using KnownGPT2Configs = std::tuple<GPT2Small, GPT2Medium, GPT2Large, GPT2XL, DistilGPT2, GPT2TestTiny,
                                    GPT2TestOddHeads, GPT2TestVocab>;

template <class C>
std::string describe_config() {
    return std::string(C::name) + ": n_layer " + std::to_string(C::n_layer) + ", n_head " + std::to_string(C::n_head) +
           ", n_embd " + std::to_string(C::n_embd) + ", n_ctx " + std::to_string(C::n_ctx) + ", vocab_size " +
           std::to_string(C::vocab_size);
}

}  // namespace tessera
