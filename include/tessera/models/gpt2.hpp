#pragma once
// GPT2<Config, Backend, W>: the whole model, composed from the nn types, its matrices (the
// four projections of each block) stored as W: float, bf16, Q8_0 or Q4_0
// (core/weight_formats.hpp), quantized when loaded; the tied embedding / LM head as HeadW
// (W, except a Q8_0 head for Q4_0: head_weight_t). Position embeddings, layer norms, biases,
// activations and the KV cache stay float.
//
//   ids --wte + positions--> x (T, C) --DecoderBlock x L (KV cache appended)--> x
//       --ln_f--> x_last (C) --· wteᵀ (tied head)--> logits (V)
//
// prefill() runs a sequence (continuing from the current position), decode() one token; both
// return the logits of the last position. Every buffer decoding needs, for the whole context,
// is allocated by the time the first prefill returns, so the decode loop allocates nothing. On
// a backend that can replay a queued step as a graph (RunsGraphs: CUDA), each one-token step
// runs as one graph.
//
// Config fixes the shape at compile time (GPT2Small) or leaves it to run time (GPT2Dynamic,
// any checkpoint); both are the same templates over the same kernels.
#include <cstddef>     // std::size_t
#include <optional>    // std::optional
#include <span>        // std::span
#include <string>      // std::string, std::to_string
#include <type_traits> // std::is_same_v
#include <vector>      // std::vector

#include <tessera/backend/backend.hpp>        // RunsGraphs
#include <tessera/core/error.hpp>             // ArgumentError
#include <tessera/core/tensor.hpp>            // Tensor
#include <tessera/core/token_id.hpp>          // TokenId
#include <tessera/core/weight_formats.hpp>    // WeightType, WeightFormat
#include <tessera/io/safetensors.hpp>         // SafetensorsFile
#include <tessera/models/gpt2_checkpoints.hpp>  // SafetensorsGpt2Checkpoint
#include <tessera/models/gpt2_config.hpp>     // GPT2Config
#include <tessera/nn/decoder_block.hpp>       // DecoderBlock, BlockScratch
#include <tessera/nn/embedding.hpp>           // Embedding
#include <tessera/nn/layer_norm.hpp>          // LayerNorm
#include <tessera/nn/parameter.hpp>           // Checkpoint, WeightSource
#include <tessera/nn/positions.hpp>           // LearnedPositions, SinusoidalPositions
#include <tessera/ops/matrix_products.hpp>    // gemm, gemv

namespace tessera {

template <class Config, class B, WeightType W = float,
          template <std::size_t, std::size_t, class> class Positions = LearnedPositions, WeightType HeadW = head_weight_t<W>>
class GPT2 {
    static_assert(RunsWeightsAs<B, W> && RunsWeightsAs<B, HeadW>,
                  "GPT2: this backend has no kernels for weights stored in this format.");

public:
    using config = Config;
    using weight_type = W;
    using head_weight_type = HeadW;
    static constexpr std::size_t n_layer = Config::n_layer, n_head = Config::n_head, n_embd = Config::n_embd,
                                 n_ctx = Config::n_ctx, vocab_size = Config::vocab_size, n_inner = Config::n_inner;
    using Block = DecoderBlock<n_embd, n_head, n_inner, n_ctx, B, W>;

    // Weights start at zero; load() fills them. A fully static Config needs no shape.
    explicit GPT2(B& backend)
        requires Config::is_static
        : GPT2(backend, Config::shape()) {}
    // `shape` must fit Config's static dimensions (any shape for GPT2Dynamic).
    GPT2(B& backend, const GPT2Shape& shape)
        : backend_(&backend),
          shape_(checked(shape)),
          wte_(shape.vocab_size, shape.n_embd),
          positions_(shape.n_ctx, shape.n_embd),
          ln_f_(shape.n_embd),
          scratch_(shape.n_embd, shape.n_inner),
          x_(0, shape.n_embd),
          logits_(shape.vocab_size),
          host_logits_(B::host_accessible ? 0 : shape.vocab_size) {
        blocks_.reserve(shape.n_layer);
        caches_.reserve(shape.n_layer);
        for (std::size_t i = 0; i < shape.n_layer; ++i) {
            blocks_.emplace_back(shape.n_embd, shape.n_head, shape.n_inner);
            caches_.emplace_back(shape.n_ctx, shape.n_head, shape.head_dim());
        }
    }

    // From a checkpoint (nn/parameter.hpp; GPT-2's files: models/gpt2_checkpoints.hpp), whose
    // shapes are checked against the model's. The head is tied to wte unless
    // `tie_word_embeddings` is false, when lm_head.weight must exist (as Hugging Face does: a
    // tied model ignores a stored lm_head.weight).
    void load(const Checkpoint& file, float layer_norm_eps = 1e-5f, bool tie_word_embeddings = true) {
        const WeightSource root{file, ""};
        wte_.load(root, "wte.weight");
        positions_.load(root, "wpe.weight");
        for (std::size_t i = 0; i < n_layers(); ++i) blocks_[i].load(root.sub("h." + std::to_string(i) + "."), layer_norm_eps);
        ln_f_.load(root, "ln_f");
        ln_f_.eps = layer_norm_eps;
        lm_head_.reset();
        if (!tie_word_embeddings) {
            lm_head_.emplace(shape_.vocab_size, shape_.n_embd);
            lm_head_->load(root, "lm_head.weight");
        }
        reset();
    }
    // From a Hugging Face safetensors checkpoint (plain or "transformer."-prefixed names; the
    // attn.bias / attn.masked_bias buffers are ignored).
    void load(const io::SafetensorsFile& file, float layer_norm_eps = 1e-5f, bool tie_word_embeddings = true) {
        load(SafetensorsGpt2Checkpoint(file), layer_norm_eps, tie_word_embeddings);
    }

