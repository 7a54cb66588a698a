// Every CPU kernel against the naive double-precision references in reference_kernels.hpp,
// over odd sizes (1, 3, 17, 769), static/dynamic extent mixes and 1-3 threads.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include <tessera/tessera.hpp>

#include "reference_kernels.hpp"
#include "skip.hpp"

using namespace tessera;
using test::random_values;
using test::worst_error_ratio;

namespace {

template <class T>
void fill(T& tensor, const std::vector<float>& values) {
    copy_from_host(std::span<const float>(values), tensor);
}

// got(m,n) against a(m,k) · w(n,k)ᵀ + bias. Tolerance: |err| <= 1e-5 · Σ|a·w| (plus 1e-30 for
// exact zeros). fp32 summation of K terms errs by about √K·2⁻²⁴ of that scale (< 2e-6 for
// K = 3072), while one wrong or missing term moves the result by about 1/K of it (>= 3e-4 for
// K <= 3072): the bound separates rounding from bugs.
void require_gemm_matches(const std::vector<float>& got, const std::vector<float>& a, const std::vector<float>& w,
                          const std::vector<float>& bias, std::size_t m, std::size_t n, std::size_t k) {
    std::vector<double> want, scale;
    test::gemm_reference(a, w, bias, m, n, k, want, scale);
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO("m=" << m << " n=" << n << " k=" << k << " element " << i);
        REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5 * scale[i] + 1e-30);
    }
}

// Fills a, w and bias with random values, runs gemm, checks c.
template <class A, class W, class Bias, class C>
void check_gemm_case(Cpu& cpu, A& a, W& w, Bias& bias, C& c, std::uint64_t seed) {
    const auto av = random_values(a.size(), seed), wv = random_values(w.size(), seed + 1),
               bv = random_values(bias.size(), seed + 2);
    fill(a, av);
    fill(w, wv);
    fill(bias, bv);
    gemm(cpu, a, w, bias, c);
    require_gemm_matches(to_host(c), av, wv, bv, a.extent(0), w.extent(0), a.extent(1));
}

}  // namespace

TEST_CASE("gemm matches the reference", "[cpu][gemm]") {
    const unsigned threads = GENERATE(1u, 2u, 3u);
    const std::size_t m = GENERATE(1u, 3u, 17u, 70u);
    const std::size_t n = GENERATE(1u, 17u, 130u);
    const std::size_t k = GENERATE(1u, 3u, 769u);
    const bool with_bias = GENERATE(false, true);
    Cpu cpu(threads);
    Tensor<float, Extents<dyn, dyn>, Cpu> a(m, k), w(n, k), c(m, n);
    Tensor<float, Extents<dyn>, Cpu> bias(with_bias ? n : 0);
    INFO("threads=" << threads);
    check_gemm_case(cpu, a, w, bias, c, 1);
}

TEST_CASE("gemm across several packing blocks in every dimension", "[cpu][gemm]") {
    // Larger than one block of the packed kernel in M (128), N (512 per thread) and K (256),
    // and a multiple of no tile size (8 x 32).
    const unsigned threads = GENERATE(1u, 2u);
    constexpr std::size_t m = 300, n = 1100, k = 520;
    Cpu cpu(threads);
    Tensor<float, Extents<dyn, k>, Cpu> a(m);
    Tensor<float, Extents<n, k>, Cpu> w;
    Tensor<float, Extents<n>, Cpu> bias;
    Tensor<float, Extents<dyn, n>, Cpu> c(m);
    INFO("threads=" << threads);
    check_gemm_case(cpu, a, w, bias, c, 21);
}

