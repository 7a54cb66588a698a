#pragma once
// What a generation run returns: the text, the ids, why it stopped, and how fast it went.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/core/token_id.hpp>               // TokenId
#include <tessera/sampling/log_probabilities.hpp>  // TokenLogprob

namespace tessera {

enum class StopReason {
    eos,             // the model produced the end-of-text token
    max_new_tokens,  // the budget of new tokens is spent
    stop_string,     // one of the stop strings appeared (it is not part of the text)
    context_full,    // the context window is full (and context shift is off)
    cancelled,       // the caller cancelled it (BatchGenerator::cancel)
    error,           // it failed (Completion::error says why); the others in its batch went on
};

inline const char* to_string(StopReason r) noexcept {
    switch (r) {
        case StopReason::eos: return "eos";
        case StopReason::max_new_tokens: return "max_new_tokens";
        case StopReason::stop_string: return "stop_string";
        case StopReason::context_full: return "context_full";
        case StopReason::cancelled: return "cancelled";
        case StopReason::error: return "error";
    }
    return "?";
}

struct Completion {
    std::string text;                 // the generated text, without the prompt or a stop string
    std::vector<TokenId> tokens;      // the generated ids (the EOS token is not included)
    StopReason stop_reason = StopReason::max_new_tokens;
    std::size_t prompt_tokens = 0;    // after truncation
    std::size_t cached_prompt_tokens = 0;  // of those, found in a sequence's cache and not run again
    std::size_t truncated_prompt_tokens = 0;  // dropped from the start of the prompt (truncate)
    std::size_t context_shifts = 0;
    double prefill_seconds = 0;       // the model's forward passes over the prompt
    double decode_seconds = 0;        // the model's one-token steps
    double sampling_seconds = 0;      // choosing each token: the sampler's processors and draw
    double total_seconds = 0;         // what the caller waited: tokenizing to the last piece of text
    std::size_t decode_steps = 0;
    std::uint64_t seed = 0;
    std::string error;                // why it failed (StopReason::error)
    std::vector<TokenLogprob> logprobs;  // one per token of `tokens` when GenerationOptions::logprobs asks

    double prefill_tokens_per_second() const noexcept { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
    // The model alone: decode steps per second of decode_seconds.
    double decode_tokens_per_second() const noexcept { return decode_seconds > 0 ? decode_steps / decode_seconds : 0; }
    // What a user sees: generated tokens per second of the whole call, prompt processing,
    // sampling and detokenizing included.
    double end_to_end_tokens_per_second() const noexcept {
        return total_seconds > 0 ? static_cast<double>(tokens.size()) / total_seconds : 0;
    }
};

}  // namespace tessera
