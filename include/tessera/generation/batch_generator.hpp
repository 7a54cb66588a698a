#pragma once
// BatchGenerator: many completions over one model at once (continuous batching). Each request
// has its own sequence (KV cache and position), sampler, stop conditions and callbacks, with
// exactly Generator's semantics (both drive a CompletionState); one step() advances every
// active request: one token each for those decoding, and chunks of the new prompts, all as
// one model step (GPT2::step: one product per projection over all the rows).
//
//   add() --> waiting --(a free slot)--> prefill in chunks --> decode ... --> on_done, slot freed
//
// Sequences are preallocated slots, each of `context` positions: a step never allocates model
// memory, attention reads each cache as one contiguous (position, head, dim) block, and the
// memory bound is known when the generator is made (sequences x context x layers x 2 x n_embd
// floats). Blocks handed out from a pool would let short requests leave room for more, at the
// cost of a gathering attention kernel; with GPT-2's contexts (1,024) the slots are small.
//
// A free slot keeps its cache and the tokens it holds: a new request takes the free slot whose
// tokens begin as its prompt does for longest (else the one free longest), and runs only the
// rest of its prompt. A chat re-sends its whole conversation every turn; this way only the new
// turn runs. The cached keys and values are those the same tokens at the same positions give.
//
// Not thread-safe: one thread calls add, cancel and step (the server serialises them).
#include <algorithm>    // std::min, std::find_if
#include <chrono>       // std::chrono::steady_clock
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t
#include <exception>    // std::exception
#include <functional>   // std::function
#include <memory>       // std::unique_ptr
#include <span>         // std::span
#include <string>       // std::to_string
#include <string_view>  // std::string_view
#include <utility>      // std::move
#include <vector>       // std::vector

#include <tessera/core/error.hpp>                   // ArgumentError
#include <tessera/generation/completion.hpp>        // Completion, StopReason
#include <tessera/generation/completion_state.hpp>  // CompletionState, GenerationOptions
#include <tessera/core/task_ref.hpp>                // TaskRef
#include <tessera/models/language_model.hpp>        // BatchingLanguageModel, run_host_tasks
#include <tessera/models/sequence.hpp>              // SequenceState, SequenceTokens
#include <tessera/sampling/sampler.hpp>             // DefaultSampler
#include <tessera/text/tokenizer.hpp>               // Tokenizer

namespace tessera {

struct BatchOptions {
    std::size_t sequences = 8;        // decoded together (slots)
    std::size_t context = 0;          // positions per sequence; 0: the model's context
    std::size_t prefill_chunk = 256;  // prompt tokens per step, all new prompts together
    bool reuse_prompts = true;        // start prompts from a free slot's cache (see above)
};

template <BatchingLanguageModel Model, class Sampler = DefaultSampler>
class BatchGenerator {
public:
    using RequestId = std::uint64_t;
    using OnText = std::function<void(std::string_view)>;
    using OnDone = std::function<void(Completion&&)>;

    BatchGenerator(Model& model, const Tokenizer& tokenizer, const BatchOptions& options)
        : model_(model), tokenizer_(tokenizer), options_(options) {
        tokenizer.check_vocab_size(model.vocabulary_size());
        if (options.sequences == 0) throw ArgumentError("BatchGenerator: sequences must be at least 1");
        if (options.prefill_chunk == 0) throw ArgumentError("BatchGenerator: prefill_chunk must be at least 1");
        if (options_.context == 0) options_.context = model.context_length();
        if (options_.context > model.context_length()) {
            throw ArgumentError("BatchGenerator: context " + std::to_string(options_.context) + " exceeds the model's " +
                                std::to_string(model.context_length()));
        }
        model.reserve_steps(options.sequences, options.sequences + options.prefill_chunk);
        for (std::size_t i = 0; i < options.sequences; ++i) {
            free_slots_.push_back({model.new_sequence(options_.context), {}, 0});
            free_slots_.back().tokens.reserve(options_.context);  // a step never allocates
        }
        batch_.reserve(options.sequences);
        finished_.reserve(options.sequences);
        stepped_.reserve(options.sequences);
        chosen_.reserve(options.sequences);
        due_.reserve(options.sequences);
    }

