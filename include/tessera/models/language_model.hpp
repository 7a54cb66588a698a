#pragma once
// LanguageModel: a causal language model behind a run-time interface, for code that picks the
// model (its shape from config.json) or the backend at run time: the example programs, and host
// code that reaches a CUDA model compiled elsewhere (open_gpt2_cuda). The templates that take a
// model (Generator, evaluate_perplexity) accept either a GPT2<...> or a LanguageModel: both
// satisfy CausalLanguageModel. The virtual call per step costs nothing next to a forward pass.
#include <concepts>  // std::convertible_to
#include <cstddef>   // std::size_t
#include <memory>    // std::unique_ptr, std::shared_ptr
#include <optional>  // std::optional
#include <span>      // std::span
#include <string>    // std::string
#include <string_view>  // std::string_view
#include <utility>   // std::move
#include <vector>    // std::vector

#include <tessera/core/task_ref.hpp>  // TaskRef
#include <tessera/core/token_id.hpp>  // TokenId
#include <tessera/core/weight_formats.hpp>  // WeightFormat
#include <tessera/core/kv_precision.hpp>    // KvPrecision
#include <tessera/models/sequence.hpp>      // SequenceState, SequenceTokens

namespace tessera {

// What the generation loop needs of a model.
template <class M>
concept CausalLanguageModel = requires(M& m, const M& cm, std::span<const TokenId> ids, TokenId id) {
    { cm.context_length() } -> std::convertible_to<std::size_t>;
    { cm.vocabulary_size() } -> std::convertible_to<std::size_t>;
    { cm.position() } -> std::convertible_to<std::size_t>;
    { m.prefill(ids) } -> std::convertible_to<std::span<const float>>;
    { m.decode(id) } -> std::convertible_to<std::span<const float>>;
    m.reset();
};

// ... and what batched generation needs: sequences apart from the model, and a step over many.
template <class M>
concept BatchingLanguageModel = CausalLanguageModel<M> && requires(M& m, std::span<const SequenceTokens> batch, std::size_t n) {
    { m.new_sequence(n) } -> std::convertible_to<std::unique_ptr<SequenceState>>;
    { m.step(batch) } -> std::convertible_to<std::span<const float>>;
    m.reserve_steps(n, n);
};

// ... and lends its host threads: task(i) for every i in [0, n), perhaps at once (the CPU
// backend's pool); tasks must not throw. BatchGenerator samples its sequences' tokens so.
template <class M>
concept RunsHostTasks = requires(M& m, std::size_t n, TaskRef task) { m.run_host_tasks(n, task); };

// task(i) for every i in [0, n): on the model's host threads where it lends them, otherwise in
// order on this thread.
template <class M>
void run_host_tasks(M& model, std::size_t n, TaskRef task) {
    if constexpr (RunsHostTasks<M>) {
        model.run_host_tasks(n, task);
    } else {
        for (std::size_t i = 0; i < n; ++i) task(i);
    }
}

// ... and greedy decoding without the logits crossing to the host (GPT2::prefill_argmax): the
// next token when it is the largest logit's, or nothing (then last_logits() has the logits).
template <class M>
concept ArgmaxLanguageModel = CausalLanguageModel<M> && requires(M& m, std::span<const TokenId> ids) {
    { m.prefill_argmax(ids) } -> std::convertible_to<std::optional<TokenId>>;
    { m.last_logits() } -> std::convertible_to<std::span<const float>>;
};

// ... and what perplexity evaluation needs on top: every position's logits, [T][V].
template <class M>
concept ScoringLanguageModel = CausalLanguageModel<M> && requires(M& m, std::span<const TokenId> ids) {
    { m.prefill_all(ids) } -> std::convertible_to<std::vector<float>>;
};

class LanguageModel {
public:
    virtual ~LanguageModel() = default;
    virtual std::size_t context_length() const = 0;
    virtual std::size_t vocabulary_size() const = 0;
    virtual std::size_t position() const = 0;
    virtual std::span<const float> prefill(std::span<const TokenId> tokens) = 0;
    virtual std::span<const float> decode(TokenId token) = 0;
    virtual std::vector<float> prefill_all(std::span<const TokenId> tokens) = 0;
    virtual std::optional<TokenId> prefill_argmax(std::span<const TokenId> tokens) = 0;
    virtual std::span<const float> last_logits() = 0;
    virtual void reset() = 0;
    // Batched generation (GPT2::new_sequence, step, reserve_steps).
    virtual std::unique_ptr<SequenceState> new_sequence(std::size_t context = 0) const = 0;
    virtual std::span<const float> step(std::span<const SequenceTokens> batch) = 0;
    virtual void reserve_steps(std::size_t sequences, std::size_t rows) = 0;
    // task(i) for every i in [0, n), on the model's host threads where it has them (RunsHostTasks).
    virtual void run_host_tasks(std::size_t n, TaskRef task) = 0;
    // The model's shape and backend, e.g. "gpt2 (124M): n_layer 12, ..., vocab_size 50257 on cuda".
    virtual std::string description() const = 0;
    // How its matrices are stored ("f32", "q8_0", ...).
    virtual std::string_view weight_format() const = 0;
    // How the keys and values of its own sequence and of new sequences are stored
    // (GPT2::use_kv_cache: throws ArgumentError where the backend keeps f32 only).
    virtual void use_kv_cache(KvPrecision kv) = 0;
    virtual KvPrecision kv_cache() const = 0;
    // Bytes of the keys and values of its own sequence, for the whole context.
    virtual std::size_t kv_bytes() const = 0;
};

// The interface over a concrete model M, owning it and, in keep_alive, what it must not outlive
// (its backend, when the caller does not own that).
template <class M>
    requires ScoringLanguageModel<M> && BatchingLanguageModel<M> && ArgmaxLanguageModel<M>
class LanguageModelFor final : public LanguageModel {
public:
    LanguageModelFor(std::unique_ptr<M> model, std::string description, std::shared_ptr<void> keep_alive = nullptr)
        : keep_alive_(std::move(keep_alive)), model_(std::move(model)), description_(std::move(description)) {}

