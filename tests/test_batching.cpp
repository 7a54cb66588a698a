// Many sequences in one model step (GPT2::step) and continuous batching (BatchGenerator), on
// the trained model (tests/data/fortunes-gpt2), whose logits have the spread of real text.
//
// What must hold: a sequence's results do not depend on what else is in the step. Bit for bit
// where the products take the same path as alone: f32 decode steps (the few-row tile sums each
// dot product in gemv's order). Otherwise within a tolerance: a prompt run alone takes the
// product path of its own row count, in a batch that of all rows together (packed GEMM against
// few-row tiles), which sum in different orders. For f32 that is float rounding: measured 5.2e-7
// of the largest |logit|, bound 1e-4. Q8_0 quantizes each activation row to 8 bits before its
// products, so a rounding difference can move an activation across a quantization boundary (a
// step of 1/127 of its block's largest value) and the next layers carry it: measured 6.8e-3,
// bound 2e-2, the bound of 8-bit activations against the float64 reference (test_gpt2). A
// mixed-up cache or row moves logits by their own size. Greedy tokens are identical.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/models/load_gpt2.hpp>
#include <tessera/models/open_tokenizer.hpp>
#include <tessera/tessera.hpp>

#include "allocation_counter.hpp"

using namespace tessera;

namespace {

const std::string trained = std::string(TESSERA_TEST_DATA_DIR) + "/fortunes-gpt2";

const BpeTokenizer& tokenizer() {
    static const BpeTokenizer t = open_tokenizer(trained);
    return t;
}

// Sixteen prompts of 1 to 61 tokens from the held-out text.
std::vector<std::vector<TokenId>> prompts() {
    const std::string text = io::read_whole_file(trained + "/heldout.txt", std::size_t{1} << 24);
    const std::vector<TokenId> ids = tokenizer().encode(text.substr(0, 20000));
    std::vector<std::vector<TokenId>> out;
    for (std::size_t i = 0; i < 16; ++i) {
        const std::size_t first = 97 * i, length = 1 + (i * 37) % 61;
        out.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.begin() + static_cast<std::ptrdiff_t>(first + length));
    }
    return out;
}

template <WeightType W, class F>
void with_model(F&& check) {
    Cpu cpu(2);
    load_gpt2_as<W>(cpu, trained, [&](auto& model) { check(model); });
}

TokenId argmax(std::span<const float> logits) {
    return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// The largest |a - b| relative to the largest |b| (at least 1).
double relative_difference(std::span<const float> a, std::span<const float> b) {
    double worst = 0, scale = 1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
        scale = std::max(scale, std::fabs(double(b[i])));
    }
    return worst / scale;
}

struct Greedy {
    std::vector<TokenId> tokens;
    std::vector<std::vector<float>> logits;  // after the prompt, then after each token
};

// Each prompt greedily continued by `steps` tokens, alone (a sequence of its own) or all
// together (one step for all prompts, then one step per token for all).
template <class Model>
std::vector<Greedy> continue_greedily(Model& model, const std::vector<std::vector<TokenId>>& ps, std::size_t steps,
                                      bool together) {
    std::vector<std::unique_ptr<SequenceState>> seqs;
    for (std::size_t i = 0; i < ps.size(); ++i) seqs.push_back(model.new_sequence());
    std::vector<Greedy> out(ps.size());
    const std::size_t v = model.vocabulary_size();
    const auto record = [&](std::size_t i, std::span<const float> logits) {
        out[i].logits.emplace_back(logits.begin(), logits.end());
        out[i].tokens.push_back(argmax(logits));
    };
    for (std::size_t s = 0; s <= steps; ++s) {
        std::vector<SequenceTokens> batch;
        for (std::size_t i = 0; i < ps.size(); ++i) {
            batch.push_back({seqs[i].get(), s == 0 ? std::span<const TokenId>(ps[i]) : std::span<const TokenId>(&out[i].tokens.back(), 1)});
        }
        if (together) {
            const auto logits = model.step(batch);
            REQUIRE(logits.size() == ps.size() * v);
            for (std::size_t i = 0; i < ps.size(); ++i) record(i, logits.subspan(i * v, v));
        } else {
            for (std::size_t i = 0; i < ps.size(); ++i) record(i, model.step(std::span<const SequenceTokens>(&batch[i], 1)));
        }
    }
    return out;
}

}  // namespace

