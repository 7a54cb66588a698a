#pragma once
// DecoderModel<Arch, Backend, W, HeadW>: a decoder-only language model, whatever its
// architecture: the token embedding, Arch's blocks, a final norm and the LM head (tied to the
// embedding, or its own table), and all that does not depend on the architecture: sequences
// and their KV caches, prefill and decode steps, several sequences in one step (continuous
// batching), admission, logits, CUDA graphs. An architecture (GPT2Architecture in
// models/gpt2.hpp, LlamaArchitecture in models/llama.hpp) is a policy type naming its parts:
//
//   ids --embedding (+ Arch's positions)--> x (T, C) --Arch::Block x L (KV cache appended)--> x
//       --final norm--> x_last (C) --· headᵀ--> logits (V)
//
// The blocks' matrices are stored as W: float, bf16, Q8_0 or Q4_0 (core/weight_formats.hpp),
// quantized when loaded; the embedding / LM head as HeadW. Norms, biases and activations stay
// float; the KV cache is float, bf16 or q8_0 (use_kv_cache).
//
// prefill() runs a sequence (continuing from the current position), decode() one token; both
// return the logits of the last position. Every buffer decoding needs, for the whole context,
// is allocated by the time the first prefill returns, so the decode loop allocates nothing. On
// a backend that can replay a queued step as a graph (RunsGraphs: CUDA), each one-token step
// runs as one graph.
//
// An architecture provides:
//   config: static dimensions n_embd, n_ctx, vocab_size (dyn: any), name, is_static, admits();
//   Shape (n_layer, n_embd, n_ctx, vocab_size, head_dim(), kv_width(), describe()), checked by
//     check(shape); Options: what load() takes besides the checkpoint; model_name for errors;
//   runs_on<B>: whether backend B has the kernels its layers need;
//   Block<B, W> (with Cache and Scratch), Positions<B>, FinalNorm<B>, each made from the shape
//     (make_block, make_cache, make_scratch, make_positions, make_final_norm);
//   the checkpoint's names (embedding_name, positions_name, layer_prefix, final_norm_name,
//     head_name), norm_eps(shape, options) and tied(shape, options).
#include <cstddef>     // std::size_t
#include <memory>      // std::unique_ptr, std::make_unique
#include <optional>    // std::optional
#include <span>        // std::span
#include <string>      // std::string, std::to_string
#include <type_traits> // std::is_same_v
#include <vector>      // std::vector

#include <tessera/backend/backend.hpp>        // RunsGraphs
#include <tessera/core/error.hpp>             // ArgumentError
#include <tessera/core/task_ref.hpp>          // TaskRef
#include <tessera/core/tensor.hpp>            // Tensor
#include <tessera/core/token_id.hpp>          // TokenId
#include <tessera/core/weight_formats.hpp>    // WeightType, WeightFormat
#include <tessera/models/sequence.hpp>        // SequenceState, SequenceTokens
#include <tessera/nn/embedding.hpp>           // Embedding
#include <tessera/nn/kv_cache.hpp>            // KvPrecision, HasKvCacheOf, CacheRows
#include <tessera/nn/parameter.hpp>           // Checkpoint, WeightSource
#include <tessera/ops/elementwise.hpp>        // copy
#include <tessera/ops/matrix_products.hpp>    // gemv

