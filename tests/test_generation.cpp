// Generator: every stop condition, streaming, truncation and context shift, driven by a
// scripted model (its logits make a chosen token the argmax) and the real GPT-2 tokenizer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <tessera/generation/generator.hpp>
#include <tessera/sampling/sampler.hpp>

#include "gpt2_tokenizer.hpp"

using namespace tessera;

namespace {

using test::data_dir;
using test::gpt2;

// A stand-in for GPT2 with a tiny context: with n tokens in the cache it "predicts" script[n - 1]
// (so after a 1-token prompt the generated tokens are script[0], script[1], ...).
struct ScriptedModel {
    static constexpr std::size_t n_ctx = 16;
    static constexpr std::size_t vocab_size = 50257;
    std::vector<TokenId> script;
    std::size_t position_ = 0;
    std::size_t prefills = 0;
    std::vector<float> logits = std::vector<float>(vocab_size);

    static constexpr std::size_t context_length() { return n_ctx; }
    std::size_t vocabulary_size() const { return vocab_size; }
    void reset() { position_ = 0; }
    std::size_t position() const { return position_; }
    std::span<const float> prefill(std::span<const TokenId> tokens) {
        ++prefills;
        position_ += tokens.size();
        return next();
    }
    std::span<const float> decode(TokenId) {
        ++position_;
        return next();
    }
    std::span<const float> next() {
        std::fill(logits.begin(), logits.end(), 0.0f);
        logits[static_cast<std::size_t>(script[(position_ - 1) % script.size()])] = 10.0f;
        return logits;
    }
};

using GreedySampler = Sampler<Greedy>;

struct Run {
    Completion completion;
    std::vector<std::string> pieces;
};

Run run(ScriptedModel& model, const std::string& prompt, GenerationOptions options) {
    GreedySampler sampler(Rng(1), Greedy{});
    Generator generator(model, gpt2(), sampler);
    Run r;
    r.completion = generator.generate(prompt, options, [&](std::string_view piece) { r.pieces.emplace_back(piece); });
    std::string joined;
    for (const auto& p : r.pieces) joined += p;
    REQUIRE(joined == r.completion.text);  // the stream adds up to the result
    return r;
}

std::vector<TokenId> ids(const std::string& text) { return gpt2().encode(text); }

}  // namespace

TEST_CASE("Generation stops after max_new_tokens", "[generation]") {
    ScriptedModel model{ids(" one two three four five six")};
    GenerationOptions options;
    options.max_new_tokens = 3;
    const auto r = run(model, "Count:", options);
    CHECK(r.completion.stop_reason == StopReason::max_new_tokens);
    CHECK(r.completion.tokens.size() == 3);
    CHECK(r.completion.decode_steps == 2);  // the last token needs no forward pass
}

TEST_CASE("Generation stops at EOS unless told to ignore it", "[generation]") {
    auto script = ids(" done");
    script.push_back(50256);
    script.push_back(ids(" more")[0]);
    // The prompt has 2 tokens: the model then predicts script[1], script[2], ...
    ScriptedModel model{script};
    const auto prompt_ids = ids("A B");
    REQUIRE(prompt_ids.size() == 2);
    model.script.insert(model.script.begin(), prompt_ids.front());
    GenerationOptions options;
    const auto r = run(model, "A B", options);
    CHECK(r.completion.stop_reason == StopReason::eos);
    CHECK(r.completion.text == " done");
    options.ignore_eos = true;
    options.max_new_tokens = 3;
    ScriptedModel again{model.script};
    const auto r2 = run(again, "A B", options);
    CHECK(r2.completion.stop_reason == StopReason::max_new_tokens);
    CHECK(r2.completion.text == " done<|endoftext|> more");
}

TEST_CASE("A stop string spanning tokens ends the text without being shown", "[generation]") {
    // " Hello world. The end" is several tokens; the stop string "world. T" spans three.
    ScriptedModel model{ids(" Hello world. The end")};  // after the 1-token prompt: script[0], [1], ...
    GenerationOptions options;
    options.stop = {"world. T", "never"};
    const auto r = run(model, "x", options);
    CHECK(r.completion.stop_reason == StopReason::stop_string);
    CHECK(r.completion.text == " Hello ");
    for (const auto& piece : r.pieces) CHECK(piece.find('w') == std::string::npos);  // no partial stop string
}

TEST_CASE("A stop string that is not valid UTF-8 is refused before generating", "[generation]") {
    ScriptedModel model{ids(" caf\u00e9")};
    GenerationOptions options;
    options.stop = {"ok", "\xbe\x8d"};  // continuation bytes: would match inside a character
    CHECK_THROWS_WITH(run(model, "x", options), Catch::Contains("is not valid UTF-8 (at byte 0)"));
    CHECK(model.prefills == 0);
    options.stop = {"\xc3"};  // a truncated character
    CHECK_THROWS_AS(run(model, "x", options), ArgumentError);
}