TEMPLATE_TEST_CASE("A sequence decoded alongside 15 others gives the tokens it gives alone", "[batching]", float, Q8_0) {
    with_model<TestType>([](auto& model) {
        const auto ps = prompts();
        const auto alone = continue_greedily(model, ps, 24, false);
        const auto together = continue_greedily(model, ps, 24, true);
        double worst = 0;
        for (std::size_t i = 0; i < ps.size(); ++i) {
            INFO("prompt " << i << " of " << ps[i].size() << " tokens");
            CHECK(together[i].tokens == alone[i].tokens);
            for (std::size_t s = 0; s < alone[i].logits.size(); ++s)
                worst = std::max(worst, relative_difference(together[i].logits[s], alone[i].logits[s]));
        }
        INFO("largest difference, relative to the largest logit: " << worst);
        CHECK(worst <= (std::is_same_v<TestType, float> ? 1e-4 : 2e-2));
        WARN("batched vs alone, " << WeightFormat<TestType>::name << ": " << worst);
    });
}

TEST_CASE("f32 decode steps in a batch give the bits of decoding alone", "[batching]") {
    with_model<float>([](auto& model) {
        const auto ps = prompts();
        std::vector<std::unique_ptr<SequenceState>> seqs;
        std::vector<TokenId> next;
        for (const auto& p : ps) {  // identical caches: each prompt alone
            seqs.push_back(model.new_sequence());
            const SequenceTokens one{seqs.back().get(), p};
            next.push_back(argmax(model.step(std::span<const SequenceTokens>(&one, 1))));
        }
        std::vector<SequenceTokens> batch;
        for (std::size_t i = 0; i < ps.size(); ++i) batch.push_back({seqs[i].get(), std::span<const TokenId>(&next[i], 1)});
        const auto got = model.step(batch);
        const std::vector<float> together(got.begin(), got.end());
        const std::size_t v = model.vocabulary_size();
        for (std::size_t i = 0; i < ps.size(); ++i) {
            seqs[i]->reset();  // the same step again, alone
            const SequenceTokens prompt{seqs[i].get(), ps[i]};
            model.step(std::span<const SequenceTokens>(&prompt, 1));
            const auto alone = model.step(std::span<const SequenceTokens>(&batch[i], 1));
            INFO("sequence " << i);
            CHECK(std::equal(alone.begin(), alone.end(), together.begin() + static_cast<std::ptrdiff_t>(i * v)));
            CHECK(seqs[i]->position() == ps[i].size() + 1);
        }
    });
}

namespace {

// The allocations of batched decode steps of n sequences (each after up to 8 prompt tokens, in
// 128 positions) up to position 120, once reserve_steps(n, 64) and the prompts ran; `each_step`
// runs after every step, counted too.
template <class Model, class EachStep>
long batched_decode_allocations(Model& model, std::size_t n, EachStep&& each_step) {
    const auto ps = prompts();
    model.reserve_steps(n, 64);
    std::vector<std::unique_ptr<SequenceState>> seqs;
    std::vector<SequenceTokens> batch;
    const TokenId token = 42;
    for (std::size_t i = 0; i < n; ++i) {
        seqs.push_back(model.new_sequence(128));
        batch.push_back({seqs.back().get(), std::span<const TokenId>(ps[i]).first(std::min<std::size_t>(ps[i].size(), 8))});
    }
    model.step(batch);
    for (auto& b : batch) b.tokens = std::span<const TokenId>(&token, 1);
    test::allocations = 0;
    test::counting_allocations = true;
    while (seqs[0]->position() < 120) {
        model.step(batch);
        each_step();
    }
    test::counting_allocations = false;
    return test::allocations.load();
}

}  // namespace