namespace tessera {

// Calls f.template operator()<HeadW>() with the embedding / head format a model of W matrices
// and rows of `width` weights on B keeps: HeadFormat's wide one where the rows are whole
// super-blocks and B runs it (a Q4_0 or K-quant model's Q6_K head), else its narrow one (the
// loaders' run-time head_weight_t).
template <WeightType W, class B, class F>
decltype(auto) with_head_type(std::size_t width, F&& f) {
    using Wide = typename HeadFormat<W>::wide;
    using Narrow = typename HeadFormat<W>::narrow;
    if constexpr (!std::is_same_v<Wide, Narrow> && RunsWeightsAs<B, Wide>) {
        if (wide_head_fits<W>(width)) return f.template operator()<Wide>();
    }
    return f.template operator()<Narrow>();
}

template <class Arch, class B, WeightType W = float, WeightType HeadW = head_weight_t<W, Arch::config::n_embd>>
class DecoderModel {
    static_assert(RunsWeightsAs<B, W> && RunsWeightsAs<B, HeadW>,
                  "DecoderModel: this backend has no kernels for weights stored in this format.");
    static_assert(Arch::template runs_on<B>, "DecoderModel: this backend lacks a kernel the architecture needs.");

public:
    using architecture = Arch;
    using config = typename Arch::config;
    using Shape = typename Arch::Shape;
    using Options = typename Arch::Options;
    using weight_type = W;
    using head_weight_type = HeadW;
    static constexpr std::size_t n_embd = config::n_embd, n_ctx = config::n_ctx, vocab_size = config::vocab_size;
    using Block = typename Arch::template Block<B, W>;

    // Weights start at zero; load() fills them. A fully static config needs no shape.
    explicit DecoderModel(B& backend)
        requires config::is_static
        : DecoderModel(backend, config::shape()) {}
    // `shape` must fit config's static dimensions (any shape for a dynamic one). The buffers are
    // allocated with the backend active on this thread (ActivatesOnThread: its CUDA device).
    DecoderModel(B& backend, const Shape& shape);
    ~DecoderModel();

private:
    // `active` (the guard above) lives until this constructor returns.
    template <class Active>
    DecoderModel(B& backend, const Shape& shape, const Active&)
        : backend_(&backend),
          shape_(checked(shape)),
          wte_(shape.vocab_size, shape.n_embd),
          positions_(Arch::template make_positions<B>(shape)),
          ln_f_(Arch::template make_final_norm<B>(shape)),
          scratch_(Arch::template make_scratch<B>(shape)),
          x_(0, shape.n_embd),
          logits_(1, shape.vocab_size),
          host_logits_(B::host_accessible ? 0 : shape.vocab_size),
          own_(shape, shape.n_ctx) {
        blocks_.reserve(shape.n_layer);
        for (std::size_t i = 0; i < shape.n_layer; ++i) blocks_.push_back(Arch::template make_block<B, W>(shape));
    }

public:

    // A sequence's keys and values in every layer, for `context` positions (at most the
    // model's), and its position: what step() runs. The model's own one serves prefill() and
    // decode().
    class Sequence final : public SequenceState {
    public:
        Sequence(const Shape& shape, std::size_t context, KvPrecision kv = KvPrecision::f32) : SequenceState(context) {
            store_keys_as(shape, kv);
        }
        KvPrecision kv_precision() const noexcept { return caches_.front().precision; }
        // Bytes of its keys and values in all layers.
        std::size_t kv_bytes() const noexcept {
            std::size_t bytes = 0;
            for (const auto& c : caches_) bytes += c.bytes();
            return bytes;
        }

    private:
        friend class DecoderModel;
        void store_keys_as(const Shape& shape, KvPrecision kv) {
            std::vector<typename Block::Cache> caches;
            caches.reserve(shape.n_layer);
            for (std::size_t i = 0; i < shape.n_layer; ++i) caches.push_back(Arch::template make_cache<B, W>(shape, context_length(), kv));
            caches_ = std::move(caches);
        }
        std::vector<typename Block::Cache> caches_;  // n_layer x (context, H, D) keys and values
    };

    // Keys and values of the model's own sequence, and of those new_sequence makes from now on,
    // stored as `kv`: bf16 halves their memory, q8_0 takes 0.27 of it (a backend with
    // HasKvCacheOf: the CPU; others throw ArgumentError, as q8_0 does for a head_dim that is not
    // a multiple of 32). Resets the model's own sequence.
    void use_kv_cache(KvPrecision kv) {
        check_kv_precision<B>(kv, shape_.head_dim());
        [[maybe_unused]] const auto active = tessera::activate(*backend_);
        if (kv != own_.kv_precision()) own_.store_keys_as(shape_, kv);
        own_.reset();
        kv_precision_ = kv;
    }
    KvPrecision kv_cache() const noexcept { return kv_precision_; }
    // Bytes of the model's own sequence's keys and values.
    std::size_t kv_bytes() const noexcept { return own_.kv_bytes(); }

