#pragma once
// GPT2<Config, Backend, W>: GPT-2 as one architecture of the decoder skeleton
// (models/decoder_model.hpp): learned (or sinusoidal) positions added to the token embeddings,
// pre-LayerNorm blocks with multi-head attention and a GELU MLP (nn/decoder_block.hpp), a final
// LayerNorm, the head tied to the embedding unless load() is told otherwise. Its matrices (the
// four projections of each block) are stored as W: float, bf16, Q8_0 or Q4_0; the tied
// embedding / LM head as HeadW (W, except Q6_K or Q8_0 for Q4_0: head_weight_t).
//
// Config fixes the shape at compile time (GPT2Small) or leaves it to run time (GPT2Dynamic,
// any checkpoint); both are the same templates over the same kernels.
#include <cstddef>  // std::size_t
#include <string>   // std::string, std::to_string

#include <tessera/backend/backend.hpp>          // Backend
#include <tessera/core/error.hpp>               // ArgumentError
#include <tessera/core/kv_precision.hpp>        // KvPrecision
#include <tessera/io/safetensors.hpp>           // SafetensorsFile
#include <tessera/io/safetensors_shards.hpp>    // SafetensorsShards
#include <tessera/models/decoder_model.hpp>     // DecoderModel
#include <tessera/models/gpt2_checkpoints.hpp>  // SafetensorsGpt2Checkpoint
#include <tessera/models/gpt2_config.hpp>       // GPT2Shape, GPT2Config
#include <tessera/nn/decoder_block.hpp>         // DecoderBlock
#include <tessera/nn/layer_norm.hpp>            // LayerNorm
#include <tessera/nn/positions.hpp>             // LearnedPositions, SinusoidalPositions

namespace tessera {

// What GPT2's load() takes besides the checkpoint: the layer norms' epsilon, and whether the
// head is the token embedding (else lm_head.weight must exist).
struct Gpt2LoadOptions {
    float layer_norm_eps = 1e-5f;
    bool tie_word_embeddings = true;
};

template <class Config, template <std::size_t, std::size_t, class> class PositionPolicy = LearnedPositions>
struct GPT2Architecture {
    using config = Config;
    using Shape = GPT2Shape;
    using Options = Gpt2LoadOptions;
    static constexpr const char* model_name = "GPT2";
    template <class B>
    static constexpr bool runs_on = Backend<B>;

    template <class B, class W>
    using Block = DecoderBlock<Config::n_embd, Config::n_head, Config::n_inner, Config::n_ctx, B, W>;
    template <class B>
    using Positions = PositionPolicy<Config::n_ctx, Config::n_embd, B>;
    template <class B>
    using FinalNorm = LayerNorm<Config::n_embd, B>;

    template <class B, class W>
    static Block<B, W> make_block(const Shape& s) { return Block<B, W>(s.n_embd, s.n_head, s.n_inner); }
    template <class B, class W>
    static typename Block<B, W>::Cache make_cache(const Shape& s, std::size_t context, KvPrecision kv) {
        return typename Block<B, W>::Cache(context, s.n_head, s.head_dim(), kv);
    }
    template <class B>
    static BlockScratch<Config::n_embd, Config::n_inner, B> make_scratch(const Shape& s) { return {s.n_embd, s.n_inner}; }
    template <class B>
    static Positions<B> make_positions(const Shape& s) { return Positions<B>(s.n_ctx, s.n_embd); }
    template <class B>
    static FinalNorm<B> make_final_norm(const Shape& s) { return FinalNorm<B>(s.n_embd); }

    // Hugging Face's names (GGUF files are translated: GgufGpt2Checkpoint).
    static constexpr const char* embedding_name = "wte.weight";
    static constexpr const char* positions_name = "wpe.weight";
    static constexpr const char* layer_prefix = "h.";
    static constexpr const char* final_norm_name = "ln_f";
    static constexpr const char* head_name = "lm_head.weight";
    static float norm_eps(const Shape&, const Options& o) { return o.layer_norm_eps; }
    static bool tied(const Shape&, const Options& o) { return o.tie_word_embeddings; }

    static void check(const Shape& s) {
        if (s.n_layer == 0 || s.n_head == 0 || s.n_embd == 0 || s.n_ctx == 0 || s.vocab_size == 0 || s.n_inner == 0) {
            throw ArgumentError("GPT2: every dimension must be positive: " + s.describe());
        }
        if (s.n_embd % s.n_head != 0) {
            throw ArgumentError("GPT2: n_embd " + std::to_string(s.n_embd) + " is not a multiple of n_head " + std::to_string(s.n_head));
        }
    }
};

template <class Config, class B, WeightType W = float,
          template <std::size_t, std::size_t, class> class Positions = LearnedPositions, WeightType HeadW = head_weight_t<W, Config::n_embd>>
class GPT2 : public DecoderModel<GPT2Architecture<Config, Positions>, B, W, HeadW> {
    using Base = DecoderModel<GPT2Architecture<Config, Positions>, B, W, HeadW>;

public:
    using Base::Base;
    using Base::load;
    static constexpr std::size_t n_layer = Config::n_layer, n_head = Config::n_head, n_inner = Config::n_inner;

    // GPT-2's checkpoints (models/gpt2_checkpoints.hpp) with the layer norms' epsilon and whether
    // the head is tied.
    void load(const Checkpoint& file, float layer_norm_eps, bool tie_word_embeddings = true) {
        Base::load(file, Gpt2LoadOptions{layer_norm_eps, tie_word_embeddings});
    }
    // From a Hugging Face safetensors checkpoint (plain or "transformer."-prefixed names; the
    // attn.bias / attn.masked_bias buffers are ignored).
    void load(const io::SafetensorsFile& file, float layer_norm_eps = 1e-5f, bool tie_word_embeddings = true) {
        load(io::SafetensorsShards(file), layer_norm_eps, tie_word_embeddings);
    }
    // From a sharded one (model.safetensors.index.json's shards).
    void load(const io::SafetensorsShards& shards, float layer_norm_eps = 1e-5f, bool tie_word_embeddings = true) {
        Base::load(SafetensorsGpt2Checkpoint(shards), Gpt2LoadOptions{layer_norm_eps, tie_word_embeddings});
    }
};

}  // namespace tessera
