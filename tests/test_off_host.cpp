// GPT2 on a backend whose memory the host cannot touch (OffHost, the CPU in a device's
// clothes): the CUDA path's host-side logic, checked where there is no GPU. The logits must
// equal the CPU model's (the same kernels run; 1e-5 because Eigen's reductions peel to an
// aligned address found at run time, so the summation order follows where the heap put each
// scratch buffer: 6.6e-7 seen), arrive through the backend's ordered transfers (OffHost runs
// queued work only when the host waits, so a result read without waiting is stale), and every
// one-token step must run as one replayable unit that makes no backend memory and transfers
// nothing but its logits, queued (OffHost throws at once otherwise).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tessera/models/load_gpt2.hpp>
#include <tessera/models/open_tokenizer.hpp>
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
        CHECK(off.queued() == 0);  // the host waited for every step it read

        // A bad id fails inside the step; the position does not move and the model goes on.
        const std::size_t position = model.position();
        CHECK_THROWS_WITH(model.decode(512), "token id 512 at position 0 is outside the model's vocabulary of 512");
        CHECK(model.position() == position);
        CHECK_NOTHROW(model.decode(7));
    });
}

TEST_CASE("The first decode step sizes its buffers before the step, not inside it", "[gpt2][off-host]") {
    OffHost off(1);
    load_gpt2(off, test::gpt2_fixtures + "/tiny", [&](auto& model) {
        CHECK_NOTHROW(model.decode(1));  // no prefill before: the scratch is still empty
        CHECK_NOTHROW(model.decode(2));
        CHECK(off.steps == 2);
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

TEST_CASE("A backend without bf16 attention refuses a bf16 KV cache and keeps its f32 one", "[gpt2][off-host][kv]") {
    OffHost off(1);
    load_gpt2(off, test::gpt2_fixtures + "/tiny", [&](auto& model) {
        const std::vector<TokenId> ids{1, 2};
        model.prefill(ids);
        CHECK_THROWS_WITH(model.use_kv_cache(KvPrecision::bf16),
                          Catch::Contains("the off-host backend keeps keys and values in f32 only"));
        CHECK(model.kv_cache() == KvPrecision::f32);
        CHECK(model.position() == 2);  // nothing was lost
        CHECK(model.decode(3).size() == model.vocabulary_size());
    });
}

// The instrument itself: each break of the contract that a CUDA run would punish (sometimes
// silently) fails here, at once or as a stale result.
TEST_CASE("The device-style backend punishes what a CUDA stream and graph capture would", "[off-host][errors]") {
    OffHost off(1);
    Tensor<float, Extents<4>, OffHost> x;
    const std::vector<float> values{1, 2, 3, 4};
    copy_from_host(off, std::span<const float>(values), x);
    OffHost::HostBuffer<float> back(4);
    off.download_async(x.data(), back.data(), 4);
    CHECK(std::vector<float>(back.data(), back.data() + 4) == std::vector<float>(4, 0.0f));  // not waited for: stale
    off.synchronize();
    CHECK(std::vector<float>(back.data(), back.data() + 4) == values);
    CHECK(to_host(off, x) == values);

    std::vector<float> pageable(4);
    CHECK_THROWS_WITH(off.download_async(x.data(), pageable.data(), 4),
                      "OffHost: an async download into memory that is not a HostBuffer");
    const auto in_step = [&](auto&& what) { off.run_as_graph(what); };
    CHECK_THROWS_WITH(in_step([] { Tensor<float, Extents<4>, OffHost> y; }), "OffHost: a buffer allocated inside a captured step");
    CHECK_THROWS_WITH(in_step([&] { copy_from_host(off, std::span<const float>(values), x); }),
                      "OffHost: an upload inside a captured step");
    CHECK_THROWS_WITH(in_step([&] { to_host(off, x); }), "OffHost: a download inside a captured step");
    CHECK_THROWS_WITH(in_step([&] { off.synchronize(); }), "OffHost: a synchronize inside a captured step");
    CHECK_NOTHROW(in_step([&] { off.download_async(x.data(), back.data(), 4); }));  // into pinned memory: allowed
    off.synchronize();
}

// Greedy decoding on a device finds the token there: one id crosses, not V logits. Tokens equal
// the CPU model's read from its logits (the sampler's own greedy choice), and the model's
// argmax refuses NaN / infinity / nothing-left rows as the sampler would.
TEST_CASE("Greedy generation on a device backend copies token ids, not logits", "[gpt2][off-host][argmax]") {
    const std::string dir = std::string(TESSERA_TEST_DATA_DIR) + "/fortunes-gpt2";  // a trained model: text, not noise
    const BpeTokenizer tokenizer = open_tokenizer(dir);
    GenerationOptions options;
    options.max_new_tokens = 24;
    options.ignore_eos = true;
    SamplingParams params;
    params.temperature = 0;
    params.seed = 3;
    Cpu cpu(2);
    OffHost off(2);
    Completion want, got;
    load_gpt2(cpu, dir, [&](auto& model) {
        auto sampler = make_sampler(params);
        GenerationOptions with_logprobs = options;
        with_logprobs.logprobs = 0;  // needs the logits: the sampler chooses from them
        want = Generator(model, tokenizer, sampler).generate("The", with_logprobs, [](std::string_view) {});
    });
    load_gpt2(off, dir, [&](auto& model) {
        auto sampler = make_sampler(params);
        const int downloads = OffHost::downloads;
        got = Generator(model, tokenizer, sampler).generate("The", options, [](std::string_view) {});
        CHECK(OffHost::downloads == downloads);  // no logits came back
    });
    REQUIRE(want.tokens.size() == 24);
    CHECK(got.tokens == want.tokens);
    CHECK(got.text == want.text);
}

TEST_CASE("argmax_rows picks the lowest of equal maxima and refuses NaN and infinity", "[off-host][argmax]") {
    OffHost off(1);
    Cpu cpu(1);
    const float inf = INFINITY;
    const std::vector<float> rows{1, 5, 5, 2,  //
                                  -inf, -inf, -inf, -inf,  //
                                  0, NAN, 9, 1,  //
                                  0, inf, 1, 2,  //
                                  -inf, -3, -inf, -7};
    const std::vector<std::int32_t> want{1, -1, -1, -1, 1};
    Tensor<float, Extents<dyn, 4>, OffHost> x(5);
    copy_from_host(off, std::span<const float>(rows), x);
    std::vector<std::int32_t> got(5, 99), on_cpu(5, 99);
    off.argmax_rows(x.view(), got);
    CHECK(got == want);
    Tensor<float, Extents<dyn, 4>, Cpu> h(5);
    copy_from_host(std::span<const float>(rows), h);
    cpu.argmax_rows(h.view(), on_cpu);
    CHECK(on_cpu == want);
}
