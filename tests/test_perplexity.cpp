// The strided sliding window of Hugging Face's perplexity guide, checked target by target
// against hand-computed windows, with a stand-in model whose logits say which window and
// position produced them.
#include <catch2/catch.hpp>

#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include <tessera/models/kl_divergence.hpp>
#include <tessera/models/perplexity.hpp>

using namespace tessera;

namespace {

// Token ids are the positions themselves (token t is t), so the model sees where each window
// begins. Row p of a window beginning at b puts logit mark(b, p) on token p + 1, 0 elsewhere:
// the NLL of target p + 1 then depends on (b, p), and a row reveals its window.
struct WindowRecorder {
    static constexpr std::size_t n_ctx = 4, vocab = 9;
    static float mark(std::size_t b, std::size_t p) { return 1.0f + static_cast<float>(b) + 10.0f * static_cast<float>(p); }
    std::size_t position_ = 0;
    std::vector<float> last;

    std::size_t context_length() const { return n_ctx; }
    std::size_t vocabulary_size() const { return vocab; }
    std::size_t position() const { return position_; }
    void reset() { position_ = 0; }
    std::span<const float> prefill(std::span<const TokenId> ids) {
        last = prefill_all(ids);
        return std::span<const float>(last).last(vocab);
    }
    std::span<const float> decode(TokenId id) { return prefill(std::span<const TokenId>(&id, 1)); }
    std::vector<float> prefill_all(std::span<const TokenId> ids) {
        std::vector<float> rows(ids.size() * vocab, 0.0f);
        const auto b = static_cast<std::size_t>(ids[0]);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            const auto p = static_cast<std::size_t>(ids[i]);
            rows[i * vocab + p + 1] = mark(b, p);
        }
        position_ = ids.size();
        return rows;
    }
};

// -log softmax for a row with one logit m on the target and 0 on the other vocab - 1 entries.
double nll(std::size_t b, std::size_t target) {
    const double m = WindowRecorder::mark(b, target - 1);
    return std::log(std::exp(m) + (WindowRecorder::vocab - 1)) - m;
}

struct Scored {
    PerplexityResult result;
    std::vector<std::pair<std::size_t, std::size_t>> reported;  // (position, window begin of its row)
};

Scored score(std::size_t stride) {
    WindowRecorder model;
    std::vector<TokenId> tokens(8);
    for (std::size_t t = 0; t < tokens.size(); ++t) tokens[t] = static_cast<TokenId>(t);
    Scored s;
    s.result = evaluate_perplexity(model, tokens, stride, [&](std::size_t p, std::span<const float> row) {
        const auto b = static_cast<std::size_t>(std::lround(row[p + 1] - 1.0f - 10.0f * static_cast<float>(p)));
        s.reported.emplace_back(p, b);
    });
    return s;
}

}  // namespace

TEST_CASE("Perplexity: overlapping windows score only the targets past the previous window", "[perplexity]") {
    // T 8, n_ctx 4, stride 2: windows [0,4) [2,6) [4,8). The first scores targets 1, 2, 3 (context
    // from 0); the second 4, 5 (context from 2); the third 6, 7 (context from 4).
    const auto s = score(2);
    CHECK(s.result.windows == 3);
    CHECK(s.result.predicted == 7);
    const double want = nll(0, 1) + nll(0, 2) + nll(0, 3) + nll(2, 4) + nll(2, 5) + nll(4, 6) + nll(4, 7);
    CHECK(s.result.total_nll == Approx(want).epsilon(1e-12));
    const std::vector<std::pair<std::size_t, std::size_t>> rows = {{0, 0}, {1, 0}, {2, 0}, {3, 2}, {4, 2}, {5, 4}, {6, 4}, {7, 4}};
    CHECK(s.reported == rows);
}

TEST_CASE("Perplexity: with stride = n_ctx each later window's first token goes unscored", "[perplexity]") {
    // Windows [0,4) [4,8): token 4 has nothing before it inside its window, as in the guide.
    const auto s = score(4);
    CHECK(s.result.windows == 2);
    CHECK(s.result.predicted == 6);
    const double want = nll(0, 1) + nll(0, 2) + nll(0, 3) + nll(4, 5) + nll(4, 6) + nll(4, 7);
    CHECK(s.result.total_nll == Approx(want).epsilon(1e-12));
    const std::vector<std::pair<std::size_t, std::size_t>> rows = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 4}, {5, 4}, {6, 4}, {7, 4}};
    CHECK(s.reported == rows);
}

TEST_CASE("Perplexity: stride 1 slides one token at a time", "[perplexity]") {
    // Windows [0,4) [1,5) [2,6) [3,7) [4,8): after the first, each scores its last token only,
    // with the 3 tokens before it as context.
    const auto s = score(1);
    CHECK(s.result.windows == 5);
    CHECK(s.result.predicted == 7);
    const double want = nll(0, 1) + nll(0, 2) + nll(0, 3) + nll(1, 4) + nll(2, 5) + nll(3, 6) + nll(4, 7);
    CHECK(s.result.total_nll == Approx(want).epsilon(1e-12));
}

// KL(P_base || P) against closed forms: p = (1/2, 1/2), q = (3/4, 1/4) gives
// 1/2 ln(2/3) + 1/2 ln 2 = 1/2 ln(4/3); logits shifted by a constant are the same distribution.
TEST_CASE("KL divergence and top-1 agreement follow the closed form", "[perplexity][kl]") {
    tessera::DistributionComparison c;
    const std::vector<float> base{0.0f, 0.0f}, three_to_one{std::log(3.0f), 0.0f};
    c.add(base, three_to_one);
    CHECK(c.mean() == Approx(0.5 * std::log(4.0 / 3.0)).epsilon(1e-6));
    CHECK(c.top1_agreement() == 1.0);  // ties pick the first token: both pick token 0
    c.add(three_to_one, three_to_one);
    const std::vector<float> shifted{std::log(3.0f) + 100.0f, 100.0f};
    c.add(three_to_one, shifted);
    CHECK(c.positions() == 3);
    CHECK(c.quantile(0.0) == Approx(0.0).margin(1e-7));
    CHECK(c.quantile(1.0) == Approx(0.5 * std::log(4.0 / 3.0)).epsilon(1e-6));
    CHECK(c.mean() == Approx(0.5 * std::log(4.0 / 3.0) / 3).epsilon(1e-5));
    const std::vector<float> one_to_three{0.0f, std::log(3.0f)};
    c.add(three_to_one, one_to_three);  // 3/4 ln 3 + 1/4 ln(1/3) = 1/2 ln 3
    CHECK(c.quantile(1.0) == Approx(0.5 * std::log(3.0)).epsilon(1e-6));
    CHECK(c.top1_agreement() == Approx(0.75));
    CHECK_THROWS_AS(c.add(base, std::vector<float>{1, 2, 3}), tessera::ArgumentError);
}