    // Appends tokens at the current position; returns the last position's logits (V), valid
    // until the next call.
    std::span<const float> prefill(std::span<const TokenId> tokens) {
        const std::size_t t = admit(tokens);
        const auto step = [&] {
            const auto x = run_blocks(tokens);
            const auto normed = scratch_.normed.view().rows(0, 1);
            ln_f_(*backend_, x.rows(t - 1, 1), normed);
            gemv(*backend_, head(), normed.flat(), logits_);
        };
        if constexpr (RunsGraphs<B>) {
            if (t == 1) backend_->run_as_graph(step);
            else step();
        } else {
            step();
        }
        position_ += t;
        if constexpr (B::host_accessible) {
            return {logits_.data(), logits_.size()};
        } else {
            B::download(logits_.data(), host_logits_.data(), host_logits_.size());
            return host_logits_;
        }
    }

    // One more token (the decode step): prefill of a single token.
    std::span<const float> decode(TokenId token) { return prefill(std::span<const TokenId>(&token, 1)); }

    // Appends tokens; returns every position's logits, row-major [T][V] (allocates T·V floats).
    std::vector<float> prefill_all(std::span<const TokenId> tokens) {
        const std::size_t t = admit(tokens);
        const auto x = run_blocks(tokens);
        position_ += t;
        const auto normed = scratch_.normed.view().rows(0, t);
        ln_f_(*backend_, x, normed);
        Tensor<float, Extents<dyn, vocab_size>, B> all(t, shape_.vocab_size);
        gemm(*backend_, normed, head(), all);
        return to_host(all);
    }

    const GPT2Shape& shape() const noexcept { return shape_; }
    std::size_t context_length() const noexcept { return shape_.n_ctx; }
    std::size_t vocabulary_size() const noexcept { return shape_.vocab_size; }
    std::size_t n_layers() const noexcept { return shape_.n_layer; }
    // "gpt2 (124M): n_layer 12, n_head 12, ..." for logs and --help.
    std::string description() const {
        std::string weights = std::string(WeightFormat<W>::name);
        if constexpr (!std::is_same_v<HeadW, W>) weights += " (head " + std::string(WeightFormat<HeadW>::name) + ")";
        return std::string(Config::name) + ": " + shape_.describe() + ", weights " + weights;
    }

    // Forgets the sequence: the next prefill starts at position 0.
    void reset() noexcept { position_ = 0; }
    std::size_t position() const noexcept { return position_; }

private:
    static const GPT2Shape& checked(const GPT2Shape& s) {
        if (s.n_layer == 0 || s.n_head == 0 || s.n_embd == 0 || s.n_ctx == 0 || s.vocab_size == 0 || s.n_inner == 0) {
            throw ArgumentError("GPT2: every dimension must be positive: " + s.describe());
        }
        if (s.n_embd % s.n_head != 0) {
            throw ArgumentError("GPT2: n_embd " + std::to_string(s.n_embd) + " is not a multiple of n_head " +
                                std::to_string(s.n_head));
        }
        if (!Config::admits(s)) {
            throw ArgumentError(std::string("GPT2: the shape ") + s.describe() + " does not fit the type " + Config::name);
        }
        return s;
    }

    const auto& head() const { return lm_head_ ? lm_head_->table : wte_.table; }

    // Checks that tokens fit after the current position and sizes all scratch for them and for
    // attention over the whole context (before anything is queued: a graph capture may not
    // allocate, and decoding must not). Returns their count.
    std::size_t admit(std::span<const TokenId> tokens) {
        const std::size_t t = tokens.size();
        const std::size_t ctx = shape_.n_ctx;
        if (t == 0) throw ArgumentError("GPT2: no tokens to run");
        if (t > ctx - position_) {
            throw ArgumentError("GPT2: " + std::to_string(t) + " tokens at position " + std::to_string(position_) +
                                " exceed the context of " + std::to_string(ctx) + " positions");
        }
        scratch_.reserve(t);
        if (x_.extent(0) < t) x_ = Tensor<float, Extents<dyn, n_embd>, B>(t, shape_.n_embd);
        if constexpr (ReservesAttentionScratch<B>) backend_->reserve_attention(t, ctx);
        return t;
    }

    // Queues the blocks over tokens at positions [position_, position_ + T); returns x (T, C).
    TensorView<float, Extents<dyn, n_embd>, B> run_blocks(std::span<const TokenId> tokens) {
        const auto x = x_.view().rows(0, tokens.size());
        wte_(*backend_, tokens, x);
        positions_.add_to(*backend_, x, position_);
        for (std::size_t i = 0; i < n_layers(); ++i) blocks_[i](*backend_, x, caches_[i], position_, scratch_);
        return x;
    }

    B* backend_;
    GPT2Shape shape_;
    Embedding<vocab_size, n_embd, B, HeadW> wte_;           // (V, C), also the tied head
    Positions<n_ctx, n_embd, B> positions_;                 // (Ctx, C)
    std::vector<Block> blocks_;                             // n_layer
    LayerNorm<n_embd, B> ln_f_;                             // (C)
    std::optional<Embedding<vocab_size, n_embd, B, HeadW>> lm_head_;  // (V, C) when untied
    std::vector<typename Block::Cache> caches_;             // n_layer x (Ctx, H, D) keys and values
    typename Block::Scratch scratch_;                       // per-block activations
    Tensor<float, Extents<dyn, n_embd>, B> x_;              // (cap, C) residual stream
    Tensor<float, Extents<vocab_size>, B> logits_;          // (V)
    std::vector<float> host_logits_;                        // (V) on the host, for device backends
    std::size_t position_ = 0;
};

}  // namespace tessera
