// GPT2 on a backend whose memory the host cannot touch (OffHost, the CPU in a device's
// clothes): the CUDA path's host-side logic, checked where there is no GPU. The logits must
// equal the CPU model's (the same kernels run; 1e-5 because Eigen's reductions peel to an
// aligned address found at run time, so the summation order follows where the heap put each
// scratch buffer: 6.6e-7 seen), arrive through download(), and every one-token step must run
// as one replayable unit that makes no backend memory and transfers nothing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tessera/models/load_gpt2.hpp>
#include <tessera/tessera.hpp>

#include "gpt2_fixtures.hpp"
#include "off_host_backend.hpp"

using namespace tessera;
using test::OffHost;

namespace {
double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    return worst;
}
}  // namespace

TEST_CASE("A device-style backend runs GPT-2 through transfers and replayable steps", "[gpt2][off-host]") {
    const std::string dir = test::gpt2_fixtures + "/tiny";
    const auto tokens = test::fixture_tokens();
    Cpu cpu(2);
    OffHost off(2);
    std::vector<float> want_all, want_steps;
    load_gpt2(cpu, dir, [&](auto& model) {
        want_all = model.prefill_all(tokens);
        model.reset();
        model.prefill(std::span<const TokenId>(tokens.data(), 3));
        for (std::size_t i = 3; i < tokens.size(); ++i) {
            const auto logits = model.decode(tokens[i]);
            want_steps.insert(want_steps.end(), logits.begin(), logits.end());
        }
    });
    OffHost::uploads = OffHost::downloads = 0;
    load_gpt2(off, dir, [&](auto& model) {
        CHECK(OffHost::uploads > 0);  // the weights went in by upload
        CHECK(max_abs_difference(model.prefill_all(tokens), want_all) <= 1e-5);
        model.reset();
        model.prefill(std::span<const TokenId>(tokens.data(), 3));
        CHECK(off.steps == 0);  // a prefill of several tokens is not a graph step
        const int downloads_before = OffHost::downloads;
        std::vector<float> got_steps;
        for (std::size_t i = 3; i < tokens.size(); ++i) {
            const auto logits = model.decode(tokens[i]);
            got_steps.insert(got_steps.end(), logits.begin(), logits.end());
        }
        CHECK(max_abs_difference(got_steps, want_steps) <= 1e-5);
        CHECK(off.steps == static_cast<int>(tokens.size() - 3));
        CHECK(OffHost::downloads - downloads_before == off.steps);  // one logits download per step
        CHECK(OffHost::buffers_made_in_steps == 0);

        // A bad id fails inside the step; the position does not move and the model goes on.
        const std::size_t position = model.position();
        CHECK_THROWS_WITH(model.decode(512), "token id 512 at position 0 is outside the model's vocabulary of 512");
        CHECK(model.position() == position);
        CHECK_NOTHROW(model.decode(7));
    });
}

TEST_CASE("The first decode step sizes its buffers before the step, not inside it", "[gpt2][off-host]") {
    OffHost off(1);
    OffHost::buffers_made_in_steps = 0;
    load_gpt2(off, test::gpt2_fixtures + "/tiny", [&](auto& model) {
        model.decode(1);  // no prefill before: the scratch is still empty
        model.decode(2);
        CHECK(off.steps == 2);
        CHECK(OffHost::buffers_made_in_steps == 0);
    });
}

// A backend without a copy kernel (the CUDA backend today) runs one sequence per step: a step
// over two is refused with an error naming the backend, before anything runs.
TEST_CASE("A backend without a copy kernel refuses a step over several sequences", "[gpt2][off-host]") {
    OffHost off(1);
    load_gpt2(off, test::gpt2_fixtures + "/tiny", [&](auto& model) {
        auto a = model.new_sequence(), b = model.new_sequence();
        const std::vector<TokenId> ids{1, 2};
        const std::vector<SequenceTokens> two{{a.get(), ids}, {b.get(), ids}};
        CHECK_THROWS_WITH(model.step(two), Catch::Contains("the off-host backend runs one sequence per step"));
        CHECK(a->position() == 0);
        const std::vector<SequenceTokens> one{{a.get(), ids}};
        CHECK(model.step(one).size() == model.vocabulary_size());
        CHECK(a->position() == 2);
    });
}