    // A new sequence of `context` positions (0: the model's context), at position 0, its keys
    // and values stored as use_kv_cache said (f32 unless told).
    std::unique_ptr<Sequence> new_sequence(std::size_t context = 0) const {
        if (context == 0) context = shape_.n_ctx;
        if (context > shape_.n_ctx) {
            throw ArgumentError(std::string(Arch::model_name) + ": a sequence of " + std::to_string(context) + " positions exceeds the model's context of " +
                                std::to_string(shape_.n_ctx));
        }
        [[maybe_unused]] const auto active = tessera::activate(*backend_);
        return std::make_unique<Sequence>(shape_, context, kv_precision_);
    }

    // From a checkpoint (nn/parameter.hpp) in the architecture's names, whose shapes are
    // checked against the model's. The head is the embedding unless Arch::tied says otherwise
    // for this shape and these options; then its own table must exist (as Hugging Face does: a
    // tied model ignores a stored lm_head.weight).
    void load(const Checkpoint& file, const Options& options = {});

    // Appends tokens at the current position; returns the last position's logits (V), valid
    // until the next call.
    // A long prompt runs in chunks of prefill_chunk tokens, each over the keys before it: the
    // activations' scratch then holds a chunk, not the prompt (16K tokens through a 4,864-wide
    // feed-forward would need 0.6 GB of it), and attention's scratch grows with the keys only.
    std::span<const float> prefill(std::span<const TokenId> tokens) {
        tokens = run_leading_chunks(tokens);
        const SequenceTokens one{&own_, tokens};
        return step(std::span<const SequenceTokens>(&one, 1));
    }
    static constexpr std::size_t prefill_chunk = 512;

    // Runs several sequences' tokens in one step (continuous batching): the projections run as
    // one product over all their rows, attention per sequence over its own cache. Returns each
    // sequence's last-position logits, row-major [S][V], valid until the next call. A
    // sequence's results do not depend on the others in the step as long as the products take
    // the same path (cpu::arranged_activation_precision: by the step's row count). More than one
    // sequence needs a backend that copies within its memory (HasCopy).
    std::span<const float> step(std::span<const SequenceTokens> batch) {
        [[maybe_unused]] const auto active = tessera::activate(*backend_);
        const std::size_t n = run_step(batch, true);
        if constexpr (B::host_accessible) {
            return {logits_.data(), n * shape_.vocab_size};
        } else {
            if constexpr (HasAsyncDownload<B>) backend_->synchronize();  // the copy queued in the step
            else backend_->download(logits_.data(), host_logits_.data(), n * shape_.vocab_size);
            return {host_logits_.data(), n * shape_.vocab_size};
        }
    }

    // Appends tokens and returns the token with the largest last-position logit (the lowest id
    // among equals): what greedy sampling picks, found where the logits are (a device backend
    // copies one id instead of V logits). Nothing when a logit is NaN or +infinity, or none is
    // above -infinity: last_logits() then has them, for the sampler to name the fault.
    std::optional<TokenId> prefill_argmax(std::span<const TokenId> tokens)
        requires HasArgmaxRows<B>
    {
        [[maybe_unused]] const auto active = tessera::activate(*backend_);
        tokens = run_leading_chunks(tokens);
        const SequenceTokens one{&own_, tokens};
        run_step(std::span<const SequenceTokens>(&one, 1), false);
        std::int32_t id = -1;
        backend_->argmax_rows(MatrixView<const float, B>(logits_.data(), DynExtents<2>(1, shape_.vocab_size)),
                              std::span<std::int32_t>(&id, 1));
        if (id < 0) return std::nullopt;
        return static_cast<TokenId>(id);
    }
    // The last position's logits (V) of the last prefill, decode or prefill_argmax, on the host.
    std::span<const float> last_logits() {
        if constexpr (B::host_accessible) {
            return {logits_.data(), shape_.vocab_size};
        } else {
            [[maybe_unused]] const auto active = tessera::activate(*backend_);
            backend_->download(logits_.data(), host_logits_.data(), shape_.vocab_size);
            return {host_logits_.data(), shape_.vocab_size};
        }
    }

