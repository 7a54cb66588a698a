#pragma once
// Llama<Backend, W>: the Llama family as one architecture of the decoder skeleton
// (models/decoder_model.hpp): token embeddings without added positions, pre-RMSNorm blocks
// with grouped-query attention under rotary positions and a gated SiLU feed-forward
// (nn/llama_block.hpp), a final RMSNorm, the head tied or its own table. Its variants are
// run-time switches of one shape (LlamaShape), read from the checkpoint:
//   llama  (Llama 2/3, SmolLM, TinyLlama, Mistral without a sliding window): as above;
//   qwen2  (Qwen2, Qwen2.5): biases on the q/k/v projections;
//   qwen3  (dense Qwen3): an RMSNorm over each head of q and k, head_dim apart from C / H.
// Every dimension is a run-time number: one instantiation per weight format runs them all.
#include <cstddef>  // std::size_t
#include <string>   // std::string, std::to_string

#include <tessera/backend/backend.hpp>            // Backend, HasRmsNorm, HasRotary, HasSiluMul
#include <tessera/core/error.hpp>                 // ArgumentError
#include <tessera/core/extents.hpp>               // dyn
#include <tessera/core/kv_precision.hpp>          // KvPrecision
#include <tessera/models/decoder_model.hpp>       // DecoderModel
#include <tessera/nn/llama_block.hpp>             // LlamaBlock
#include <tessera/nn/parameter.hpp>               // WeightSource
#include <tessera/nn/rms_norm.hpp>                // RmsNorm
#include <tessera/nn/rotary_positions.hpp>        // RopeSettings

namespace tessera {

// A Llama-family network's numbers, from its config.json or GGUF metadata.
struct LlamaShape {
    std::string architecture = "llama";  // "llama", "qwen2" or "qwen3": for messages
    std::size_t n_layer = 0;     // decoder blocks
    std::size_t n_embd = 0;      // channels C
    std::size_t n_head = 0;      // query heads H
    std::size_t n_head_kv = 0;   // key/value heads Hkv, dividing H
    std::size_t n_head_dim = 0;  // D; 0: C / H
    std::size_t n_ff = 0;        // feed-forward width
    std::size_t n_ctx = 0;       // positions
    std::size_t vocab_size = 0;  // tokens V
    float norm_eps = 1e-6f;      // the RMSNorms'
    bool qkv_bias = false;       // Qwen2
    bool qk_norm = false;        // Qwen3
    bool tied = false;           // the head is the token embedding
    RopeSettings rope;

    std::size_t head_dim() const noexcept { return n_head_dim ? n_head_dim : n_head ? n_embd / n_head : 0; }
    std::size_t kv_width() const noexcept { return n_head_kv * head_dim(); }
    AttentionShape attention() const { return {n_embd, n_head, n_head_kv, head_dim(), qkv_bias, qk_norm, rope}; }
    // The number of weights, in double (a shape read from a file may imply more than a size_t).
    double parameters() const noexcept {
        const auto c = static_cast<double>(n_embd), q = static_cast<double>(n_head * head_dim()),
                   kv = static_cast<double>(kv_width()), ff = static_cast<double>(n_ff), v = static_cast<double>(vocab_size);
        const double block = 2 * c + c * q + 2 * c * kv + q * c + 3 * c * ff + (qkv_bias ? q + 2 * kv : 0) +
                             (qk_norm ? 2 * static_cast<double>(head_dim()) : 0);
        return v * c * (tied ? 1 : 2) + static_cast<double>(n_layer) * block + c;
    }
    bool operator==(const LlamaShape&) const = default;

