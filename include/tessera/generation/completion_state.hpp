#pragma once
// CompletionState: one completion between the model's steps. It knows which tokens the model
// must run next (the prompt, then each sampled token; after a context shift the kept window),
// turns the logits that come back into a token (the sampler), the token into whole UTF-8
// characters (StreamDecoder), holds back what could still become a stop string (StopStrings),
// and decides when to stop. Generator drives one through a model's own sequence; BatchGenerator
// drives many through one model step each. So both have exactly the same semantics.
//
//   pending() --model--> logits --accept()--> token --> text pieces (on_text) --> pending() ...
#include <algorithm>    // std::max, std::find
#include <chrono>       // std::chrono::steady_clock
#include <cstddef>      // std::size_t
#include <span>         // std::span
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/error.hpp>               // ArgumentError
#include <tessera/core/token_id.hpp>            // TokenId
#include <tessera/generation/completion.hpp>    // Completion, StopReason
#include <tessera/sampling/log_probabilities.hpp>  // token_logprob
#include <tessera/generation/stop_strings.hpp>  // StopStrings
#include <tessera/text/tokenizer.hpp>           // Tokenizer, SpecialTokens
#include <tessera/text/stream_decoder.hpp>      // StreamDecoder

namespace tessera {

struct GenerationOptions {
    std::size_t max_new_tokens = 128;
    std::vector<std::string> stop{};  // stop strings
    bool ignore_eos = false;
    bool context_shift = false;     // when the context is full, drop the oldest half and go on
    bool truncate_prompt = false;   // drop the oldest prompt tokens instead of failing on a long prompt
    SpecialTokens prompt_special_tokens = SpecialTokens::as_text;
    // Report each generated token's log-probability under the model (its logits before the
    // sampling parameters) with this many most likely alternatives (Completion::logprobs).
    std::optional<std::size_t> logprobs{};
    // BatchGenerator: start from a free sequence whose cache holds the prompt's first tokens
    // (a conversation's earlier turns), running only the rest.
    bool reuse_cached_prompt = true;
};

template <class Sampler>
class CompletionState {
public:
    // `prompt` (already tokenized) for a sequence of `context` positions. Throws ArgumentError
    // for a prompt that leaves no room for an answer (unless options.truncate_prompt) or an
    // empty prompt without an end-of-text token to start from.
    CompletionState(const Tokenizer& tokenizer, std::vector<TokenId> prompt, std::size_t context,
                    const GenerationOptions& options, Sampler& sampler)
        : tokenizer_(&tokenizer),
          sampler_(&sampler),
          stops_(options.stop),
          stream_(tokenizer),
          stop_ids_(tokenizer.stop_ids()),
          context_(std::move(prompt)),
          n_ctx_(context),
          max_new_tokens_(options.max_new_tokens),
          logprobs_(options.logprobs),
          ignore_eos_(options.ignore_eos),
          context_shift_(options.context_shift) {
        c_.seed = sampler.rng().seed();
        const auto eos = tokenizer.eos_id();
        if (context_.empty()) {  // GPT-2 starts unconditional text after an end-of-text token
            if (!eos) throw ArgumentError("the prompt is empty and the vocabulary has no end-of-text token");
            context_.push_back(*eos);
        }
        if (context_.size() >= n_ctx_) {
            if (!options.truncate_prompt) {
                throw ArgumentError("the prompt has " + std::to_string(context_.size()) + " tokens but the context holds " +
                                    std::to_string(n_ctx_) + " (one must be left for the answer); shorten it or truncate it");
            }
            c_.truncated_prompt_tokens = context_.size() - (n_ctx_ - 1);
            context_.erase(context_.begin(), context_.begin() + static_cast<std::ptrdiff_t>(c_.truncated_prompt_tokens));
        }
        c_.prompt_tokens = context_.size();
    }

    bool finished() const noexcept { return finished_; }
    // Whether the model's sequence must start again at position 0 before pending() runs (the
    // first prompt, and after a context shift).
    bool starts_over() const noexcept { return run_ == 0 && !decoding_; }
    // The tokens the model must run (append to the sequence) before the next logits.
    std::span<const TokenId> pending() const noexcept {
        if (finished_) return {};
        if (decoding_) return std::span<const TokenId>(context_).last(1).subspan(run_);
        return std::span<const TokenId>(context_).subspan(run_);
    }
    // The sequence already holds the prompt's first `tokens` (fewer than the prompt has: the
    // last one runs, for its logits); only the rest is pending. Before anything ran.
    void reuse_prompt(std::size_t tokens) {
        if (run_ != 0 || decoding_ || tokens >= context_.size())
            throw ArgumentError("CompletionState: a reused prompt prefix must come first and leave a token to run");
        run_ = tokens;
        c_.cached_prompt_tokens = tokens;
    }
    // The model appended the first `tokens` of pending() in `seconds`.
    void ran(std::size_t tokens, double seconds) {
        run_ += tokens;
        (decoding_ ? c_.decode_seconds : c_.prefill_seconds) += seconds;
        if (decoding_ && pending().empty()) ++c_.decode_steps;
    }