    // Queues a completion of `prompt` (token ids); its text arrives through on_text in pieces
    // (whole UTF-8 characters, stop strings held back) and the completion through on_done, both
    // called from step(). Throws ArgumentError at once for a prompt that cannot run (too long
    // without truncate_prompt, empty without an end-of-text token).
    RequestId add(std::vector<TokenId> prompt, const GenerationOptions& options, Sampler sampler, OnText on_text,
                  OnDone on_done) {
        auto r = std::make_unique<Request>(next_id_, std::move(sampler), tokenizer_, std::move(prompt), options_.context,
                                           options, std::move(on_text), std::move(on_done));
        waiting_.push_back(std::move(r));
        return next_id_++;
    }
    RequestId add(std::string_view prompt, const GenerationOptions& options, Sampler sampler, OnText on_text, OnDone on_done) {
        return add(tokenizer_.encode_prompt(prompt, options.prompt_special_tokens), options, std::move(sampler), std::move(on_text),
                   std::move(on_done));
    }

    // Ends a request at the next step (StopReason::cancelled; its sequence is freed then).
    // False when no such request is waiting or running.
    bool cancel(RequestId id) {
        for (auto* list : {&waiting_, &running_}) {
            for (auto& r : *list) {
                if (r->id == id) return r->cancelled = true;
            }
        }
        return false;
    }

    std::size_t running() const noexcept { return running_.size(); }
    std::size_t waiting() const noexcept { return waiting_.size(); }
    bool idle() const noexcept { return running_.empty() && waiting_.empty(); }
    const BatchOptions& options() const noexcept { return options_; }

    // One model step over every running request (after moving waiting ones into free slots);
    // finished requests are reported and leave. Returns the tokens the model ran.
    std::size_t step() {
        using clock = std::chrono::steady_clock;
        finish_cancelled(waiting_);
        finish_cancelled(running_);
        while (!waiting_.empty() && !free_slots_.empty()) {
            auto& r = waiting_.front();
            take_slot(*r);
            running_.push_back(std::move(r));
            waiting_.erase(waiting_.begin());
        }
        // Decoding requests run their one token; prompts share the chunk, oldest first.
        batch_.clear();
        stepped_.clear();
        std::size_t budget = options_.prefill_chunk, rows = 0;
        for (int pass = 0; pass < 2; ++pass) {
            for (auto& r : running_) {
                const std::span<const TokenId> pending = r->state.pending();
                if ((pending.size() == 1) != (pass == 0) || (pass == 1 && budget == 0)) continue;
                if (r->state.starts_over()) {
                    r->slot.sequence->reset();
                    r->slot.tokens.clear();
                }
                const std::size_t n = pass == 0 ? 1 : std::min(budget, pending.size());
                if (pass == 1) budget -= n;
                batch_.push_back({r->slot.sequence.get(), pending.first(n)});
                stepped_.push_back(r.get());
                rows += n;
            }
        }
        if (batch_.empty()) return 0;
        const auto t0 = clock::now();
        const std::span<const float> logits = model_.step(batch_);
        const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
        const std::size_t v = model_.vocabulary_size();
        // The tokens are chosen first, on the model's threads where it lends them (each request's
        // sampler and state are its own; at 16 sequences one thread's sampling was a tenth of
        // the step), then shown in order on this thread: callbacks never run elsewhere.
        due_.clear();
        chosen_.resize(stepped_.size());
        for (std::size_t i = 0; i < stepped_.size(); ++i) {
            Request& r = *stepped_[i];
            r.slot.tokens.insert(r.slot.tokens.end(), batch_[i].tokens.begin(), batch_[i].tokens.end());
            r.state.ran(batch_[i].tokens.size(), seconds);
            chosen_[i] = {};
            if (r.state.wants_token()) due_.push_back(i);
        }
        auto choose = [&](std::size_t j) {
            const std::size_t i = due_[j];
            try {
                chosen_[i].token = stepped_[i]->state.choose(logits.subspan(i * v, v));
            } catch (const std::exception& e) {  // e.g. NaN logits: this request fails, the others go on
                chosen_[i].error = e.what();
                chosen_[i].failed = true;
            }
        };
        run_host_tasks(model_, due_.size(), TaskRef(choose));
        for (std::size_t i = 0; i < stepped_.size(); ++i) {
            Request& r = *stepped_[i];
            if (!r.state.pending().empty()) continue;  // more of its prompt to run
            if (chosen_[i].failed) {
                r.state.fail(std::move(chosen_[i].error), r.on_text);
                continue;
            }
            try {
                r.state.accept_chosen(chosen_[i].token, logits.subspan(i * v, v), r.on_text);
            } catch (const std::exception& e) {
                r.state.fail(e.what(), r.on_text);
            }
        }
        finish(running_, [](const Request& r) { return r.state.finished(); });
        return rows;
    }

