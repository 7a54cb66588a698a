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
#include <cstddef>      // std::size_t
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/generation/completion.hpp>     // Completion
#include <tessera/generation/completion_state.hpp>  // CompletionState, GenerationOptions
#include <tessera/models/language_model.hpp>     // CausalLanguageModel
#include <tessera/text/bpe_tokenizer.hpp>        // BpeTokenizer

namespace tessera {

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
        CompletionState<Sampler> state(tokenizer_, tokenizer_.encode(prompt, options.prompt_special_tokens),
                                       model_.context_length(), options, sampler_);
        while (!state.finished()) {
            if (state.starts_over()) model_.reset();
            const std::span<const TokenId> tokens = state.pending();
            const auto t0 = clock::now();
            const std::span<const float> logits = tokens.size() == 1 ? model_.decode(tokens[0]) : model_.prefill(tokens);
            state.ran(tokens.size(), seconds(t0));
            state.accept(logits, on_text);
        }
        Completion& c = state.completion();
        c.total_seconds = seconds(start);
        return std::move(c);
    }

private:
    Model& model_;
    const BpeTokenizer& tokenizer_;
    Sampler& sampler_;
};

}  // namespace tessera
