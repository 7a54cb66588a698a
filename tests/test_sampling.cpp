// Sampling: every processor against hand-computed vectors, the selectors' statistics, seeding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include <tessera/sampling/log_probabilities.hpp>
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

// Top-p by its definition: sort by probability (lower id first among equals), keep the shortest
// prefix reaching p (with TopP's 1e-6 slack), at least one token. Which tokens stay.
std::vector<bool> nucleus_by_definition(const std::vector<float>& logits, double p) {
    const auto prob = probs(logits);
    const std::size_t v = logits.size();
    std::vector<std::size_t> order(v);
    for (std::size_t i = 0; i < v; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return prob[a] != prob[b] ? prob[a] > prob[b] : a < b; });
    double cumulative = 0;
    std::size_t keep = 0;
    while (keep < v && cumulative < p * (1 - 1e-6)) cumulative += prob[order[keep++]];
    std::vector<bool> want(v, false);
    for (std::size_t i = 0; i < std::max<std::size_t>(keep, 1); ++i) want[order[i]] = true;
    return want;
}

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

TEST_CASE("Greedy picks the largest logit, all-filtered logits are an error", "[sampling]") {
    Rng rng(1);
    const std::vector<float> l{0.5f, 2.0f, 2.0f, -1.0f};
    CHECK(Greedy{}(l, rng) == 1);
    const std::vector<float> none(3, removed_logit);
    CHECK_THROWS_WITH(Multinomial{}(none, rng), "sampling: every token was filtered out");
}

TEST_CASE("The same seed gives the same tokens, different seeds differ", "[sampling]") {
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

TEST_CASE("Non-finite logits are an error, extreme parameters stay finite", "[sampling]") {
    auto sampler = make_sampler({.seed = 1});
    std::vector<float> nan_logits{0.5f, NAN, 1.0f};
    CHECK_THROWS_WITH(sampler.sample(nan_logits, no_history), Catch::Contains("logit for token 1 is NaN"));
    std::vector<float> inf_logits{0.5f, 1.0f, INFINITY};
    CHECK_THROWS_WITH(sampler.sample(inf_logits, no_history), Catch::Contains("logit for token 2 is infinite"));
    // A temperature so small that dividing would overflow is the greedy limit, not "EOS".
    std::vector<float> l{1.0f, 3.0f, 2.0f};
    Temperature(1e-40f).apply(l, no_history);
    CHECK((l[1] == 3.0f && std::isinf(l[0]) && std::isinf(l[2])));
    // A repetition penalty of 1e-45 boosts the repeated token to the largest float, not to inf.
    std::vector<float> r{1.0f, 2.0f};
    const std::vector<TokenId> history{0};
    RepetitionPenalty(1e-45f, 64).apply(r, history);
    CHECK((std::isfinite(r[0]) && r[0] > 1e30f));
    auto greedy_like = make_sampler({.temperature = 1e-40f, .seed = 3});
    std::vector<float> g{0.1f, 0.2f, 5.0f, 0.3f};
    CHECK(greedy_like.sample(g, no_history) == 2);
}

// The radix-selected nucleus equals the definition (sort by probability, lower id first among
// equals, keep the shortest prefix reaching p) on random logits with many ties.
TEST_CASE("TopP's selection equals the sorted definition", "[sampling]") {
    std::mt19937 gen(5);
    for (int round = 0; round < 200; ++round) {
        const std::size_t v = 1 + gen() % 3000;
        std::vector<float> l(v);
        for (float& x : l) x = static_cast<float>(static_cast<int>(gen() % 40)) * 0.25f;  // ties
        if (round % 3 == 0)
            for (std::size_t i = 0; i < v; i += 2) l[i] = removed_logit;  // after a filter
        if (std::all_of(l.begin(), l.end(), [](float x) { return x == removed_logit; })) l[0] = 0;
        const double p = std::uniform_real_distribution<double>(0.05, 0.999)(gen);
        const std::vector<bool> want = nucleus_by_definition(l, p);
        std::vector<float> got = l;
        TopP(p).apply(got, no_history);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < v; ++i) differ += want[i] != (got[i] != removed_logit);
        INFO("round " << round << ", V " << v << ", p " << p);
        REQUIRE(differ == 0);
    }
}