TEST_CASE("gemm with static weights and a dynamic sequence", "[cpu][gemm]") {
    Cpu cpu(2);
    Tensor<float, Extents<dyn, 17>, Cpu> x(5);
    Tensor<float, Extents<3, 17>, Cpu> w;
    Tensor<float, Extents<dyn, 3>, Cpu> y(5);
    const auto xv = random_values(5 * 17, 4), wv = random_values(3 * 17, 5);
    fill(x, xv);
    fill(w, wv);
    gemm(cpu, x, w, y);
    require_gemm_matches(to_host(y), xv, wv, {}, 5, 3, 17);

    Tensor<float, Extents<dyn, 3>, Cpu> wrong_rows(4);
    CHECK_THROWS_WITH(gemm(cpu, x, w, wrong_rows), "gemm: c's row count is 4 but a's row count is 5");
    Tensor<float, Extents<dyn, dyn>, Cpu> wrong_inner(5, 16);
    CHECK_THROWS_WITH(gemm(cpu, wrong_inner, w, y), "gemm: a's column count is 16 but w's column count is 17");
    Tensor<float, Extents<dyn>, Cpu> bad_bias(4);
    CHECK_THROWS_WITH(gemm(cpu, x, w, bad_bias, y), "gemm: bias length is 4 but w's row count is 3");
}

TEST_CASE("gemm and gemv refuse an output that overlaps an input", "[cpu][gemm]") {
    Cpu cpu(1);
    Tensor<float, Extents<4, 4>, Cpu> a;
    CHECK_THROWS_AS(gemm(cpu, a, a, a), ArgumentError);
    CHECK_THROWS_WITH(gemv(cpu, a, a.view().rows(0, 1).flat(), a.view().rows(1, 1).flat()),
                      "gemv: the output y overlaps the input w");
}

TEST_CASE("gemv matches the reference", "[cpu][gemv]") {
    const unsigned threads = GENERATE(1u, 2u, 3u);
    const std::size_t n = GENERATE(1u, 3u, 17u, 769u, 2304u);
    const std::size_t k = GENERATE(1u, 3u, 17u, 769u);
    const bool with_bias = GENERATE(false, true);
    Cpu cpu(threads);
    Tensor<float, Extents<dyn, dyn>, Cpu> w(n, k);
    Tensor<float, Extents<dyn>, Cpu> x(k), y(n), bias(with_bias ? n : 0);
    const auto wv = random_values(n * k, 6), xv = random_values(k, 7), bv = random_values(bias.size(), 8);
    fill(w, wv);
    fill(x, xv);
    fill(bias, bv);
    gemv(cpu, w, x, bias, y);
    INFO("threads=" << threads);
    require_gemm_matches(to_host(y), xv, wv, bv, 1, n, k);  // a gemv is a one-row gemm
    Tensor<float, Extents<dyn>, Cpu> short_x(k + 1);
    CHECK_THROWS_AS(gemv(cpu, w, short_x, y), ShapeError);
}

// Element-wise: add is exact (one rounding, same as the reference rounded to float);
// GELU within 2e-6 absolute + 2e-6 relative of the double formula (Eigen's vectorised tanh is
// accurate to a few float ulps).
TEST_CASE("add and gelu match the reference", "[cpu][elementwise]") {
    const unsigned threads = GENERATE(1u, 2u, 3u);
    const std::size_t n = GENERATE(1u, 3u, 17u, 769u, 100003u);
    Cpu cpu(threads);
    Tensor<float, Extents<dyn>, Cpu> a(n), b(n), out(n);
    const auto av = random_values(n, 9, -8.0f, 8.0f), bv = random_values(n, 10);
    fill(a, av);
    fill(b, bv);
    add(cpu, a, b, out);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(out.data()[i] == av[i] + bv[i]);

    gelu(cpu, a, out);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = test::gelu_reference(av[i]);
    CHECK(worst_error_ratio(out.data(), want, 2e-6, 2e-6) <= 1.0);

    gelu(cpu, a, a);  // in place
    for (std::size_t i = 0; i < n; ++i) REQUIRE(a.data()[i] == out.data()[i]);
}