    // The logits after the last pending token ran: chooses the next token and gives the text it
    // completes to on_text (pieces that concatenate to Completion::text). The time for sampling
    // is added to the completion's sampling_seconds.
    template <class OnText>
    void accept(std::span<const float> logits, OnText&& on_text) {
        if (!expects_token(on_text)) return;
        take(choose(logits), logits, on_text);
    }
    // accept() in two halves, for many completions at once (BatchGenerator): choose() runs
    // the sampler only, touching nothing but this state and its sampler, so completions may
    // choose on different threads at once; accept_chosen() then shows the token's text, in
    // order, on the caller's thread. choose() only where wants_token().
    bool wants_token() const noexcept { return !finished_ && pending().empty() && c_.tokens.size() != max_new_tokens_; }
    TokenId choose(std::span<const float> logits) {
        using clock = std::chrono::steady_clock;
        const auto t0 = clock::now();
        scratch_.assign(logits.begin(), logits.end());
        const TokenId token = sampler_->sample(scratch_, context_);
        c_.sampling_seconds += std::chrono::duration<double>(clock::now() - t0).count();
        return token;
    }
    template <class OnText>
    void accept_chosen(TokenId token, std::span<const float> logits, OnText&& on_text) {
        if (!expects_token(on_text)) return;
        take(token, logits, on_text);
    }
    // The same with the token already chosen: the largest logit's, where the sampler
    // picks_argmax() and no log-probabilities are asked for (the model found it).
    template <class OnText>
    void accept_argmax(TokenId token, OnText&& on_text) {
        if (logprobs_) throw ArgumentError("CompletionState: log-probabilities need the logits, not only the chosen token");
        if (!expects_token(on_text)) return;
        take(token, {}, on_text);
    }

    // Ends the completion now (a cancelled request): what was shown stays the text.
    template <class OnText>
    void cancel(OnText&& on_text) {
        if (!finished_) stop(StopReason::cancelled, on_text);
    }
    // Ends it with an error (e.g. the sampler refused NaN logits); the text is what was shown.
    template <class OnText>
    void fail(std::string message, OnText&& on_text) {
        if (finished_) return;
        c_.error = std::move(message);
        stop(StopReason::error, on_text);
    }

    // The completion, once finished(); total_seconds is the caller's to set.
    Completion& completion() noexcept { return c_; }
    std::span<const TokenId> context() const noexcept { return context_; }

private:
    // Whether a token is due now (the pending tokens ran); ends the completion once the
    // tokens asked for are there.
    template <class OnText>
    bool expects_token(OnText& on_text) {
        if (finished_ || !pending().empty()) throw ArgumentError("CompletionState: logits accepted before the pending tokens ran");
        if (c_.tokens.size() != max_new_tokens_) return true;
        stop(StopReason::max_new_tokens, on_text);
        return false;
    }

    // Appends the chosen token (and its log-probability under `logits` when asked for) and
    // shows the text it completes; stops on EOS, a stop string, the length or a full context.
    template <class OnText>
    void take(TokenId token, std::span<const float> logits, OnText& on_text) {
        if (!ignore_eos_ && std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end()) return stop(StopReason::eos, on_text);
        c_.tokens.push_back(token);
        if (logprobs_) c_.logprobs.push_back(token_logprob(logits, token, *logprobs_));
        context_.push_back(token);
        const std::size_t before = text_.size();
        text_ += stream_.push(token);
        if (const auto at = stops_.find(text_, before)) {
            text_.resize(*at);
            return stop(StopReason::stop_string, on_text);
        }
        show(stops_.safe_length(text_), on_text);
        if (c_.tokens.size() == max_new_tokens_) return stop(StopReason::max_new_tokens, on_text);  // no need to run it
        run_ = 0;
        if (context_.size() - 1 == n_ctx_) {  // the sequence is full
            if (!context_shift_) return stop(StopReason::context_full, on_text);
            // Keep the newest half of the window and recompute its cache.
            context_.erase(context_.begin(), context_.end() - static_cast<std::ptrdiff_t>(n_ctx_ / 2));
            decoding_ = false;
            ++c_.context_shifts;
            return;
        }
        decoding_ = true;
    }

    template <class OnText>
    void show(std::size_t until, OnText& on_text) {
        if (until > shown_) on_text(std::string_view(text_).substr(shown_, until - shown_));
        shown_ = std::max(shown_, until);
    }

    template <class OnText>
    void stop(StopReason why, OnText& on_text) {
        c_.stop_reason = why;
        finished_ = true;
        const bool abandoned = why == StopReason::cancelled || why == StopReason::error;
        if (why != StopReason::stop_string && !abandoned) {
            text_ += stream_.finish();
            if (const auto at = stops_.find(text_, shown_)) {
                text_.resize(*at);
                c_.stop_reason = StopReason::stop_string;
            }
        }
        if (abandoned) text_.resize(shown_);
        show(text_.size(), on_text);
        c_.text = std::move(text_);
    }

    const Tokenizer* tokenizer_;
    Sampler* sampler_;
    StopStrings stops_;
    StreamDecoder stream_;
    std::vector<TokenId> stop_ids_;  // EOS and the end-of-turn ids
    std::vector<TokenId> context_;  // the tokens in the sequence (the last one not run yet while decoding)
    std::vector<float> scratch_;    // the logits the sampler processes
    std::string text_;              // everything generated so far, whole characters
    std::size_t shown_ = 0;         // bytes of text_ already given to on_text
    std::size_t n_ctx_;
    std::size_t max_new_tokens_;
    std::optional<std::size_t> logprobs_;
    bool ignore_eos_, context_shift_;
    bool decoding_ = false;  // pending: the last sampled token (else: the whole context)
    std::size_t run_ = 0;    // of the pending tokens, how many ran
    bool finished_ = false;
    Completion c_;
};

}  // namespace tessera