    // Room for steps over up to `sequences` sequences and `rows` tokens in all (and attention
    // over the whole context), so that such steps allocate nothing. More than one sequence also
    // lets the backend pack the weights for products of several rows, where it keeps such a
    // layout (the CPU's Q8_0 head: a second copy of the table, 1.1-1.8x faster products of 2-16
    // rows; the layers' Q8_0 weights are arranged in place when loaded instead).
    void reserve_steps(std::size_t sequences, std::size_t rows);

    // task(i) for every i in [0, n): on the backend's thread pool where it has one (the CPU's;
    // between steps its threads are idle), otherwise in order on this thread. Tasks must not throw.
    void run_host_tasks(std::size_t n, TaskRef task) {
        if constexpr (requires { backend_->pool().parallel_for(n, 1, [](std::size_t, std::size_t) {}); }) {
            backend_->pool().parallel_for(n, 1, [&](std::size_t begin, std::size_t end) {
                for (std::size_t i = begin; i < end; ++i) task(i);
            });
        } else {
            for (std::size_t i = 0; i < n; ++i) task(i);
        }
    }

    // reserve_steps does this for more than one sequence; explicit, it packs now.
    void prepare_batches();

    // One more token (the decode step): prefill of a single token.
    std::span<const float> decode(TokenId token) { return prefill(std::span<const TokenId>(&token, 1)); }

    // Appends tokens; returns every position's logits, row-major [T][V] (allocates T·V floats).
    std::vector<float> prefill_all(std::span<const TokenId> tokens);

    const Shape& shape() const noexcept { return shape_; }
    std::size_t context_length() const noexcept { return shape_.n_ctx; }
    std::size_t vocabulary_size() const noexcept { return shape_.vocab_size; }
    std::size_t n_layers() const noexcept { return shape_.n_layer; }
    // "gpt2 (124M): n_layer 12, n_head 12, ..." for logs and --help.
    std::string description() const {
        std::string weights = std::string(WeightFormat<W>::name);
        if constexpr (!std::is_same_v<HeadW, W>) weights += " (head " + std::string(WeightFormat<HeadW>::name) + ")";
        return std::string(config::name) + ": " + shape_.describe() + ", weights " + weights;
    }

    // Forgets the sequence: the next prefill starts at position 0.
    void reset() noexcept { own_.reset(); }
    std::size_t position() const noexcept { return own_.position(); }

private:
    static const Shape& checked(const Shape& s) {
        Arch::check(s);  // ArgumentError naming what is wrong
        if (!config::admits(s)) {
            throw ArgumentError(std::string(Arch::model_name) + ": the shape " + s.describe() + " does not fit the type " + config::name);
        }
        return s;
    }

    // ArgumentError unless `tokens` more fit in the sequence after its position.
    static void check_fits(const Sequence& seq, std::size_t tokens) {
        if (tokens > seq.context_length() - seq.position()) {
            throw ArgumentError(std::string(Arch::model_name) + ": " + std::to_string(tokens) + " tokens at position " +
                                std::to_string(seq.position()) + " exceed the context of " + std::to_string(seq.context_length()) +
                                " positions");
        }
    }

    // Runs all but the last chunk of prefill_chunk tokens (their logits unused) after checking
    // that the whole fits; returns the rest.
    std::span<const TokenId> run_leading_chunks(std::span<const TokenId> tokens) {
        if (tokens.size() <= prefill_chunk) return tokens;
        check_fits(own_, tokens.size());
        [[maybe_unused]] const auto active = tessera::activate(*backend_);
        while (tokens.size() > prefill_chunk) {
            const SequenceTokens chunk{&own_, tokens.first(prefill_chunk)};
            run_step(std::span<const SequenceTokens>(&chunk, 1), false);
            tokens = tokens.subspan(prefill_chunk);
        }
        return tokens;
    }

