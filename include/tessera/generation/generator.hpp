#pragma once
// Generator: the loop that turns a prompt into a completion.
//
//   prompt --tokenizer--> ids --model.prefill--> logits --sampler--> id --model.decode--> ...
//   ids --StreamDecoder--> whole UTF-8 characters --StopStrings holdback--> on_text(piece)
//
// It stops on EOS (unless ignored), after max_new_tokens, when a stop string appears (matched
// on the text, so across token boundaries; the stop string is not returned), or when the
// context is full; with context_shift it instead keeps the newest half of the window and
// recomputes. The pieces given to on_text concatenate to Completion::text.
#include <algorithm>    // std::max
#include <chrono>       // std::chrono::steady_clock
#include <cstddef>      // std::size_t
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/error.hpp>                // ArgumentError
#include <tessera/generation/completion.hpp>     // Completion, StopReason
#include <tessera/generation/stop_strings.hpp>   // StopStrings
#include <tessera/models/language_model.hpp>     // CausalLanguageModel
#include <tessera/text/bpe_tokenizer.hpp>        // BpeTokenizer
#include <tessera/text/stream_decoder.hpp>       // StreamDecoder

namespace tessera {

struct GenerationOptions {
    std::size_t max_new_tokens = 128;
    std::vector<std::string> stop;  // stop strings
    bool ignore_eos = false;
    bool context_shift = false;     // when the context is full, drop the oldest half and go on
    bool truncate_prompt = false;   // drop the oldest prompt tokens instead of failing on a long prompt
    SpecialTokens prompt_special_tokens = SpecialTokens::as_text;
};

template <CausalLanguageModel Model, class Sampler>
class Generator {
public:
    Generator(Model& model, const BpeTokenizer& tokenizer, Sampler& sampler)
        : model_(model), tokenizer_(tokenizer), sampler_(sampler) {
        tokenizer.check_vocab_size(model.vocabulary_size());
    }

    template <class OnText>
    Completion generate(std::string_view prompt, const GenerationOptions& options, OnText&& on_text) {
        using clock = std::chrono::steady_clock;
        const auto seconds = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
        const auto start = clock::now();
        Completion c;
        c.seed = sampler_.rng().seed();
        const StopStrings stops(options.stop);
        const auto eos = tokenizer_.eos_id();

        std::vector<TokenId> context = tokenizer_.encode(prompt, options.prompt_special_tokens);
        if (context.empty()) {  // GPT-2 starts unconditional text after an end-of-text token
            if (!eos) throw ArgumentError("the prompt is empty and the vocabulary has no end-of-text token");
            context.push_back(*eos);
        }
        const std::size_t n_ctx = model_.context_length();
        if (context.size() >= n_ctx) {
            if (!options.truncate_prompt) {
                throw ArgumentError("the prompt has " + std::to_string(context.size()) +
                                    " tokens but the context holds " + std::to_string(n_ctx) +
                                    " (one must be left for the answer); shorten it or truncate it");
            }
            c.truncated_prompt_tokens = context.size() - (n_ctx - 1);
            context.erase(context.begin(), context.begin() + static_cast<std::ptrdiff_t>(c.truncated_prompt_tokens));
        }
        c.prompt_tokens = context.size();

        model_.reset();
        auto t0 = clock::now();
        std::span<const float> logits = model_.prefill(context);
        c.prefill_seconds = seconds(t0);

        StreamDecoder stream(tokenizer_);
        std::string text;          // everything generated so far, whole characters
        std::size_t shown = 0;     // bytes of text already given to on_text
        std::vector<float> scratch(model_.vocabulary_size());
        const auto show = [&](std::size_t until) {
            if (until > shown) on_text(std::string_view(text).substr(shown, until - shown));
            shown = std::max(shown, until);
        };
        for (;;) {
            if (c.tokens.size() == options.max_new_tokens) {
                c.stop_reason = StopReason::max_new_tokens;
                break;
            }
            t0 = clock::now();
            scratch.assign(logits.begin(), logits.end());
            const TokenId token = sampler_.sample(scratch, context);
            c.sampling_seconds += seconds(t0);
            if (eos && token == *eos && !options.ignore_eos) {
                c.stop_reason = StopReason::eos;
                break;
            }
            c.tokens.push_back(token);
            context.push_back(token);
            const std::size_t before = text.size();
            text += stream.push(token);
            if (const auto at = stops.find(text, before)) {
                text.resize(*at);
                c.stop_reason = StopReason::stop_string;
                break;
            }
            show(stops.safe_length(text));
            if (c.tokens.size() == options.max_new_tokens) continue;  // no need to run the last token
            if (model_.position() == n_ctx) {
                if (!options.context_shift) {
                    c.stop_reason = StopReason::context_full;
                    break;
                }
                // Keep the newest half of the window and recompute its cache.
                context.erase(context.begin(), context.end() - static_cast<std::ptrdiff_t>(n_ctx / 2));
                model_.reset();
                t0 = clock::now();
                logits = model_.prefill(context);
                c.prefill_seconds += seconds(t0);
                ++c.context_shifts;
                continue;
            }
            t0 = clock::now();
            logits = model_.decode(token);
            c.decode_seconds += seconds(t0);
            ++c.decode_steps;
        }
        if (c.stop_reason != StopReason::stop_string) {
            text += stream.finish();
            if (const auto at = stops.find(text, shown)) {
                text.resize(*at);
                c.stop_reason = StopReason::stop_string;
            }
        }
        show(text.size());
        c.text = std::move(text);
        c.total_seconds = seconds(start);
        return c;
    }

private:
    Model& model_;
    const BpeTokenizer& tokenizer_;
    Sampler& sampler_;
};

}  // namespace tessera