    // Steps until every request has finished.
    void run() {
        while (!idle()) step();
    }

private:
    // A sequence and the tokens its cache holds (at positions 0, 1, ...).
    struct Slot {
        std::unique_ptr<SequenceState> sequence;
        std::vector<TokenId> tokens;
        std::uint64_t freed = 0;  // when it was last freed
    };

    struct Request {
        Request(RequestId i, Sampler s, const Tokenizer& tokenizer, std::vector<TokenId> prompt, std::size_t context,
                const GenerationOptions& options, OnText text, OnDone done)
            : id(i),
              sampler(std::move(s)),
              state(tokenizer, std::move(prompt), context, options, sampler),
              on_text(std::move(text)),
              on_done(std::move(done)),
              reuse_prompt(options.reuse_cached_prompt) {}
        RequestId id;
        Sampler sampler;  // before state, which points to it
        CompletionState<Sampler> state;
        OnText on_text;
        OnDone on_done;
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
        Slot slot;  // while running
        bool reuse_prompt;
        bool cancelled = false;
    };
    using Requests = std::vector<std::unique_ptr<Request>>;

    // Gives `r` the free slot whose tokens share the longest start with its prompt (at most all
    // but its last token, which must run for the logits), else the one free longest, and skips
    // the shared tokens.
    void take_slot(Request& r) {
        const std::span<const TokenId> prompt = r.state.pending();
        std::size_t best = 0, best_shared = 0;
        for (std::size_t i = 0; i < free_slots_.size(); ++i) {
            const std::vector<TokenId>& held = free_slots_[i].tokens;
            std::size_t shared = 0;
            if (options_.reuse_prompts && r.reuse_prompt) {
                const std::size_t limit = std::min(held.size(), prompt.empty() ? 0 : prompt.size() - 1);
                while (shared < limit && held[shared] == prompt[shared]) ++shared;
            }
            if (shared > best_shared || (shared == best_shared && free_slots_[i].freed < free_slots_[best].freed)) {
                best = i;
                best_shared = shared;
            }
        }
        r.slot = std::move(free_slots_[best]);
        free_slots_.erase(free_slots_.begin() + static_cast<std::ptrdiff_t>(best));
        if (best_shared == 0) return;  // starts over at the first step
        r.slot.sequence->rewind(best_shared);
        r.slot.tokens.resize(best_shared);
        r.state.reuse_prompt(best_shared);
    }

    void finish_cancelled(Requests& list) {
        for (auto& r : list) {
            if (r->cancelled) r->state.cancel(r->on_text);
        }
        finish(list, [](const Request& r) { return r.state.finished(); });
    }

    // Removes the requests `done` picks, returning their slots, then reports them.
    template <class Done>
    void finish(Requests& list, Done done) {
        std::size_t kept = 0;
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (done(*list[i])) {
                finished_.push_back(std::move(list[i]));
            } else {
                if (kept != i) list[kept] = std::move(list[i]);
                ++kept;
            }
        }
        list.resize(kept);
        for (auto& r : finished_) {
            if (!r->slot.sequence) continue;
            r->slot.freed = ++frees_;
            free_slots_.push_back(std::move(r->slot));
        }
        const auto now = std::chrono::steady_clock::now();
        Requests reported = std::move(finished_);  // a callback that throws leaves the generator consistent
        finished_.clear();
        for (auto& r : reported) {
            Completion& c = r->state.completion();
            c.total_seconds = std::chrono::duration<double>(now - r->start).count();
            if (r->on_done) r->on_done(std::move(c));
        }
        reported.clear();
        finished_ = std::move(reported);  // keep the capacity
    }

    Model& model_;
    const Tokenizer& tokenizer_;
    BatchOptions options_;
    std::vector<Slot> free_slots_;
    std::uint64_t frees_ = 0;  // slots freed so far: the order of Slot::freed
    Requests waiting_, running_, finished_;
    std::vector<SequenceTokens> batch_;  // this step's sequences and tokens
    std::vector<Request*> stepped_;      // ... and their requests
    struct Choice {
        TokenId token = 0;
        bool failed = false;
        std::string error;  // the sampler's, when failed
    };
    std::vector<Choice> chosen_;     // per stepped request
    std::vector<std::size_t> due_;   // the stepped requests that choose a token
    RequestId next_id_ = 1;
};

template <class Model>
BatchGenerator(Model&, const Tokenizer&, const BatchOptions&) -> BatchGenerator<Model, DefaultSampler>;

}  // namespace tessera