    const auto& head_layer() const { return lm_head_ ? *lm_head_ : wte_; }
    auto& head_layer() { return lm_head_ ? *lm_head_ : wte_; }
    const auto& head() const { return head_layer().table; }  // (as stored unless ArrangesTables)

    // Queues the step (as one graph for a one-token step where the backend has graphs), and,
    // on a device backend with async downloads and when `download` is set, the copy of the
    // logits to host_logits_ within it; advances each sequence. Returns the sequences' count.
    std::size_t run_step(std::span<const SequenceTokens> batch, bool download);

    Sequence& sequence_of(const SequenceTokens& s) const {
        auto* seq = dynamic_cast<Sequence*>(s.sequence);
        if (seq == nullptr) throw ArgumentError(std::string(Arch::model_name) + ": a sequence in the step is null or was made by a different model type");
        if (seq->caches_.size() != shape_.n_layer ||
            (shape_.n_layer > 0 && seq->caches_[0].width() != shape_.kv_width())) {
            throw ArgumentError(std::string(Arch::model_name) + ": a sequence in the step was made by a model of another shape");
        }
        return *seq;
    }

    // Checks that each sequence's tokens fit after its position (and that no sequence comes
    // twice) and sizes all scratch for them and for attention over the whole context (before
    // anything is queued: a graph capture may not allocate, and decoding must not). Returns the
    // rows in all.
    std::size_t admit(std::span<const SequenceTokens> batch) {
        if (batch.empty()) throw ArgumentError(std::string(Arch::model_name) + ": no sequences to run");
        std::size_t rows = 0;
        bool widened_keys = false;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const Sequence& seq = sequence_of(batch[i]);
            widened_keys = widened_keys || seq.kv_precision() != KvPrecision::f32;
            const std::size_t t = batch[i].tokens.size();
            if (t == 0) throw ArgumentError(std::string(Arch::model_name) + ": no tokens to run");
            check_fits(seq, t);
            for (std::size_t j = 0; j < i; ++j) {
                if (batch[j].sequence == batch[i].sequence) throw ArgumentError(std::string(Arch::model_name) + ": a sequence appears twice in one step");
            }
            rows += t;
        }
        reserve_steps(batch.size(), rows);
        if (widened_keys) reserve_keys(rows, batch.size() > 1, true);  // also when made before use_kv_cache(f32)
        return rows;
    }

    // Block scratch for `rows` rows, with the keys and values staged before they go to each
    // cache for `several` sequences or a bf16 or q8_0 cache (`widened`), and then the backend's
    // room to widen those keys and values in attention.
    void reserve_keys(std::size_t rows, bool several, bool widened) {
        scratch_.reserve(rows, several || widened);
        if constexpr (HasBf16KvCache<B> || HasQ8KvCache<B>) {
            if (widened) backend_->reserve_attention(rows, shape_.n_ctx, shape_.head_dim(), true, query_heads_per_kv_head());
        }
    }
    // Query heads that read each key/value head (1 but for grouped-query attention).
    std::size_t query_heads_per_kv_head() const noexcept { return shape_.n_head * shape_.head_dim() / shape_.kv_width(); }

    // Queues the blocks over the batch's tokens (in order: rows [0, rows)); returns x (rows, C).
    // slices_ holds each sequence's rows afterwards.
    TensorView<float, Extents<dyn, n_embd>, B> run_blocks(std::span<const SequenceTokens> batch, std::size_t rows);