TEST_CASE("Batched decode steps allocate nothing once the capacity is reserved", "[batching]") {
    with_model<float>([](auto& model) { CHECK(batched_decode_allocations(model, 8, [] {}) == 0); });
}

// A bf16 KV cache rounds each key and value to 8 significant bits (relative error up to 2⁻⁹);
// a q8_0 one to 1/254 of the largest magnitude in its block of 32 values of one head. Attention
// averages many of them, so the logits move far less than that: measured 4.4e-3 (bf16) and
// 7.8e-3 (q8_0) of the largest |logit| over 16 prompts and 24 greedy steps, bound 2e-2 (a
// mixed-up cache moves them by their own size). Greedy tokens: at least 95% the f32 cache's
// (measured 100% for both; a near-tie may flip, and after a flip the continuations differ). The
// cache takes half the bytes (q8_0: 34 per 128), and decoding with it in a batch gives the same
// greedy tokens as alone.
TEST_CASE("A bf16 or q8_0 KV cache: less memory, logits close to the f32 cache's", "[batching][kv]") {
    const KvPrecision precision = GENERATE(KvPrecision::bf16, KvPrecision::q8_0);
    const std::string name(kv_precision_name(precision));
    INFO(name << " KV cache");
    with_model<float>([&](auto& model) {
        const auto ps = prompts();
        const std::size_t f32_bytes = model.kv_bytes();
        CHECK(f32_bytes == 2 * model.n_layers() * model.context_length() * model.shape().n_embd * sizeof(float));
        const auto f32 = continue_greedily(model, ps, 24, false);
        model.use_kv_cache(precision);
        CHECK(model.kv_cache() == precision);
        if (precision == KvPrecision::bf16) CHECK(model.kv_bytes() * 2 == f32_bytes);
        else CHECK(model.kv_bytes() * 4 * 32 == f32_bytes * sizeof(Q8_0));
        const auto alone = continue_greedily(model, ps, 24, false);
        const auto together = continue_greedily(model, ps, 24, true);
        double worst = 0;
        std::size_t same = 0, tokens = 0;
        for (std::size_t i = 0; i < ps.size(); ++i) {
            INFO("prompt " << i);
            CHECK(together[i].tokens == alone[i].tokens);
            // Compared up to the first token that differs: after it the inputs differ.
            for (std::size_t s = 0; s < f32[i].tokens.size(); ++s, ++tokens) {
                if (alone[i].tokens[s] != f32[i].tokens[s]) break;
                ++same;
                worst = std::max(worst, relative_difference(alone[i].logits[s], f32[i].logits[s]));
            }
        }
        tokens = ps.size() * f32[0].tokens.size();
        INFO(name << " against f32 cache: largest difference " << worst << ", greedy tokens equal " << same << " of " << tokens);
        CHECK(worst <= 2e-2);
        CHECK(worst > 0);  // the cache is rounded
        CHECK(double(same) >= 0.95 * double(tokens));
        WARN(name << " KV cache against f32: " << worst << ", greedy tokens equal " << same << " of " << tokens);
        // A sequence made before the switch keeps its f32 cache; one step may mix the two.
        model.use_kv_cache(KvPrecision::f32);
        auto f32_seq = model.new_sequence();
        model.use_kv_cache(precision);
        auto rounded_seq = model.new_sequence();
        const std::vector<SequenceTokens> mixed{{f32_seq.get(), ps[3]}, {rounded_seq.get(), ps[4]}};
        const auto got = model.step(mixed);
        const std::size_t v = model.vocabulary_size();
        CHECK(relative_difference(got.subspan(0, v), f32[3].logits[0]) <= 1e-4);    // as in the batch test above
        CHECK(relative_difference(got.subspan(v, v), alone[4].logits[0]) <= 1e-4);
        model.use_kv_cache(KvPrecision::f32);
        CHECK(model.kv_bytes() == f32_bytes);
        const auto again = continue_greedily(model, ps, 2, false);
        CHECK(again[0].logits[0] == f32[0].logits[0]);  // back to f32: the same bits as before
    });
}

