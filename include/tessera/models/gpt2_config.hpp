#pragma once
// GPT-2 shapes as types, and the run-time shape. A config whose dimensions are all
// compile-time constants makes a weight of the wrong shape fail to compile; GPT2Dynamic makes
// every dimension `dyn`, so one instantiation of the same templates runs any GPT-2 checkpoint.
// The sequence length is dynamic in both.
#include <cstddef>  // std::size_t
#include <string>   // std::string

#include <tessera/core/extents.hpp>  // dyn

namespace tessera {

// A GPT-2's dimensions, known at run time (from config.json).
struct GPT2Shape {
    std::size_t n_layer = 0;     // decoder blocks, e.g. 12
    std::size_t n_head = 0;      // attention heads, e.g. 12
    std::size_t n_embd = 0;      // channels C, e.g. 768
    std::size_t n_ctx = 0;       // positions, e.g. 1024
    std::size_t vocab_size = 0;  // tokens V, e.g. 50257
    std::size_t n_inner = 0;     // FFN width, 4 * n_embd in every published GPT-2
    std::size_t head_dim() const noexcept { return n_head ? n_embd / n_head : 0; }
    std::size_t kv_width() const noexcept { return n_embd; }  // one position's keys: every head's
    // The number of weights (the LM head tied to the token embedding), in double: a shape read
    // from a file may imply more than a size_t holds.
    double parameters() const noexcept {
        const auto c = static_cast<double>(n_embd), inner = static_cast<double>(n_inner);
        const double block = 4 * c + (c * 3 * c + 3 * c) + (c * c + c) + (c * inner + inner) + (inner * c + c);
        return (static_cast<double>(vocab_size) + static_cast<double>(n_ctx)) * c + static_cast<double>(n_layer) * block +
               2 * c;
    }
    bool operator==(const GPT2Shape&) const = default;

    std::string describe() const {
        return "n_layer " + std::to_string(n_layer) + ", n_head " + std::to_string(n_head) + ", n_embd " +
               std::to_string(n_embd) + ", n_ctx " + std::to_string(n_ctx) + ", vocab_size " + std::to_string(vocab_size) +
               ", n_inner " + std::to_string(n_inner);
    }
};

// What a checkpoint says the network is, beyond its weights: its shape, the layer norms'
// epsilon, and whether the LM head is the token embedding.
struct Gpt2Hyperparameters {
    GPT2Shape shape;
    float layer_norm_epsilon = 1e-5f;
    bool tie_word_embeddings = true;
};

template <std::size_t Layers, std::size_t Heads, std::size_t Embd, std::size_t Ctx, std::size_t Vocab,
          std::size_t Inner = (Embd == dyn ? dyn : 4 * Embd)>
struct GPT2Config {
    static constexpr std::size_t n_layer = Layers;   // decoder blocks, e.g. 12
    static constexpr std::size_t n_head = Heads;     // attention heads, e.g. 12
    static constexpr std::size_t n_embd = Embd;      // channels C, e.g. 768
    static constexpr std::size_t n_ctx = Ctx;        // positions, e.g. 1024
    static constexpr std::size_t vocab_size = Vocab; // tokens V, e.g. 50257
    static constexpr std::size_t n_inner = Inner;    // FFN width, e.g. 3072
    static constexpr std::size_t head_dim = Embd == dyn || Heads == dyn ? dyn : Embd / Heads;  // e.g. 64
    static constexpr bool is_static = Layers != dyn && Heads != dyn && Embd != dyn && Ctx != dyn && Vocab != dyn &&
                                      Inner != dyn;
    static_assert(Embd == dyn || Heads == dyn || Embd % Heads == 0, "GPT2Config: n_embd must be a multiple of n_head.");

    // The static dimensions of a fully static config, as a run-time shape.
    static constexpr GPT2Shape shape() noexcept
        requires is_static
    {
        return {Layers, Heads, Embd, Ctx, Vocab, Inner};
    }
    // Whether a run-time shape fits this config's static dimensions.
    static constexpr bool admits(const GPT2Shape& s) noexcept {
        const auto fits = [](std::size_t fixed, std::size_t value) { return fixed == dyn || fixed == value; };
        return fits(Layers, s.n_layer) && fits(Heads, s.n_head) && fits(Embd, s.n_embd) && fits(Ctx, s.n_ctx) &&
               fits(Vocab, s.vocab_size) && fits(Inner, s.n_inner);
    }
};

// Any GPT-2: every dimension from config.json at run time. Same kernels as the static shapes
// (they take run-time-sized views anyway), so the same speed.
struct GPT2Dynamic : GPT2Config<dyn, dyn, dyn, dyn, dyn, dyn> {
    static constexpr const char* name = "gpt2";
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


}  // namespace tessera