// The greedy pick against the plain scan it replaced (the lowest index of the largest value; -1
// for a NaN or +infinity anywhere, or nothing above -infinity), at every kernel level this
// registration runs (the blocks' vector maxima, the portable loop): lengths around the vector
// width and the 1,024-value blocks, ties within and across blocks, -0 beside +0, and one NaN or
// +infinity at each place a vector's lanes or a block's tail could miss it.
TEST_CASE("argmax_rows equals the first maximum of a plain scan", "[cpu][argmax]") {
    const auto scan = [](const std::vector<float>& x) {
        std::int32_t best = -1;
        float top = -INFINITY;
        for (std::size_t i = 0; i < x.size(); ++i) {
            if (std::isnan(x[i]) || x[i] == INFINITY) return -1;
            if (x[i] > top) top = x[i], best = static_cast<std::int32_t>(i);
        }
        return best;
    };
    const auto argmax = [](const std::vector<float>& x) {
        Cpu cpu(1);
        std::int32_t id = -2;
        cpu.argmax_rows(MatrixView<const float, Cpu>(x.data(), DynExtents<2>(1, x.size())), std::span<std::int32_t>(&id, 1));
        return id;
    };
    for (const std::size_t n : {1u, 15u, 16u, 63u, 64u, 65u, 1023u, 1024u, 1025u, 3000u, 49152u}) {
        INFO("n = " << n);
        std::vector<float> x = random_values(n, static_cast<unsigned>(n));
        CHECK(argmax(x) == scan(x));
        // Small integers: many ties, the first of them wins, in whichever block it lies.
        for (std::size_t i = 0; i < n; ++i) x[i] = std::round(x[i] * 2.0f);
        CHECK(argmax(x) == scan(x));
        for (float& v : x) v = -INFINITY;
        CHECK(argmax(x) == -1);
        x[n - 1] = -0.0f;
        x[n / 2] = 0.0f;
        CHECK(argmax(x) == scan(x));
        for (const std::size_t at : {std::size_t{0}, n / 3, n - 1}) {
            INFO("fault at " << at);
            std::vector<float> y = random_values(n, 3);
            y[at] = NAN;
            CHECK(argmax(y) == -1);
            y[at] = INFINITY;
            CHECK(argmax(y) == -1);
            y[at] = -INFINITY;
            CHECK(argmax(y) == scan(y));
        }
    }
}

TEST_CASE("add rejects shapes that differ but hold as many elements", "[cpu][elementwise]") {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, dyn>, Cpu> a(2, 6), b(3, 4), out(2, 6);
    CHECK_THROWS_WITH(add(cpu, a, b, out), "add: a's shape (2, 6) differs from b's shape (3, 4)");
}

// LayerNorm tolerance per element: 1e-5·(1 + |want|) for the arithmetic, plus the error that
// storing the row mean as a float forces on every deviation, ulp(mean)/σ·|γ|. The inputs sit at
// 100 ± 1, so that term matters (~1e-5) and a variance computed as E[x²] - E[x]² (error
// ~ulp(10⁴)/σ² ≈ 3e-3) fails by two orders of magnitude.
TEST_CASE("layer_norm matches the reference", "[cpu][layer_norm]") {
    const unsigned threads = GENERATE(1u, 2u, 3u);
    const std::size_t rows = GENERATE(1u, 3u, 17u);
    const std::size_t cols = GENERATE(1u, 3u, 17u, 769u);
    Cpu cpu(threads);
    Tensor<float, Extents<dyn, dyn>, Cpu> x(rows, cols), out(rows, cols);
    Tensor<float, Extents<dyn>, Cpu> gamma(cols), beta(cols);
    const auto xv = random_values(rows * cols, 11, 99.0f, 101.0f);
    const auto gv = random_values(cols, 12, 0.5f, 1.5f), bv = random_values(cols, 13);
    fill(x, xv);
    fill(gamma, gv);
    fill(beta, bv);
    const auto want = test::layer_norm_reference(xv, gv, bv, 1e-5, rows, cols);
    const auto check = [&](const float* got) {
        for (std::size_t r = 0; r < rows; ++r) {
            double mean = 0, var = 0;
            for (std::size_t c = 0; c < cols; ++c) mean += xv[r * cols + c] / static_cast<double>(cols);
            for (std::size_t c = 0; c < cols; ++c) var += std::pow(xv[r * cols + c] - mean, 2) / static_cast<double>(cols);
            const double mean_ulp = std::ldexp(1.0, std::ilogb(mean) - 23);
            for (std::size_t c = 0; c < cols; ++c) {
                const std::size_t i = r * cols + c;
                const double tol = 1e-5 * (1 + std::fabs(want[i])) + mean_ulp / std::sqrt(var + 1e-5) * gv[c];
                INFO("rows=" << rows << " cols=" << cols << " element " << i);
                REQUIRE(std::fabs(got[i] - want[i]) <= tol);
            }
        }
    };
    layer_norm(cpu, x, gamma, beta, 1e-5f, out);
    check(out.data());
    layer_norm(cpu, x, gamma, beta, 1e-5f, x);  // in place
    check(x.data());
}