TEST_CASE("Decode steps into a bf16 or q8_0 KV cache allocate nothing once the capacity is reserved", "[batching][kv]") {
    const KvPrecision precision = GENERATE(KvPrecision::bf16, KvPrecision::q8_0);
    with_model<float>([&](auto& model) {
        model.use_kv_cache(precision);
        model.prefill(prompts()[5]);  // the model's own sequence decodes alongside
        CHECK(batched_decode_allocations(model, 4, [&] { model.decode(42); }) == 0);
    });
}

TEST_CASE("Bad steps are errors that name the problem", "[batching][errors]") {
    with_model<float>([](auto& model) {
        auto a = model.new_sequence(16), b = model.new_sequence(16);
        const std::vector<TokenId> ids{1, 2, 3}, many(17, 5);
        const std::vector<SequenceTokens> twice{{a.get(), ids}, {a.get(), ids}};
        CHECK_THROWS_WITH(model.step(twice), Catch::Contains("appears twice"));
        const std::vector<SequenceTokens> empty{{a.get(), ids}, {b.get(), {}}};
        CHECK_THROWS_WITH(model.step(empty), Catch::Contains("no tokens"));
        const std::vector<SequenceTokens> full{{a.get(), ids}, {b.get(), many}};
        CHECK_THROWS_WITH(model.step(full), Catch::Contains("exceed the context of 16"));
        const std::vector<SequenceTokens> null{{nullptr, ids}};
        CHECK_THROWS_WITH(model.step(null), Catch::Contains("null or was made by a different model type"));
        CHECK_THROWS_WITH(model.new_sequence(model.context_length() + 1), Catch::Contains("exceeds the model's context"));
        CHECK(a->position() == 0);  // nothing ran
        with_model<Q8_0>([&](auto& other) {
            auto foreign = other.new_sequence(16);
            const std::vector<SequenceTokens> wrong{{foreign.get(), ids}};
            CHECK_THROWS_WITH(model.step(wrong), Catch::Contains("different model type"));
        });
    });
}

namespace {

struct Request {
    std::string prompt;
    SamplingParams params;
    GenerationOptions options;
};

std::vector<Request> requests() {
    std::vector<Request> out;
    const char* starts[] = {"The", "A man", "Q: What", "You will", "Never", "It is", "In the", "\"I",
                            "Love", "There are", "When", "Life", "If you", "He who", "Time", "Why"};
    for (std::size_t i = 0; i < 16; ++i) {
        Request r;
        r.prompt = starts[i];
        r.params.seed = 1000 + i;
        r.params.temperature = i % 4 == 0 ? 0.0f : 0.6f + 0.1f * static_cast<float>(i % 5);
        r.params.top_k = i % 3 == 0 ? 40 : 0;
        r.params.top_p = i % 5 == 1 ? 0.9 : 1.0;
        r.params.repetition_penalty = i % 2 ? 1.1f : 1.0f;
        r.options.max_new_tokens = 8 + 3 * i;
        if (i % 4 == 2) r.options.stop = {"\n", "."};
        out.push_back(r);
    }
    return out;
}

struct Streamed {
    Completion completion;
    std::string pieces;
};

}  // namespace