    std::size_t context_length() const override { return model_->context_length(); }
    std::size_t vocabulary_size() const override { return model_->vocabulary_size(); }
    std::size_t position() const override { return model_->position(); }
    std::span<const float> prefill(std::span<const TokenId> tokens) override { return model_->prefill(tokens); }
    std::span<const float> decode(TokenId token) override { return model_->decode(token); }
    std::vector<float> prefill_all(std::span<const TokenId> tokens) override { return model_->prefill_all(tokens); }
    std::optional<TokenId> prefill_argmax(std::span<const TokenId> tokens) override { return model_->prefill_argmax(tokens); }
    std::span<const float> last_logits() override { return model_->last_logits(); }
    void reset() override { model_->reset(); }
    std::unique_ptr<SequenceState> new_sequence(std::size_t context) const override { return model_->new_sequence(context); }
    std::span<const float> step(std::span<const SequenceTokens> batch) override { return model_->step(batch); }
    void reserve_steps(std::size_t sequences, std::size_t rows) override { model_->reserve_steps(sequences, rows); }
    void run_host_tasks(std::size_t n, TaskRef task) override { tessera::run_host_tasks(*model_, n, task); }
    std::string description() const override { return description_; }
    std::string_view weight_format() const override { return WeightFormat<typename M::weight_type>::name; }
    void use_kv_cache(KvPrecision kv) override { model_->use_kv_cache(kv); }
    KvPrecision kv_cache() const override { return model_->kv_cache(); }
    std::size_t kv_bytes() const override { return model_->kv_bytes(); }

private:
    std::shared_ptr<void> keep_alive_;  // declared first: destroyed after the model
    std::unique_ptr<M> model_;
    std::string description_;
};

}  // namespace tessera