    B* backend_;
    Shape shape_;
    Embedding<vocab_size, n_embd, B, HeadW> wte_;           // (V, C), also the tied head
    typename Arch::template Positions<B> positions_;        // added to the embeddings, or nothing
    std::vector<Block> blocks_;                             // n_layer
    bool batches_prepared_ = false;                         // prepare_batches ran
    typename Arch::template FinalNorm<B> ln_f_;             // (C)
    std::optional<Embedding<vocab_size, n_embd, B, HeadW>> lm_head_;  // (V, C) when untied
    typename Block::Scratch scratch_;                       // per-block activations
    Tensor<float, Extents<dyn, n_embd>, B> x_;              // (cap, C) residual stream
    Tensor<float, Extents<dyn, vocab_size>, B> logits_;     // (sequences cap, V)
    host_buffer_t<B, float> host_logits_;                   // (sequences cap, V) on the host, for device backends
    std::vector<TokenId> ids_;                              // the step's tokens, all sequences
    std::vector<CacheRows<typename Block::Cache>> slices_;  // the step's sequences, one layer's caches
    KvPrecision kv_precision_ = KvPrecision::f32;           // of own_, and of new sequences
    Sequence own_;                                          // what prefill() and decode() run
};

// The constructor, the destructor and the members that instantiate the layers' kernels,
// defined outside the class: not inline, so that an explicit instantiation declaration
// (models/compiled_models.hpp) keeps a program from compiling them where tessera::models holds
// them compiled.
template <class Arch, class B, WeightType W, WeightType HeadW>
DecoderModel<Arch, B, W, HeadW>::DecoderModel(B& backend, const Shape& shape) : DecoderModel(backend, shape, tessera::activate(backend)) {}

template <class Arch, class B, WeightType W, WeightType HeadW>
DecoderModel<Arch, B, W, HeadW>::~DecoderModel() = default;

template <class Arch, class B, WeightType W, WeightType HeadW>
void DecoderModel<Arch, B, W, HeadW>::load(const Checkpoint& file, const Options& options) {
    [[maybe_unused]] const auto active = tessera::activate(*backend_);
    const WeightSource<B> root{file, "", *backend_};
    const float eps = Arch::norm_eps(shape_, options);
    wte_.load(root, Arch::embedding_name);
    positions_.load(root, Arch::positions_name);
    for (std::size_t i = 0; i < n_layers(); ++i) blocks_[i].load(root.sub(Arch::layer_prefix + std::to_string(i) + "."), eps);
    ln_f_.load(root, Arch::final_norm_name);
    ln_f_.eps = eps;
    lm_head_.reset();
    if (!Arch::tied(shape_, options)) {
        lm_head_.emplace(shape_.vocab_size, shape_.n_embd);
        lm_head_->load(root, Arch::head_name);
    }
    if (batches_prepared_) prepare_batches();  // the packed layouts follow the new weights
    reset();
}

template <class Arch, class B, WeightType W, WeightType HeadW>
void DecoderModel<Arch, B, W, HeadW>::reserve_steps(std::size_t sequences, std::size_t rows) {
    if (sequences == 0 || rows < sequences) throw ArgumentError(std::string(Arch::model_name) + ": reserve_steps needs rows >= sequences >= 1");
    [[maybe_unused]] const auto active = tessera::activate(*backend_);
    if (sequences > 1 && !HasCopy<B>) {
        throw ArgumentError(std::string(Arch::model_name) + ": the " + B::name + " backend runs one sequence per step");
    }
    reserve_keys(rows, sequences > 1, kv_precision_ != KvPrecision::f32);
    if (x_.extent(0) < rows) x_ = Tensor<float, Extents<dyn, n_embd>, B>(rows, shape_.n_embd);
    if (logits_.extent(0) < sequences) logits_ = Tensor<float, Extents<dyn, vocab_size>, B>(sequences, shape_.vocab_size);
    if (!B::host_accessible && host_logits_.size() < sequences * shape_.vocab_size) {
        host_logits_ = host_buffer_t<B, float>(sequences * shape_.vocab_size);
    }
    if (ids_.capacity() < rows) ids_.reserve(rows);
    if (slices_.capacity() < sequences) slices_.reserve(sequences);
    if constexpr (ReservesAttentionScratch<B>) {
        backend_->reserve_attention(rows, shape_.n_ctx, shape_.head_dim(), false, query_heads_per_kv_head());
    }
    if (sequences > 1 && !batches_prepared_) prepare_batches();
}