TEST_CASE("BatchGenerator: every request gets what Generator gives it alone", "[batching]") {
    with_model<float>([](auto& model) {
        const auto rs = requests();
        std::vector<Completion> alone;
        for (const auto& r : rs) {
            auto sampler = make_sampler(r.params);
            Generator g(model, tokenizer(), sampler);
            alone.push_back(g.generate(r.prompt, r.options, [](std::string_view) {}));
        }
        // Four slots for sixteen requests: they join as others leave; prompts in chunks of 2.
        BatchGenerator<std::decay_t<decltype(model)>, DefaultSampler> batch(model, tokenizer(), {4, 0, 2});
        std::vector<Streamed> got(rs.size());
        for (std::size_t i = 0; i < rs.size(); ++i) {
            batch.add(rs[i].prompt, rs[i].options, make_sampler(rs[i].params),
                      [&got, i](std::string_view piece) { got[i].pieces += piece; },
                      [&got, i](Completion&& c) { got[i].completion = std::move(c); });
        }
        CHECK(batch.waiting() == 16);
        std::size_t most = 0;
        while (!batch.idle()) {
            batch.step();
            most = std::max(most, batch.running());
        }
        CHECK(most == 4);
        for (std::size_t i = 0; i < rs.size(); ++i) {
            INFO("request " << i << ": \"" << rs[i].prompt << "\" -> \"" << alone[i].text << "\"");
            CHECK(got[i].completion.text == alone[i].text);
            CHECK(got[i].completion.tokens == alone[i].tokens);
            CHECK(got[i].completion.stop_reason == alone[i].stop_reason);
            CHECK(got[i].completion.seed == alone[i].seed);
            CHECK(got[i].pieces == got[i].completion.text);
        }
    });
}

TEST_CASE("BatchGenerator: a prompt that begins as a finished one did runs only the rest, with the same tokens", "[batching][prompt-cache]") {
    with_model<float>([](auto& model) {
        using Batch = BatchGenerator<std::decay_t<decltype(model)>, DefaultSampler>;
        const auto ps = prompts();
        GenerationOptions options;
        options.max_new_tokens = 12;
        options.ignore_eos = true;
        SamplingParams greedy;
        greedy.temperature = 0;
        // Runs `prompts` together in `batch`; their completions in order.
        const auto run = [&](Batch& batch, const std::vector<std::vector<TokenId>>& prompts, const GenerationOptions& o) {
            std::vector<Completion> done(prompts.size());
            for (std::size_t i = 0; i < prompts.size(); ++i)
                batch.add(prompts[i], o, make_sampler(greedy), nullptr, [&done, i](Completion&& c) { done[i] = std::move(c); });
            batch.run();
            return done;
        };
        const auto join = [](std::vector<TokenId> a, const std::vector<TokenId>& b) {
            a.insert(a.end(), b.begin(), b.end());
            return a;
        };
        Batch reusing(model, tokenizer(), {2, 0, 64});
        BatchOptions plain_options{2, 0, 64};
        plain_options.reuse_prompts = false;
        Batch plain(model, tokenizer(), plain_options);
        // Two conversations at once; each next turn is its history, the reply, and new text.
        std::vector<std::vector<TokenId>> turn = {ps[2], ps[5]};
        const std::vector<TokenId>* added[] = {&ps[10], &ps[15]};  // what each next turn adds after the reply
        for (int t = 0; t < 3; ++t) {
            INFO("turn " << t);
            const auto got = run(reusing, turn, options);
            const auto want = run(plain, turn, options);
            for (std::size_t i = 0; i < turn.size(); ++i) {
                INFO("conversation " << i << ", prompt of " << turn[i].size() << " tokens");
                CHECK(got[i].tokens == want[i].tokens);
                CHECK(got[i].prompt_tokens == turn[i].size());
                CHECK(want[i].cached_prompt_tokens == 0);
                // Its slot held the last turn's prompt and all its reply but the last token (never run).
                if (t == 0) CHECK(got[i].cached_prompt_tokens == 0);
                else CHECK(got[i].cached_prompt_tokens == turn[i].size() - added[t - 1]->size() - 1);
            }
            if (t < 2)
                for (std::size_t i = 0; i < turn.size(); ++i) turn[i] = join(join(turn[i], got[i].tokens), *added[t]);
        }
        // The same prompt again: all but its last token come from the cache, the reply is the same.
        const auto first = run(reusing, {ps[9]}, options);
        const auto again = run(reusing, {ps[9]}, options);
        CHECK(again[0].cached_prompt_tokens == ps[9].size() - 1);
        CHECK(again[0].tokens == first[0].tokens);
        // Unless the request says no.
        GenerationOptions fresh = options;
        fresh.reuse_cached_prompt = false;
        const auto refused = run(reusing, {ps[9]}, fresh);
        CHECK(refused[0].cached_prompt_tokens == 0);
        CHECK(refused[0].tokens == first[0].tokens);
    });
}

