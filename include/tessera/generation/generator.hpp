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
#include <chrono>       // std::chrono::steady_clock
#include <concepts>     // std::same_as
#include <cstddef>      // std::size_t
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/generation/completion.hpp>     // Completion
#include <tessera/generation/completion_state.hpp>  // CompletionState, GenerationOptions
#include <tessera/models/language_model.hpp>     // CausalLanguageModel
#include <tessera/text/tokenizer.hpp>            // Tokenizer

namespace tessera {

template <CausalLanguageModel Model, class Sampler>
class Generator {
public:
    Generator(Model& model, const Tokenizer& tokenizer, Sampler& sampler)
        : model_(model), tokenizer_(tokenizer), sampler_(sampler) {
        tokenizer.check_vocab_size(model.vocabulary_size());
    }

    template <class OnText>
    Completion generate(std::string_view prompt, const GenerationOptions& options, OnText&& on_text) {
        using clock = std::chrono::steady_clock;
        const auto seconds = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
        const auto start = clock::now();
        CompletionState<Sampler> state(tokenizer_, tokenizer_.encode_prompt(prompt, options.prompt_special_tokens),
                                       model_.context_length(), options, sampler_);
        while (!state.finished()) {
            if (state.starts_over()) model_.reset();
            const std::span<const TokenId> tokens = state.pending();
            const auto t0 = clock::now();
            if constexpr (ArgmaxLanguageModel<Model>) {
                if (finds_argmax(options)) {  // the model finds the token; the logits stay where they are
                    const std::optional<TokenId> token = model_.prefill_argmax(tokens);
                    state.ran(tokens.size(), seconds(t0));
                    if (token) state.accept_argmax(*token, on_text);
                    else state.accept(model_.last_logits(), on_text);  // NaN or infinity: the sampler names it
                    continue;
                }
            }
            const std::span<const float> logits = tokens.size() == 1 ? model_.decode(tokens[0]) : model_.prefill(tokens);
            state.ran(tokens.size(), seconds(t0));
            state.accept(logits, on_text);
        }
        Completion& c = state.completion();
        c.total_seconds = seconds(start);
        return std::move(c);
    }

private:
    // Whether the sampler picks the largest logit's token (greedy) and nothing else needs the
    // logits, so that the model may find that token where the logits are (a GPU: one id copied
    // to the host instead of the whole vocabulary's logits).
    bool finds_argmax(const GenerationOptions& options) const {
        if constexpr (requires(const Sampler& s) { { s.picks_argmax() } -> std::same_as<bool>; }) {
            return !options.logprobs && sampler_.picks_argmax();
        } else {
            return false;
        }
    }

    Model& model_;
    const Tokenizer& tokenizer_;
    Sampler& sampler_;
};

}  // namespace tessera
