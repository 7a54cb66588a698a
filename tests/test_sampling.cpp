// Sampling: every processor against hand-computed vectors, the selectors' statistics, seeding.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <tessera/sampling/sampler.hpp>

using namespace tessera;

namespace {

std::vector<float> log_probs(std::initializer_list<double> p) {
    std::vector<float> l;
    for (const double x : p) l.push_back(static_cast<float>(std::log(x)));
    return l;
}

// The distribution the logits now describe (removed tokens get 0).
std::vector<double> probs(const std::vector<float>& logits) { return detail::softmax(logits); }

const std::vector<TokenId> no_history;

}  // namespace

TEST_CASE("Rng is xoshiro256** seeded by SplitMix64", "[sampling][rng]") {
    // Reference values from an independent Python implementation of both algorithms.
    Rng rng(42);
    CHECK(rng.next() == 0x15780b2e0c2ec716ull);
    CHECK(rng.next() == 0x6104d9866d113a7eull);
    CHECK(rng.next() == 0xae17533239e499a1ull);
    Rng a(7), b(7);
    for (int i = 0; i < 100; ++i) {
        const double u = a.uniform();
        REQUIRE(u == b.uniform());
        REQUIRE((u >= 0 && u < 1));
    }
}

TEST_CASE("Temperature scales, and 0 keeps only the argmax", "[sampling]") {
    std::vector<float> l{1, 2, 3};
    Temperature(2).apply(l, no_history);
    CHECK(l == std::vector<float>{0.5f, 1.0f, 1.5f});
    std::vector<float> g{1, 3, 3, 2};
    Temperature(0).apply(g, no_history);
    CHECK(g[1] == 3);  // the lowest id among equals
    CHECK((std::isinf(g[0]) && std::isinf(g[2]) && std::isinf(g[3])));
    CHECK_THROWS_WITH(Temperature(-0.5f), Catch::Contains("temperature must be >= 0"));
    CHECK_THROWS_AS(Temperature(NAN), ArgumentError);
}

TEST_CASE("TopK keeps the k largest and everything tied with the k-th", "[sampling]") {
    std::vector<float> l{1, 3, 3, 2};
    TopK(2).apply(l, no_history);
    CHECK((l[1] == 3 && l[2] == 3 && std::isinf(l[0]) && std::isinf(l[3])));
    std::vector<float> t{1, 3, 3, 2};
    TopK(1).apply(t, no_history);  // the tie at the k-th value is kept whole
    CHECK((t[1] == 3 && t[2] == 3 && std::isinf(t[0]) && std::isinf(t[3])));
    std::vector<float> all{1, 3, 3, 2};
    TopK(0).apply(all, no_history);
    CHECK(all == std::vector<float>{1, 3, 3, 2});
    CHECK_THROWS_WITH(TopK(-1), "top_k must be >= 0, got -1");
}

TEST_CASE("TopP keeps the smallest nucleus reaching p", "[sampling]") {
    auto l = log_probs({0.1, 0.2, 0.3, 0.4});
    TopP(0.7).apply(l, no_history);
    const auto p = probs(l);
    CHECK(p[0] == 0);
    CHECK(p[1] == 0);
    CHECK(p[2] == Approx(0.428571).epsilon(1e-5));
    CHECK(p[3] == Approx(0.571429).epsilon(1e-5));
    auto one = log_probs({0.1, 0.2, 0.3, 0.4});
    TopP(0.01).apply(one, no_history);  // always at least one token
    CHECK(probs(one)[3] == Approx(1.0));
    CHECK_THROWS_WITH(TopP(0), Catch::Contains("top_p must be in (0, 1]"));
    CHECK_THROWS_AS(TopP(1.5), ArgumentError);
}

TEST_CASE("MinP keeps probabilities >= min_p times the largest", "[sampling]") {
    auto l = log_probs({0.1, 0.2, 0.3, 0.4});
    MinP(0.5).apply(l, no_history);  // threshold 0.2
    const auto p = probs(l);
    CHECK(p[0] == 0);
    CHECK(p[1] == Approx(0.2 / 0.9));
    CHECK(p[2] == Approx(0.3 / 0.9));
    CHECK(p[3] == Approx(0.4 / 0.9));
    CHECK_THROWS_WITH(MinP(1.5), Catch::Contains("min_p must be in [0, 1]"));
}

