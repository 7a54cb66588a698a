#pragma once
// The two timed runs of the end-to-end GPT-2 benchmarks (bench_gpt2, bench_gpt2_cuda),
// llama-bench style: pp = prefill of an n-token prompt (at a depth: after that many positions);
// tg = decode steps after a 1-token prompt (at a depth: after that many), greedy, each step's
// logits on the host before the next, the token picked as greedy generation picks it on the CPU
// (cpu::argmax_row; tg_argmax: the greedy token found by the model instead); tg_batched = the
// same for several sequences decoded together (llama-batched-bench's S_TG). Wall-clock seconds.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <tessera/backend/cpu/argmax.hpp>
#include <tessera/core/error.hpp>
#include <tessera/core/token_id.hpp>
#include <tessera/models/sequence.hpp>

namespace tessera::bench {

template <class Model>
struct Gpt2Runs {
    Model& model;

    // The greedy token of one row of logits; a NaN or infinite logit ends the run (no honest pick).
    static TokenId greedy(std::span<const float> logits) {
        const std::int32_t id = cpu::argmax_row(logits.data(), logits.size());
        if (id < 0) throw Error("bench: the model's logits hold NaN or infinity; no greedy token to time");
        return static_cast<TokenId>(id);
    }

    // n (at most n_ctx) arbitrary ids spread over the vocabulary.
    std::vector<TokenId> prompt_of(std::size_t n) const {
        std::vector<TokenId> p(std::min(n, model.context_length()));
        for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<TokenId>((i * 7919) % model.vocabulary_size());
        return p;
    }

    // After `depth` positions already in the cache (not timed; llama-bench's -d).
    double pp(const std::vector<TokenId>& prompt, std::size_t depth = 0) const {
        model.reset();
        if (depth > 0) model.prefill(prompt_of(depth));
        const auto t0 = std::chrono::steady_clock::now();
        model.prefill(prompt);
        return seconds_since(t0);
    }

    // After a `prompt`-token prompt (1: llama-bench's tg; longer: decoding deeper in the context).
    double tg(std::size_t steps, std::size_t prompt = 1) const {
        model.reset();
        auto logits = model.prefill(prompt_of(prompt));
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < steps; ++i) {
            logits = model.decode(greedy(logits));
        }
        return seconds_since(t0);
    }

    // The same tokens as tg when the model finds the greedy token itself (prefill_argmax: on a
    // device, one id crosses to the host instead of the logits).
    double tg_argmax(std::size_t steps) const {
        model.reset();
        auto next = model.prefill_argmax(prompt_of(1));
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < steps && next; ++i) next = model.prefill_argmax(std::span<const TokenId>(&*next, 1));
        return seconds_since(t0);
    }

    // Each of `sequences` (reset first) after the same `prompt` (run together, not timed), then
    // `steps` steps of one token for all of them, each token the argmax of its own logits.
    double tg_batched(std::span<const std::unique_ptr<SequenceState>> sequences, const std::vector<TokenId>& prompt,
                      std::size_t steps) const {
        std::vector<SequenceTokens> batch;
        for (const auto& s : sequences) {
            s->reset();
            batch.push_back({s.get(), prompt});
        }
        std::vector<TokenId> next(sequences.size());
        auto logits = model.step(batch);
        const std::size_t v = model.vocabulary_size();
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < steps; ++i) {
            for (std::size_t s = 0; s < next.size(); ++s) {
                const auto row = logits.subspan(s * v, v);
                next[s] = greedy(row);
                batch[s].tokens = std::span<const TokenId>(&next[s], 1);
            }
            logits = model.step(batch);
        }
        return seconds_since(t0);
    }

private:
    static double seconds_since(std::chrono::steady_clock::time_point t0) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
};

}  // namespace tessera::bench