TEST_CASE("layer_norm checks its parameters", "[cpu][layer_norm]") {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, 8>, Cpu> x(2), out(2);
    Tensor<float, Extents<8>, Cpu> gamma, beta;
    Tensor<float, Extents<dyn>, Cpu> short_beta(7);
    CHECK_THROWS_WITH(layer_norm(cpu, x, gamma, beta, 0.0f, out), Catch::Contains("eps must be positive"));
    CHECK_THROWS_WITH(layer_norm(cpu, x, gamma, short_beta, 1e-5f, out),
                      "layer_norm: beta's length is 7 but x's column count is 8");
}

// Attention within 1e-5 absolute: outputs are convex combinations of values in [-1, 1]. tq: one
// query (decode), a whole prompt, and the last queries after cached keys (a prompt's later
// chunk); at 70 keys, 66 queries are two blocks of the matrix-product path, 4 keys in; at 150,
// three blocks, the last of 13 queries over 150 keys (not whole panels of 16). head_dim 64 and
// 80 (four panels and one) take the AVX-512 tiles where the CPU has them, 1 and 17 Eigen's products.
TEST_CASE("causal_attention matches the reference", "[cpu][attention]") {
    const unsigned threads = GENERATE(1u, 2u, 3u);
    const std::size_t tk = GENERATE(1u, 3u, 17u, 70u, 150u);
    const std::size_t heads = GENERATE(1u, 3u);  // one head: single-head attention
    const std::size_t dim = GENERATE(1u, 17u, 64u, 80u);
    const std::size_t tq = GENERATE_COPY(values<std::size_t>({1u, tk, tk - tk / 16}));
    Cpu cpu(threads);
    Tensor<float, Extents<dyn, dyn, dyn>, Cpu> q(tq, heads, dim), k(tk, heads, dim), v(tk, heads, dim),
        out(tq, heads, dim);
    const auto qv = random_values(q.size(), 15, -2.0f, 2.0f), kv = random_values(k.size(), 16, -2.0f, 2.0f),
               vv = random_values(v.size(), 17);
    fill(q, qv);
    fill(k, kv);
    fill(v, vv);
    causal_attention(cpu, q, k, v, out);
    const auto want = test::attention_reference(qv, kv, vv, tq, tk, heads, dim);
    INFO("tq=" << tq << " tk=" << tk << " heads=" << heads << " dim=" << dim);
    CHECK(worst_error_ratio(out.data(), want, 1e-5, 0.0) <= 1.0);
}