TEST_CASE("A prefix of a stop string is held back, then released when it does not complete", "[generation]") {
    ScriptedModel model{ids(" world wide")};
    GenerationOptions options;
    options.stop = {" world war"};
    options.max_new_tokens = 2;  // " world", " wide"
    const auto r = run(model, "x", options);
    CHECK(r.completion.stop_reason == StopReason::max_new_tokens);
    CHECK(r.completion.text == " world wide");
    REQUIRE(!r.pieces.empty());
    CHECK(r.pieces.front() == " world wide");  // " world" was held back: it could have become " world war"
}

TEST_CASE("Characters split across tokens are streamed whole", "[generation]") {
    ScriptedModel model{ids("x👍🏽👍🏽")};
    GenerationOptions options;
    options.max_new_tokens = 8;
    const auto r = run(model, "x", options);
    for (const auto& piece : r.pieces) CHECK(utf8::first_invalid(piece) == piece.size());
}

TEST_CASE("A full context stops, or shifts with context_shift", "[generation]") {
    ScriptedModel model{ids("x a b c d e f g h i j k l m n o p q r s t u v w")};
    GenerationOptions options;
    options.max_new_tokens = 40;
    const auto r = run(model, "x", options);
    CHECK(r.completion.stop_reason == StopReason::context_full);
    CHECK(r.completion.tokens.size() == 16);  // 1 prompt token + 15 decoded fill 16 positions, plus the last sampled
    options.context_shift = true;
    options.max_new_tokens = 30;
    ScriptedModel shifting{model.script};
    const auto s = run(shifting, "x", options);
    CHECK(s.completion.stop_reason == StopReason::max_new_tokens);
    CHECK(s.completion.tokens.size() == 30);
    CHECK(s.completion.context_shifts >= 1);
}

TEST_CASE("A prompt longer than the context is an error, or truncated on request", "[generation]") {
    ScriptedModel model{ids(" z")};
    const std::string long_prompt = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen";
    GenerationOptions options;
    options.max_new_tokens = 1;
    GreedySampler sampler(Rng(1), Greedy{});
    Generator generator(model, gpt2(), sampler);
    CHECK_THROWS_WITH(generator.generate(long_prompt, options, [](std::string_view) {}),
                      Catch::Contains("the prompt has 16 tokens but the context holds 16"));
    options.truncate_prompt = true;
    const auto c = generator.generate(long_prompt, options, [](std::string_view) {});
    CHECK(c.truncated_prompt_tokens == 1);
    CHECK(c.prompt_tokens == 15);
}

struct SmallVocabModel : ScriptedModel {
    std::size_t vocabulary_size() const { return 512; }
};

TEST_CASE("A tokenizer that does not match the model is refused", "[generation]") {
    SmallVocabModel model;
    GreedySampler sampler(Rng(1), Greedy{});
    CHECK_THROWS_WITH((Generator<SmallVocabModel, GreedySampler>(model, gpt2(), sampler)),
                      Catch::Contains("the tokenizer has 50257 tokens but the model's vocab_size is 512"));
}