    std::string describe() const {
        return architecture + ": n_layer " + std::to_string(n_layer) + ", n_embd " + std::to_string(n_embd) + ", n_head " +
               std::to_string(n_head) + ", n_head_kv " + std::to_string(n_head_kv) + ", head_dim " + std::to_string(head_dim()) +
               ", n_ff " + std::to_string(n_ff) + ", n_ctx " + std::to_string(n_ctx) + ", vocab_size " + std::to_string(vocab_size) +
               (tied ? ", tied head" : "");
    }
};

// Every dimension at run time.
struct LlamaDynamic {
    static constexpr std::size_t n_embd = dyn, n_ctx = dyn, vocab_size = dyn;
    static constexpr bool is_static = false;
    static constexpr const char* name = "llama-family";
    static constexpr bool admits(const LlamaShape&) noexcept { return true; }
};

// No positions added to the embeddings (rotary positions act inside attention).
template <class B>
struct NoAddedPositions {
    void load(const WeightSource<B>&, const char*) {}
    template <class Backend, class X>
    void add_to(Backend&, X&&, std::size_t) const {}
};

struct LlamaLoadOptions {};

struct LlamaArchitecture {
    using config = LlamaDynamic;
    using Shape = LlamaShape;
    using Options = LlamaLoadOptions;
    static constexpr const char* model_name = "Llama";
    template <class B>
    static constexpr bool runs_on = Backend<B> && HasRmsNorm<B> && HasRotary<B> && HasSiluMul<B>;

    template <class B, class W>
    using Block = LlamaBlock<B, W>;
    template <class B>
    using Positions = NoAddedPositions<B>;
    template <class B>
    using FinalNorm = RmsNorm<dyn, B>;

    template <class B, class W>
    static Block<B, W> make_block(const Shape& s) { return Block<B, W>(s.attention(), s.n_ff); }
    template <class B, class W>
    static typename Block<B, W>::Cache make_cache(const Shape& s, std::size_t context, KvPrecision kv) {
        return typename Block<B, W>::Cache(context, s.n_head_kv, s.head_dim(), kv);
    }
    template <class B>
    static typename Block<B, float>::Scratch make_scratch(const Shape& s) { return Block<B, float>::scratch(s.attention(), s.n_ff); }
    template <class B>
    static Positions<B> make_positions(const Shape&) { return {}; }
    template <class B>
    static FinalNorm<B> make_final_norm(const Shape& s) { return FinalNorm<B>(s.n_embd); }

    // Hugging Face's names (GGUF files are translated: GgufLlamaCheckpoint).
    static constexpr const char* embedding_name = "model.embed_tokens.weight";
    static constexpr const char* positions_name = "";
    static constexpr const char* layer_prefix = "model.layers.";
    static constexpr const char* final_norm_name = "model.norm";
    static constexpr const char* head_name = "lm_head.weight";
    static float norm_eps(const Shape& s, const Options&) { return s.norm_eps; }
    static bool tied(const Shape& s, const Options&) { return s.tied; }

    static void check(const Shape& s) {
        const auto fail = [&](const std::string& what) { throw ArgumentError("Llama (" + s.architecture + "): " + what); };
        if (s.n_layer == 0 || s.n_embd == 0 || s.n_head == 0 || s.n_head_kv == 0 || s.n_ff == 0 || s.n_ctx == 0 || s.vocab_size == 0 ||
            s.head_dim() == 0) {
            fail("every dimension must be positive: " + s.describe());
        }
        if (s.n_head % s.n_head_kv != 0) {
            fail(std::to_string(s.n_head) + " query heads are not a multiple of the " + std::to_string(s.n_head_kv) + " key/value heads");
        }
        if (s.head_dim() % 2 != 0) fail("head_dim " + std::to_string(s.head_dim()) + " is odd (rotary positions turn pairs)");
        if (s.n_head_dim == 0 && s.n_embd % s.n_head != 0) {
            fail("n_embd " + std::to_string(s.n_embd) + " is not a multiple of n_head " + std::to_string(s.n_head));
        }
        if (!(s.norm_eps > 0.0f)) fail("the norms' epsilon must be positive, got " + std::to_string(s.norm_eps));
    }
};

template <class B, WeightType W = float, WeightType HeadW = head_weight_t<W, dyn>>
using Llama = DecoderModel<LlamaArchitecture, B, W, HeadW>;

}  // namespace tessera
