#pragma once
// GPT2<Config, Backend>: the whole model, composed from the nn types.
//
//   ids --wte + positions--> x (T, C) --DecoderBlock x L (KV cache appended)--> x
//       --ln_f--> x_last (C) --· wteᵀ (tied head)--> logits (V)
//
// prefill() runs a sequence (continuing from the current position), decode() one token; both
// return the logits of the last position. Every buffer decoding needs is allocated by the
// time the first prefill returns, so the decode loop allocates nothing. On a backend that can
// replay a queued step as a graph (RunsGraphs: CUDA), each one-token step runs as one graph.
#include <cstddef>     // std::size_t
#include <optional>    // std::optional
#include <span>        // std::span
#include <string>      // std::to_string
#include <vector>      // std::vector

#include <tessera/backend/backend.hpp>        // RunsGraphs
#include <tessera/core/error.hpp>             // ArgumentError
#include <tessera/core/tensor.hpp>            // Tensor
#include <tessera/io/safetensors.hpp>         // SafetensorsFile
#include <tessera/models/gpt2_config.hpp>     // GPT2Config
#include <tessera/nn/decoder_block.hpp>       // DecoderBlock, BlockScratch
#include <tessera/nn/embedding.hpp>           // Embedding
#include <tessera/nn/layer_norm.hpp>          // LayerNorm
#include <tessera/nn/parameter.hpp>           // WeightSource
#include <tessera/nn/positions.hpp>           // LearnedPositions, SinusoidalPositions
#include <tessera/ops/matrix_products.hpp>    // gemm, gemv
#include <tessera/text/bpe_tokenizer.hpp>     // TokenId

namespace tessera {

template <class Config, class B, template <std::size_t, std::size_t, class> class Positions = LearnedPositions>
class GPT2 {
public:
    using config = Config;
    static constexpr std::size_t n_layer = Config::n_layer, n_head = Config::n_head, n_embd = Config::n_embd,
                                 n_ctx = Config::n_ctx, vocab_size = Config::vocab_size;
    using Block = DecoderBlock<n_embd, n_head, n_ctx, B>;

    // Weights start at zero; load() fills them.
    explicit GPT2(B& backend)
        : backend_(&backend), blocks_(n_layer), caches_(n_layer), host_logits_(B::host_accessible ? 0 : vocab_size) {}

    // From a safetensors checkpoint in Hugging Face's layout (plain or "transformer."-prefixed
    // names; the attn.bias / attn.masked_bias buffers are ignored; lm_head.weight is used when
    // present, otherwise the head is tied to wte). Shapes are checked against Config.
    void load(const io::SafetensorsFile& file, float layer_norm_eps = 1e-5f) {
        const WeightSource root{file, file.contains("transformer.wte.weight") ? "transformer." : ""};
        wte_.load(root, "wte.weight");
        positions_.load(root, "wpe.weight");
        for (std::size_t i = 0; i < n_layer; ++i) blocks_[i].load(root.sub("h." + std::to_string(i) + "."), layer_norm_eps);
        ln_f_.load(root, "ln_f");
        ln_f_.eps = layer_norm_eps;
        if (file.contains("lm_head.weight")) {
            lm_head_.emplace();
            lm_head_->load(WeightSource{file, ""}, "lm_head.weight");
        }
        reset();
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
            return {logits_.data(), vocab_size};
        } else {
            B::download(logits_.data(), host_logits_.data(), vocab_size);
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
        Tensor<float, Extents<dyn, vocab_size>, B> all(t);
        gemm(*backend_, normed, head(), all);
        return to_host(all);
    }

    static constexpr std::size_t context_length() noexcept { return n_ctx; }
    static constexpr std::size_t vocabulary_size() noexcept { return vocab_size; }

    // Forgets the sequence: the next prefill starts at position 0.
    void reset() noexcept { position_ = 0; }
    std::size_t position() const noexcept { return position_; }

private:
    const Tensor<float, Extents<vocab_size, n_embd>, B>& head() const { return lm_head_ ? lm_head_->table : wte_.table; }

    // Checks that tokens fit after the current position and sizes the scratch for them
    // (before anything is queued: a graph capture may not allocate). Returns their count.
    std::size_t admit(std::span<const TokenId> tokens) {
        const std::size_t t = tokens.size();
        if (t == 0) throw ArgumentError("GPT2: no tokens to run");
        if (t > n_ctx - position_) {
            throw ArgumentError("GPT2: " + std::to_string(t) + " tokens at position " + std::to_string(position_) +
                                " exceed the context of " + std::to_string(n_ctx) + " positions");
        }
        scratch_.reserve(t);
        if (x_.extent(0) < t) x_ = Tensor<float, Extents<dyn, n_embd>, B>(t);
        return t;
    }

    // Queues the blocks over tokens at positions [position_, position_ + T); returns x (T, C).
    TensorView<float, Extents<dyn, n_embd>, B> run_blocks(std::span<const TokenId> tokens) {
        const auto x = x_.view().rows(0, tokens.size());
        wte_(*backend_, tokens, x);
        positions_.add_to(*backend_, x, position_);
        for (std::size_t i = 0; i < n_layer; ++i) blocks_[i](*backend_, x, caches_[i], position_, scratch_);
        return x;
    }

    B* backend_;
    Embedding<vocab_size, n_embd, B> wte_;                  // (V, C), also the tied head
    Positions<n_ctx, n_embd, B> positions_;                 // (Ctx, C)
    std::vector<Block> blocks_;                             // n_layer
    LayerNorm<n_embd, B> ln_f_;                             // (C)
    std::optional<Embedding<vocab_size, n_embd, B>> lm_head_;  // (V, C) when untied
    std::vector<typename Block::Cache> caches_;             // n_layer x (Ctx, H, D) keys and values
    typename Block::Scratch scratch_;                       // per-block activations
    Tensor<float, Extents<dyn, n_embd>, B> x_{0};           // (cap, C) residual stream
    Tensor<float, Extents<vocab_size>, B> logits_;          // (V)
    std::vector<float> host_logits_;                        // (V) on the host, for device backends
    std::size_t position_ = 0;
};

}  // namespace tessera