// Full attention over 33 queries takes the per-head matrix-product path, one query the per-query
// path: same arithmetic in another summation order, so equal within 1e-6 (outputs are O(1)).
TEST_CASE("decoding one query against cached keys equals the last row of full attention", "[cpu][attention]") {
    Cpu cpu(2);
    constexpr std::size_t t = 33, heads = 4, dim = 16;
    Tensor<float, Extents<dyn, heads, dim>, Cpu> q(t), k(t), v(t), full(t);
    fill(q, random_values(q.size(), 18));
    fill(k, random_values(k.size(), 19));
    fill(v, random_values(v.size(), 20));
    causal_attention(cpu, q, k, v, full);
    Tensor<float, Extents<1, heads, dim>, Cpu> one;
    causal_attention(cpu, q.view().rows(t - 1, 1), k, v, one);
    for (std::size_t i = 0; i < heads * dim; ++i)
        REQUIRE(std::fabs(one.data()[i] - full.data()[(t - 1) * heads * dim + i]) <= 1e-6f);
}

// On the AVX-512 tiles, every score and output is one FMA chain in key order and the softmax
// runs over rows that start at the same alignment: a query's output has the same bits whichever
// block of queries it is in (a whole prompt, or its last 40 queries as a later chunk; 150 keys:
// three blocks, and not whole panels). Where the tiles are not used, Eigen's blocking depends on
// the shapes: there the paths agree within the reference test's tolerance only.
TEST_CASE("causal_attention on the tiles: a query's output has the same bits in any block", "[cpu][attention]") {
    constexpr std::size_t t = 150, tail = 40, heads = 2, dim = 64;
    if (!cpu::attention_on_tiles(dim)) {
        test::skip("no AVX-512 here (or switched off): no tiles to check (the other test cases cover this path)");
        return;
    }
    Cpu cpu(2);
    Tensor<float, Extents<dyn, heads, dim>, Cpu> q(t), k(t), v(t), full(t), chunk(tail);
    fill(q, random_values(q.size(), 24, -2.0f, 2.0f));
    fill(k, random_values(k.size(), 25, -2.0f, 2.0f));
    fill(v, random_values(v.size(), 26));
    causal_attention(cpu, q, k, v, full);
    causal_attention(cpu, q.view().rows(t - tail, tail), k, v, chunk);
    CHECK(std::equal(chunk.data(), chunk.data() + chunk.size(), full.data() + (t - tail) * heads * dim));
}