namespace {

// The scripted model that also finds the greedy token itself (as GPT2::prefill_argmax does on a
// device), counting how often; `broken` makes its logits NaN (and its argmax refuse them).
struct ArgmaxScriptedModel : ScriptedModel {
    std::size_t argmax_calls = 0;
    bool broken = false;
    std::optional<TokenId> prefill_argmax(std::span<const TokenId> tokens) {
        ++argmax_calls;
        position_ += tokens.size();
        next();
        if (broken) {
            logits[3] = NAN;
            return std::nullopt;
        }
        return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    std::span<const float> last_logits() { return logits; }
};

Completion generate_with(auto& model, auto& sampler, const std::string& prompt, const GenerationOptions& options,
                         std::vector<std::string>& pieces) {
    Generator generator(model, gpt2(), sampler);
    return generator.generate(prompt, options, [&](std::string_view piece) { pieces.emplace_back(piece); });
}

}  // namespace

// Every stop condition gives the same completion whether the sampler reads the logits or the
// model hands over the greedy token (the path a GPU takes to copy one id instead of V logits).
TEST_CASE("Greedy generation through the model's argmax equals generation from the logits", "[generation][argmax]") {
    auto script = ids(" Hello world. The end x a b c d e f g h i j k");
    GenerationOptions options;
    options.max_new_tokens = GENERATE(3, 40);
    options.context_shift = GENERATE(false, true);
    const std::vector<std::vector<std::string>> stops{{}, {"world. T"}};
    options.stop = GENERATE_REF(from_range(stops));
    INFO("max_new_tokens " << options.max_new_tokens << ", context_shift " << options.context_shift << ", stops "
                           << options.stop.size());
    ScriptedModel plain{script};
    ArgmaxScriptedModel direct;
    direct.script = script;
    GreedySampler sampler(Rng(1), Greedy{});
    std::vector<std::string> plain_pieces, direct_pieces;
    const Completion want = generate_with(plain, sampler, "x", options, plain_pieces);
    const Completion got = generate_with(direct, sampler, "x", options, direct_pieces);
    CHECK(direct.argmax_calls > 0);
    CHECK(direct.prefills == 0);  // no logits were read
    CHECK(got.tokens == want.tokens);
    CHECK(got.text == want.text);
    CHECK(got.stop_reason == want.stop_reason);
    CHECK(got.context_shifts == want.context_shifts);
    CHECK(direct_pieces == plain_pieces);
}

TEST_CASE("The argmax path is taken only where the sampler's choice is the argmax", "[generation][argmax]") {
    SamplingParams params;
    params.seed = 1;
    params.temperature = 0;
    CHECK(make_sampler(params).picks_argmax());
    params.top_k = 5;  // truncations keep the largest logit
    params.top_p = 0.5;
    params.min_p = 0.1;
    CHECK(make_sampler(params).picks_argmax());
    for (int change = 0; change < 5; ++change) {
        SamplingParams p = params;
        if (change == 0) p.temperature = 0.7f;
        if (change == 1) p.repetition_penalty = 1.1f;
        if (change == 2) p.presence_penalty = 0.5f;
        if (change == 3) p.no_repeat_ngram = 2;
        if (change == 4) p.logit_bias = {{7, 5.0f}};
        INFO("change " << change);
        CHECK_FALSE(make_sampler(p).picks_argmax());
    }
    CHECK(Sampler<Greedy>(Rng(1), Greedy{}).picks_argmax());
    CHECK_FALSE(Sampler<Multinomial>(Rng(1), Multinomial{}).picks_argmax());

    // Log-probabilities need the logits: the model's argmax is not used.
    ArgmaxScriptedModel model;
    model.script = ids(" a b c");
    auto sampler = make_sampler(params);
    GenerationOptions options;
    options.max_new_tokens = 3;
    options.logprobs = 2;
    std::vector<std::string> pieces;
    const Completion c = generate_with(model, sampler, "x", options, pieces);
    CHECK(model.argmax_calls == 0);
    CHECK(c.logprobs.size() == 3);
}

TEST_CASE("NaN logits behind the model's argmax are still named by the sampler", "[generation][argmax][errors]") {
    ArgmaxScriptedModel model;
    model.script = ids(" a b c");
    model.broken = true;
    GreedySampler sampler(Rng(1), Greedy{});
    std::vector<std::string> pieces;
    CHECK_THROWS_WITH(generate_with(model, sampler, "x", GenerationOptions{}, pieces),
                      Catch::Contains("the model's logit for token 3 is NaN"));
    CHECK(model.argmax_calls == 1);
}

namespace {
// A tokenizer of another kind than BPE: one token per byte, and 256 ends the text. Generation
// code knows tokenizers only as Tokenizer (text/tokenizer.hpp).
class ByteTokenizer final : public Tokenizer {
public:
    ByteTokenizer() {
        for (int b = 0; b < 256; ++b) bytes_.emplace_back(1, static_cast<char>(b));
        bytes_.emplace_back();  // the end of the text decodes to nothing
    }
    std::size_t vocab_size() const noexcept override { return bytes_.size(); }
    std::optional<TokenId> eos_id() const override { return 256; }
    const std::string& token_bytes(TokenId id) const override { return bytes_.at(static_cast<std::size_t>(id)); }

private:
    std::vector<TokenId> encode_ids(std::string_view text, SpecialTokens) const override {
        std::vector<TokenId> ids;
        for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
        return ids;
    }
    std::vector<std::string> bytes_;
};

struct ByteModel : ScriptedModel {
    std::size_t vocabulary_size() const { return 257; }
};
}  // namespace

// "é" is two bytes, each its own token: the stream never splits it, and the text ends at the
// tokenizer's own end-of-text id.
TEST_CASE("Generation takes any Tokenizer: a byte-level one streams whole characters and stops at its end id", "[generation]") {
    ByteModel model;
    const std::string expected = "caf\xc3\xa9!";
    for (const char c : expected) model.script.push_back(static_cast<unsigned char>(c));
    model.script.push_back(256);
    model.logits.resize(257);
    const ByteTokenizer tokenizer;
    GreedySampler sampler(Rng(1), Greedy{});
    Generator generator(model, tokenizer, sampler);
    std::vector<std::string> pieces;
    GenerationOptions options;
    options.max_new_tokens = 20;
    const Completion c = generator.generate("x", options, [&](std::string_view piece) { pieces.emplace_back(piece); });
    CHECK(c.text == expected);
    CHECK(c.stop_reason == StopReason::eos);
    for (const std::string& p : pieces) CHECK(utf8::first_invalid(p) == p.size());  // never half of "é"
    CHECK_THROWS_WITH(Generator(model, gpt2(), sampler), Catch::Contains("the tokenizer has 50257 tokens but the model's vocab_size is 257"));
}