template <class Arch, class B, WeightType W, WeightType HeadW>
void DecoderModel<Arch, B, W, HeadW>::prepare_batches() {
    [[maybe_unused]] const auto active = tessera::activate(*backend_);
    for (auto& block : blocks_) block.prepare_batches(*backend_);
    head_layer().prepare_batches(*backend_);
    batches_prepared_ = true;
}

template <class Arch, class B, WeightType W, WeightType HeadW>
std::vector<float> DecoderModel<Arch, B, W, HeadW>::prefill_all(std::span<const TokenId> tokens) {
    [[maybe_unused]] const auto active = tessera::activate(*backend_);
    const SequenceTokens one{&own_, tokens};
    const std::size_t t = admit(std::span<const SequenceTokens>(&one, 1));
    const auto x = run_blocks(std::span<const SequenceTokens>(&one, 1), t);
    own_.advance(t);
    const auto normed = scratch_.normed.view().rows(0, t);
    ln_f_(*backend_, x, normed);
    Tensor<float, Extents<dyn, vocab_size>, B> all(t, shape_.vocab_size);
    head_layer().project(*backend_, normed, all);
    return to_host(*backend_, all);
}

template <class Arch, class B, WeightType W, WeightType HeadW>
std::size_t DecoderModel<Arch, B, W, HeadW>::run_step(std::span<const SequenceTokens> batch, bool download) {
    const std::size_t rows = admit(batch);
    const std::size_t n = batch.size();
    const auto queue = [&] {
        const auto x = run_blocks(batch, rows);
        const auto normed = scratch_.normed.view().rows(0, n);
        if (n == 1) {
            ln_f_(*backend_, x.rows(rows - 1, 1), normed);
            if constexpr (ArrangesTables<B, HeadW>) {  // (the arranged table's one-row product)
                head_layer().project(*backend_, normed, logits_.view().rows(0, 1));
            } else {
                gemv(*backend_, head(), normed.flat(), logits_.view().rows(0, 1).flat());
            }
        } else if constexpr (HasCopy<B>) {  // each sequence's last row, then one product
            const auto last = scratch_.delta.view().rows(0, n);
            for (std::size_t i = 0; i < n; ++i) copy(*backend_, x.rows(slices_[i].row + slices_[i].count - 1, 1), last.rows(i, 1));
            ln_f_(*backend_, last, normed);
            head_layer().project(*backend_, normed, logits_.view().rows(0, n));
        }
        if constexpr (!B::host_accessible && HasAsyncDownload<B>) {
            if (download) backend_->download_async(logits_.data(), host_logits_.data(), n * shape_.vocab_size);
        }
    };
    if constexpr (RunsGraphs<B>) {
        if (rows == 1) backend_->run_as_graph(queue);
        else queue();
    } else {
        queue();
    }
    for (std::size_t i = 0; i < n; ++i) sequence_of(batch[i]).advance(batch[i].tokens.size());
    return n;
}

template <class Arch, class B, WeightType W, WeightType HeadW>
auto DecoderModel<Arch, B, W, HeadW>::run_blocks(std::span<const SequenceTokens> batch, std::size_t rows) -> TensorView<float, Extents<dyn, n_embd>, B> {
    const auto x = x_.view().rows(0, rows);
    ids_.clear();
    slices_.clear();
    for (const SequenceTokens& s : batch) {
        Sequence& seq = sequence_of(s);
        slices_.push_back({nullptr, seq.position(), ids_.size(), s.tokens.size()});
        ids_.insert(ids_.end(), s.tokens.begin(), s.tokens.end());
    }
    wte_(*backend_, ids_, x);
    for (const auto& slice : slices_) positions_.add_to(*backend_, x.rows(slice.row, slice.count), slice.first);
    for (std::size_t i = 0; i < n_layers(); ++i) {
        for (std::size_t j = 0; j < batch.size(); ++j) slices_[j].cache = &sequence_of(batch[j]).caches_[i];
        blocks_[i](*backend_, x, std::span<const CacheRows<typename Block::Cache>>(slices_), scratch_);
    }
    return x;
}

}  // namespace tessera