// BatchGenerator chooses its requests' tokens through run_host_tasks (the CPU model's pool):
// every task runs exactly once, through GPT2 and through the LanguageModel interface alike,
// and the test above has what Generator gives with tokens chosen so.
TEST_CASE("run_host_tasks runs every task once, on the model's threads", "[batching]") {
    with_model<float>([](auto& model) {
        STATIC_REQUIRE(RunsHostTasks<std::decay_t<decltype(model)>>);
        std::vector<std::atomic<int>> runs(1000);
        auto count = [&](std::size_t i) { runs[i].fetch_add(1); };
        model.run_host_tasks(runs.size(), TaskRef(count));
        CHECK(std::all_of(runs.begin(), runs.end(), [](const std::atomic<int>& n) { return n.load() == 1; }));
        model.run_host_tasks(0, TaskRef(count));  // nothing to run
        CHECK(std::all_of(runs.begin(), runs.end(), [](const std::atomic<int>& n) { return n.load() == 1; }));
    });
    Cpu cpu(2);
    const auto model = open_gpt2(cpu, trained);
    std::vector<std::atomic<int>> runs(100);
    auto count = [&](std::size_t i) { runs[i].fetch_add(1); };
    model->run_host_tasks(runs.size(), TaskRef(count));
    CHECK(std::all_of(runs.begin(), runs.end(), [](const std::atomic<int>& n) { return n.load() == 1; }));
}

TEST_CASE("BatchGenerator: a cancelled request ends at the next step and frees its slot", "[batching]") {
    with_model<float>([](auto& model) {
        using Batch = BatchGenerator<std::decay_t<decltype(model)>, DefaultSampler>;
        Batch batch(model, tokenizer(), {2, 64, 256});
        GenerationOptions options;
        options.max_new_tokens = 40;
        options.ignore_eos = true;
        std::vector<Completion> done(3);
        std::vector<std::string> pieces(3);
        std::vector<typename Batch::RequestId> ids;
        for (std::size_t i = 0; i < 3; ++i) {
            SamplingParams p;
            p.seed = i;
            ids.push_back(batch.add("Once", options, make_sampler(p), [&, i](std::string_view s) { pieces[i] += s; },
                                    [&, i](Completion&& c) { done[i] = std::move(c); }));
        }
        for (int s = 0; s < 5; ++s) batch.step();
        CHECK(batch.running() == 2);
        CHECK(batch.waiting() == 1);
        CHECK(batch.cancel(ids[0]));
        CHECK_FALSE(batch.cancel(9999));
        batch.step();  // the cancelled one leaves, the waiting one takes its slot
        CHECK(done[0].stop_reason == StopReason::cancelled);
        CHECK(done[0].text == pieces[0]);
        CHECK(done[0].tokens.size() == 5);
        CHECK(batch.running() == 2);
        CHECK(batch.waiting() == 0);
        batch.run();
        CHECK(done[1].stop_reason == StopReason::max_new_tokens);
        CHECK(done[2].stop_reason == StopReason::max_new_tokens);
        CHECK(done[2].tokens.size() == 40);
        // A prompt the sequences cannot hold is refused when it is added.
        CHECK_THROWS_WITH(batch.add(std::vector<TokenId>(64, 5), options, make_sampler({}), nullptr, nullptr),
                          Catch::Contains("the context holds 64"));
        CHECK_THROWS_WITH(Batch(model, tokenizer(), {0, 0, 8}),
                          Catch::Contains("sequences must be at least 1"));
    });
}