// The scans skip blocks of 64 tokens in which nothing can matter (sampling/weights.hpp,
// visit_above), and the nucleus of a few survivors is found by sorting them: on vocabularies of
// many blocks, with ties, and with only a few tokens left (as after a top-k), each must give
// what its definition gives.
TEST_CASE("Sparse logits: TopK, TopP and the draw equal their definitions", "[sampling]") {
    std::mt19937 gen(11);
    for (int round = 0; round < 300; ++round) {
        const std::size_t v = 1 + gen() % 5000;
        std::vector<float> l(v);
        for (float& x : l) x = static_cast<float>(static_cast<int>(gen() % 40)) * 0.25f;  // ties
        const std::size_t live = round % 2 == 0 ? 1 + gen() % 60 : v;  // a few survivors, or all
        if (live < v) {
            std::vector<float> sparse(v, removed_logit);
            for (std::size_t j = 0; j < live; ++j) sparse[gen() % v] = l[gen() % v];
            l = sparse;
        }
        if (std::all_of(l.begin(), l.end(), [](float x) { return x == removed_logit; })) l[gen() % v] = 0;
        INFO("round " << round << ", V " << v);

        // TopK: every logit >= the k-th largest stays.
        const std::size_t k = 1 + gen() % 50;
        std::vector<float> sorted = l;
        std::sort(sorted.begin(), sorted.end(), std::greater<float>());
        const float kth = sorted[std::min(k, v) - 1];
        std::vector<float> top = l;
        TopK(static_cast<long>(k)).apply(top, no_history);
        for (std::size_t i = 0; i < v; ++i) REQUIRE(top[i] == (k >= v || l[i] >= kth ? l[i] : removed_logit));

        // TopP: the shortest prefix by probability (lower id first among equals) reaching p.
        const double p = std::uniform_real_distribution<double>(0.05, 0.999)(gen);
        const std::vector<bool> want = nucleus_by_definition(l, p);
        std::vector<float> nucleus = l;
        TopP(p).apply(nucleus, no_history);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < v; ++i) differ += want[i] != (nucleus[i] != removed_logit);
        REQUIRE(differ == 0);

        // The draw: the token where the running sum of the weights, in id order, passes u * total.
        Rng rng(static_cast<std::uint64_t>(round)), same = rng;
        std::vector<float> w;
        const double total = exp_weights(l, w);
        const double target = same.uniform() * total;
        double sum = 0;
        std::size_t expected = 0;
        for (std::size_t i = 0; i < v; ++i) {
            if (w[i] == 0) continue;
            sum += w[i];
            expected = i;
            if (target < sum) break;
        }
        REQUIRE(static_cast<std::size_t>(Multinomial{}(l, rng)) == expected);
    }
}

TEST_CASE("LogitBias adds OpenAI's bias, refuses what it cannot apply", "[sampling]") {
    std::vector<float> l = {1, 2, removed_logit, 4};
    LogitBias({{0, 3.5f}, {2, 100.0f}, {3, -100.0f}}).apply(l, no_history);
    CHECK(l[0] == 4.5f);
    CHECK(l[1] == 2.0f);
    CHECK(l[2] == removed_logit);  // a removed token stays removed
    CHECK(l[3] == -96.0f);
    CHECK_THROWS_WITH(LogitBias({{1, 100.5f}}), Catch::Contains("logit_bias for token 1") && Catch::Contains("[-100, 100]"));
    CHECK_THROWS_WITH(LogitBias({{1, NAN}}), Catch::Contains("logit_bias for token 1"));
    CHECK_THROWS_WITH(LogitBias({{-1, 1.0f}}), Catch::Contains("negative"));
    CHECK_THROWS_WITH(LogitBias({{4, 1.0f}}).apply(l, no_history), Catch::Contains("token 4") && Catch::Contains("4 tokens"));
    // Through the default chain: +100 on a token makes greedy pick it.
    SamplingParams params;
    params.temperature = 0;
    params.logit_bias = {{1, 100.0f}};
    std::vector<float> logits = {5, 0, 3};
    CHECK(make_sampler(params).sample(logits, no_history) == 1);
}

TEST_CASE("token_logprob is the log-softmax, with the most likely tokens in order", "[sampling]") {
    const std::vector<float> l = log_probs({0.1, 0.4, 0.2, 0.3});
    const TokenLogprob r = token_logprob(l, 2, 3);
    CHECK(r.token == 2);
    CHECK(r.logprob == Approx(std::log(0.2)).margin(1e-6));
    REQUIRE(r.top.size() == 3);
    CHECK(r.top[0].first == 1);
    CHECK(r.top[1].first == 3);
    CHECK(r.top[2].first == 2);
    CHECK(r.top[0].second == Approx(std::log(0.4)).margin(1e-6));
    // Shifting every logit changes nothing; ties keep the lower id first; top 0 lists none.
    std::vector<float> shifted = {1000, 1001, 1001, 999};
    const TokenLogprob s = token_logprob(shifted, 0, 2);
    CHECK(s.top[0].first == 1);
    CHECK(s.top[1].first == 2);
    CHECK(s.logprob == Approx(1000 - (1001 + std::log(2 + std::exp(-1.0) + std::exp(-2.0)))).margin(1e-4));
    CHECK(token_logprob(l, 0, 0).top.empty());
}