// bf16 or Q8_0 keys and values (a KV cache of that precision) are widened to float in the
// kernel: the result is float attention over the widened values, against the float64 reference
// over the same values (within 1e-5, as above), for the per-query path (tq 1 and 3), the
// matrix-product path (tq >= 16; head_dim 32 on the AVX-512 tiles where the CPU has them), and
// several sequences in one call. Against float attention over the unrounded values it differs
// by the rounding (bf16: 2⁻⁹ relative per value; Q8_0: 1/254 of its block's largest
// magnitude): checked at least once above 1e-4 there, so that a kernel that read the floats
// instead would fail. Q8_0 holds a head in blocks of 32 values: head_dim 32 and 64.
TEMPLATE_TEST_CASE("causal_attention over bf16 or Q8_0 keys and values is float attention over their widened values",
                   "[cpu][attention]", bf16, Q8_0) {
    constexpr bool blocks = std::is_same_v<TestType, Q8_0>;
    constexpr std::size_t per = blocks ? 32 : 1;  // values per stored element
    const unsigned threads = GENERATE(1u, 2u);
    const std::size_t tk = GENERATE(3u, 40u);
    const std::size_t tq = GENERATE_COPY(values<std::size_t>({1u, 3u, tk}));
    const std::size_t dim = GENERATE_COPY(values<std::size_t>({blocks ? 32u : 17u, blocks ? 64u : 32u}));
    constexpr std::size_t heads = 3;
    Cpu cpu(threads);
    Tensor<float, Extents<dyn, heads, dyn>, Cpu> q(tq, dim), out(tq, dim), exact(tq, dim), k(tk, dim), v(tk, dim);
    Tensor<TestType, Extents<dyn, heads, dyn>, Cpu> k_stored(tk, dim / per), v_stored(tk, dim / per);
    const auto qv = random_values(q.size(), 21, -2.0f, 2.0f), kv = random_values(k.size(), 22, -2.0f, 2.0f),
               vv = random_values(v.size(), 23);
    fill(q, qv);
    fill(k, kv);
    fill(v, vv);
    std::vector<float> k_widened(kv.size()), v_widened(vv.size());
    if constexpr (blocks) {
        WeightFormat<Q8_0>::quantize(kv.data(), k_stored.data(), kv.size());
        WeightFormat<Q8_0>::quantize(vv.data(), v_stored.data(), vv.size());
        WeightFormat<Q8_0>::dequantize(k_stored.data(), k_widened.data(), kv.size());
        WeightFormat<Q8_0>::dequantize(v_stored.data(), v_widened.data(), vv.size());
    } else {
        convert(k, k_stored);
        convert(v, v_stored);
        for (std::size_t i = 0; i < kv.size(); ++i) k_widened[i] = static_cast<float>(k_stored.data()[i]);
        for (std::size_t i = 0; i < vv.size(); ++i) v_widened[i] = static_cast<float>(v_stored.data()[i]);
    }
    causal_attention(cpu, q, k_stored, v_stored, out);
    INFO("tq=" << tq << " tk=" << tk << " dim=" << dim << " threads=" << threads);
    const auto want = test::attention_reference(qv, k_widened, v_widened, tq, tk, heads, dim);
    CHECK(worst_error_ratio(out.data(), want, 1e-5, 0.0) <= 1.0);
    causal_attention(cpu, q, k, v, exact);
    double moved = 0;
    for (std::size_t i = 0; i < out.size(); ++i) moved = std::max(moved, double(std::fabs(out.data()[i] - exact.data()[i])));
    CHECK(moved > 1e-4);

    // Two sequences in one call: each gets what it gets alone.
    Tensor<float, Extents<dyn, heads, dyn>, Cpu> out2(tq, dim);
    const std::vector<AttentionOperands<Cpu, TestType>> each{
        {input_operand<3, Cpu>(q), stored_operand<3, Cpu>(k_stored), stored_operand<3, Cpu>(v_stored), output_operand<3, Cpu>(out2)},
        {input_operand<3, Cpu>(q.view().rows(tq - 1, 1)), stored_operand<3, Cpu>(k_stored.view().rows(0, tk)),
         stored_operand<3, Cpu>(v_stored.view().rows(0, tk)), output_operand<3, Cpu>(exact.view().rows(0, 1))}};
    causal_attention(cpu, std::span<const AttentionOperands<Cpu, TestType>>(each));
    CHECK(std::equal(out.data(), out.data() + out.size(), out2.data()));
    if (tq < cpu::attention_block_queries) {  // the same per-query path alone and together
        CHECK(std::equal(exact.data(), exact.data() + heads * dim, out.data() + (tq - 1) * heads * dim));
    }
}

// A Q8_0 key tensor's last extent counts blocks: one whose blocks do not make q's head_dim is
// refused naming both.
TEST_CASE("causal_attention refuses Q8_0 keys whose blocks do not make q's head_dim", "[cpu][attention][errors]") {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, 2, dyn>, Cpu> q(4, 64), out(4, 64);
    Tensor<Q8_0, Extents<dyn, 2, dyn>, Cpu> k(4, 1), v(4, 1);  // 32 values per head, not 64
    CHECK_THROWS_WITH(causal_attention(cpu, q, k, v, out), Catch::Contains("head_dim"));
}