TEST_CASE("RepetitionPenalty divides positive and multiplies negative logits, once per token", "[sampling]") {
    std::vector<float> l{2, -2, 1, 0.5f};
    const std::vector<TokenId> history{0, 1, 0};
    RepetitionPenalty(2, 64).apply(l, history);
    CHECK(l == std::vector<float>{1, -4, 1, 0.5f});
    std::vector<float> w{2, -2, 1, 0.5f};
    const std::vector<TokenId> longer{0, 1, 2};
    RepetitionPenalty(2, 1).apply(w, longer);  // only the last token is in the window
    CHECK(w == std::vector<float>{2, -2, 0.5f, 0.5f});
    CHECK_THROWS_WITH(RepetitionPenalty(0, 64), Catch::Contains("repetition_penalty must be > 0"));
}

TEST_CASE("Presence and frequency penalties subtract as OpenAI defines", "[sampling]") {
    std::vector<float> l{0, 0, 0, 0};
    const std::vector<TokenId> history{1, 1, 2};
    PresenceFrequencyPenalty(0.5f, 0.25f, 64).apply(l, history);
    CHECK(l == std::vector<float>{0, -1.0f, -0.75f, 0});
    CHECK_THROWS_WITH(PresenceFrequencyPenalty(3, 0, 64), Catch::Contains("presence_penalty must be in [-2, 2]"));
    CHECK_THROWS_WITH(PresenceFrequencyPenalty(0, -2.5f, 64), Catch::Contains("frequency_penalty must be in [-2, 2]"));
}

TEST_CASE("NoRepeatNgram bans the tokens that would repeat an n-gram", "[sampling]") {
    std::vector<float> l(10, 0.0f);
    const std::vector<TokenId> h{5, 6, 7, 5};
    NoRepeatNgram(2).apply(l, h);  // (5, 6) seen: after 5, 6 is banned
    CHECK(std::isinf(l[6]));
    CHECK(l[7] == 0);
    std::vector<float> l3(10, 0.0f);
    const std::vector<TokenId> h3{1, 2, 3, 1, 2};
    NoRepeatNgram(3).apply(l3, h3);  // (1, 2, 3) seen: after 1, 2 comes no 3
    CHECK(std::isinf(l3[3]));
    CHECK(std::count_if(l3.begin(), l3.end(), [](float x) { return std::isinf(x); }) == 1);
    CHECK_THROWS_AS(NoRepeatNgram(-2), ArgumentError);
}

TEST_CASE("Multinomial draws follow the distribution (chi-square at a fixed seed)", "[sampling]") {
    const auto l = log_probs({0.1, 0.2, 0.3, 0.4});
    Rng rng(12345);
    std::vector<int> counts(4, 0);
    constexpr int draws = 100000;
    for (int i = 0; i < draws; ++i) ++counts[static_cast<std::size_t>(Multinomial{}(l, rng))];
    double chi2 = 0;
    const double expected[] = {0.1, 0.2, 0.3, 0.4};
    for (int i = 0; i < 4; ++i) chi2 += std::pow(counts[i] - draws * expected[i], 2) / (draws * expected[i]);
    INFO("counts " << counts[0] << " " << counts[1] << " " << counts[2] << " " << counts[3] << ", chi2 " << chi2);
    CHECK(chi2 < 16.27);  // the 0.999 quantile of chi-square with 3 degrees of freedom
}

TEST_CASE("Greedy picks the largest logit; all-filtered logits are an error", "[sampling]") {
    Rng rng(1);
    const std::vector<float> l{0.5f, 2.0f, 2.0f, -1.0f};
    CHECK(Greedy{}(l, rng) == 1);
    const std::vector<float> none(3, removed_logit);
    CHECK_THROWS_WITH(Multinomial{}(none, rng), "sampling: every token was filtered out");
}

TEST_CASE("The same seed gives the same tokens; different seeds differ", "[sampling]") {
    const auto draw = [](std::uint64_t seed) {
        SamplingParams params;
        params.seed = seed;
        params.top_k = 40;
        params.temperature = 0.8f;
        auto sampler = make_sampler(params);
        std::vector<TokenId> out;
        for (int i = 0; i < 50; ++i) {
            std::vector<float> logits(100);
            for (std::size_t j = 0; j < logits.size(); ++j) logits[j] = static_cast<float>((j * 37 % 100) / 25.0);
            out.push_back(sampler.sample(logits, out));
        }
        return out;
    };
    CHECK(draw(1) == draw(1));
    CHECK(draw(1) != draw(2));
    SamplingParams greedy;
    greedy.temperature = 0;
    auto sampler = make_sampler(greedy);
    std::vector<float> logits{0.1f, 0.7f, 0.2f};
    CHECK(sampler.sample(logits, no_history) == 1);
    SamplingParams bad;
    bad.top_p = 0;
    CHECK_THROWS_WITH(make_sampler(bad), Catch::Contains("top_p"));
}