// Grouped-query attention (H query heads over Hkv key/value heads) is multi-head attention with
// each key/value head repeated for its H / Hkv query heads: the same arithmetic per head, so the
// same bits, on every path (one query, the heads of a group in one task or split across tasks; a
// prompt on Eigen's products or the AVX-512 tiles, head_dim 17 and 64; bf16 keys and values;
// several sequences in one call).
TEST_CASE("grouped-query attention equals multi-head attention over repeated key/value heads", "[cpu][attention]") {
    const std::size_t tk = GENERATE(5u, 70u);
    const std::size_t tq = GENERATE_COPY(values<std::size_t>({1u, tk}));
    const std::size_t dim = GENERATE(17u, 64u);
    const std::size_t kv_heads = GENERATE(1u, 2u);
    constexpr std::size_t heads = 6;
    const std::size_t group = heads / kv_heads;
    // 5 threads for a query's 2 key/value heads: a group's heads split across tasks, unevenly
    const unsigned threads = GENERATE(2u, 5u);
    Cpu cpu(threads);
    Tensor<float, Extents<dyn, dyn, dyn>, Cpu> q(tq, heads, dim), k(tk, kv_heads, dim), v(tk, kv_heads, dim), k_all(tk, heads, dim),
        v_all(tk, heads, dim), grouped(tq, heads, dim), full(tq, heads, dim);
    fill(q, random_values(q.size(), 40, -2.0f, 2.0f));
    fill(k, random_values(k.size(), 41, -2.0f, 2.0f));
    fill(v, random_values(v.size(), 42));
    for (std::size_t p = 0; p < tk; ++p)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t e = 0; e < dim; ++e) {
                k_all.data()[(p * heads + h) * dim + e] = k.data()[(p * kv_heads + h / group) * dim + e];
                v_all.data()[(p * heads + h) * dim + e] = v.data()[(p * kv_heads + h / group) * dim + e];
            }
    INFO("tq=" << tq << " tk=" << tk << " dim=" << dim << " kv_heads=" << kv_heads << " threads=" << threads);
    causal_attention(cpu, q, k, v, grouped);
    causal_attention(cpu, q, k_all, v_all, full);
    CHECK(std::equal(grouped.data(), grouped.data() + grouped.size(), full.data()));
    Tensor<bf16, Extents<dyn, dyn, dyn>, Cpu> k16(tk, kv_heads, dim), v16(tk, kv_heads, dim), k16_all(tk, heads, dim),
        v16_all(tk, heads, dim);
    convert(k, k16);
    convert(v, v16);
    convert(k_all, k16_all);
    convert(v_all, v16_all);
    causal_attention(cpu, q, k16, v16, grouped);
    causal_attention(cpu, q, k16_all, v16_all, full);
    CHECK(std::equal(grouped.data(), grouped.data() + grouped.size(), full.data()));
    const std::vector<AttentionOperands<Cpu, float>> each{
        {input_operand<3, Cpu>(q), stored_operand<3, Cpu>(k), stored_operand<3, Cpu>(v), output_operand<3, Cpu>(grouped)},
        {input_operand<3, Cpu>(q.view().rows(tq - 1, 1)), stored_operand<3, Cpu>(k), stored_operand<3, Cpu>(v),
         output_operand<3, Cpu>(full.view().rows(0, 1))}};
    causal_attention(cpu, std::span<const AttentionOperands<Cpu, float>>(each));
    Tensor<float, Extents<dyn, dyn, dyn>, Cpu> alone(tq, heads, dim);
    causal_attention(cpu, q, k_all, v_all, alone);
    CHECK(std::equal(grouped.data(), grouped.data() + grouped.size(), alone.data()));
    Tensor<float, Extents<dyn, dyn, dyn>, Cpu> odd(tk, 4, dim);
    CHECK_THROWS_WITH(causal_attention(cpu, q, odd, odd, grouped), Catch::Contains("6 heads are not a whole number of groups over k's 4"));
}

TEST_CASE("causal_attention rejects more queries than keys and aliased k/v", "[cpu][attention]") {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, 2, 4>, Cpu> q(5), k(4), v(4), out(5);
    CHECK_THROWS_WITH(causal_attention(cpu, q, k, v, out), Catch::Contains("5 queries but only 4 keys"));
    CHECK_THROWS_AS(causal_attention(cpu, k, k, v, k), ArgumentError);
}
