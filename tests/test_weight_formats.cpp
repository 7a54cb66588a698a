// Weight formats: quantization bit for bit against GGML's reference algorithm as written in
// numpy (tools/quantize_reference.py, vectors in tests/data/quantization), dequantization
// against the same, and the products with stored weights against double-precision references,
// on every kernel level (test_cpu_kernels_avx2 and _portable run them on the narrower ones).
#include <catch2/catch.hpp>

#include <stdlib.h>  // ::setenv, ::unsetenv (POSIX)

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/tessera.hpp>

#include "skip.hpp"

using namespace tessera;

namespace {

std::string read_bytes(const std::string& name) {
    std::ifstream in(std::string(TESSERA_TEST_DATA_DIR) + "/quantization/" + name, std::ios::binary);
    REQUIRE(in);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<float> read_floats(const std::string& name) {
    const std::string bytes = read_bytes(name);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

template <class W>
std::string stored_bytes(const std::vector<float>& x) {
    std::vector<W> stored(x.size() / WeightFormat<W>::block);
    WeightFormat<W>::quantize(x.data(), stored.data(), x.size());
    return {reinterpret_cast<const char*>(stored.data()), stored.size() * sizeof(W)};
}

// Double-precision reference of c = a · wᵀ where w holds the dequantized weights. a's rows are
// first rounded as the kernel does (cpu::activation_precision): to bf16, or quantized to 8 bits
// (per 32: scale max|x| / 127, round to nearest, ties to even), so the kernel and the reference
// compute the same sum and only the order of float additions differs.
std::vector<double> reference(const std::vector<float>& a, const std::vector<float>& w, std::size_t m, std::size_t n,
                              std::size_t k, cpu::ActivationPrecision precision) {
    std::vector<double> x(a.begin(), a.end());
    if (precision == cpu::ActivationPrecision::bf16) {
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(bf16(a[i]));
    }
    if (precision == cpu::ActivationPrecision::int8) {
        for (std::size_t b = 0; b < m * k / 32; ++b) {
            float amax = 0.0f;
            for (std::size_t j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(a[b * 32 + j]));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            for (std::size_t j = 0; j < 32; ++j) x[b * 32 + j] = std::nearbyint(a[b * 32 + j] * id) * (amax / 127.0f);
        }
    }
    std::vector<double> c(m * n, 0.0);
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t j = 0; j < k; ++j) c[i * n + r] += x[i * k + j] * w[r * k + j];
    return c;
}

template <class W>
void check_products(std::size_t m, std::size_t n, std::size_t k) {
    Cpu cpu(2);
    std::mt19937 rng(static_cast<unsigned>(m * 1000 + n + k));
    std::normal_distribution<float> normal;
    std::vector<float> w(n * k), a(m * k), bias(n);
    for (float& v : w) v = 0.02f * normal(rng);
    for (float& v : a) v = normal(rng);
    for (float& v : bias) v = normal(rng);
    Tensor<W, Extents<dyn, dyn>, Cpu> stored(n, k / WeightFormat<W>::block);
    WeightFormat<W>::quantize(w.data(), stored.data(), n * k);
    std::vector<float> dequantized(n * k);
    WeightFormat<W>::dequantize(stored.data(), dequantized.data(), n * k);
    Tensor<float, Extents<dyn, dyn>, Cpu> at(m, k), c(m, n);
    Tensor<float, Extents<dyn>, Cpu> bt(n);
    std::copy(a.begin(), a.end(), at.data());
    std::copy(bias.begin(), bias.end(), bt.data());
    gemm(cpu, at, stored, bt, c);
    const std::vector<double> ref = reference(a, dequantized, m, n, k, cpu::activation_precision<W>(m));
    double worst = 0.0;
    for (std::size_t i = 0; i < m * n; ++i) worst = std::max(worst, std::abs(c.data()[i] - (ref[i] + bias[i % n])));
    INFO(WeightFormat<W>::name << " m=" << m << " n=" << n << " k=" << k << " worst error " << worst);
    // Sums of k products of magnitude ~0.02 in float: a few float ulps of the partial sums.
    CHECK(worst < 2e-5);
}

}  // namespace

TEST_CASE("Quantization is GGML's reference algorithm, bit for bit", "[formats]") {
    const std::vector<float> x = read_floats("inputs.f32");
    REQUIRE(x.size() == 12 * 256);
    CHECK(stored_bytes<Q8_0>(x) == read_bytes("q8_0.bin"));
    CHECK(stored_bytes<Q4_0>(x) == read_bytes("q4_0.bin"));
    CHECK(stored_bytes<Q5_0>(x) == read_bytes("q5_0.bin"));
    CHECK(stored_bytes<Q5_1>(x) == read_bytes("q5_1.bin"));
    CHECK(stored_bytes<Q6_K>(x) == read_bytes("q6_k.bin"));
    CHECK(stored_bytes<Q4_K>(x) == read_bytes("q4_k.bin"));
    CHECK(stored_bytes<Q5_K>(x) == read_bytes("q5_k.bin"));
    CHECK(stored_bytes<bf16>(x) == read_bytes("bf16.bin"));
}

TEST_CASE("Dequantization gives the weights the blocks hold", "[formats]") {
    const auto check = [](const std::string& kind, auto block) {
        using W = decltype(block);
        const std::string bytes = read_bytes(kind + ".bin");
        std::vector<W> stored(bytes.size() / sizeof(W));
        std::memcpy(stored.data(), bytes.data(), bytes.size());
        std::vector<float> values(stored.size() * WeightFormat<W>::block);
        WeightFormat<W>::dequantize(stored.data(), values.data(), values.size());
        CHECK(values == read_floats(kind + ".dequant.f32"));
    };
    check("q8_0", Q8_0{});
    check("q4_0", Q4_0{});
    check("q5_0", Q5_0{});
    check("q5_1", Q5_1{});
    check("q6_k", Q6_K{});
    check("q4_k", Q4_K{});
    check("q5_k", Q5_K{});
}

TEST_CASE("Quantization error stays within half a step (Q8_0) or a step (Q4_0) of each block", "[formats]") {
    const std::vector<float> x = read_floats("inputs.f32");
    const auto worst_in_steps = [&](auto block) {
        using W = decltype(block);
        std::vector<W> stored(x.size() / 32);
        WeightFormat<W>::quantize(x.data(), stored.data(), x.size());
        std::vector<float> y(x.size());
        WeightFormat<W>::dequantize(stored.data(), y.data(), y.size());
        double worst = 0.0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double step = std::abs(static_cast<float>(stored[i / 32].d));
            if (step > 1e-4) worst = std::max(worst, std::abs(x[i] - y[i]) / step);  // (f16 subnormal scales: coarse)
        }
        return worst;
    };
    // Half a step of rounding, plus the scale rounded to f16 (relative error 2^-11, times up to
    // 127 steps: 0.062 of a step).
    CHECK(worst_in_steps(Q8_0{}) <= 0.563);
    CHECK(worst_in_steps(Q4_0{}) <= 1.01);  // the largest magnitude maps to -8; the other side clamps at 7
}

TEST_CASE("Products with bf16, Q8_0 and Q4_0 weights match double-precision references", "[formats][gemm]") {
    for (std::size_t m : {1, 2, 7, 8, 9, 130}) {
        check_products<bf16>(m, 70, 96);
        check_products<Q8_0>(m, 70, 96);
        check_products<Q4_0>(m, 70, 96);
    }
    check_products<bf16>(1, 33, 17);     // bf16 has no blocks: a masked tail
    check_products<bf16>(5, 33, 17);     // in the few-row tiles
    check_products<bf16>(70, 33, 17);    // and an odd depth in the packed GEMM's pairs
    // One row: the vector kernel takes eight blocks per step, then the rest one by one.
    for (std::size_t k : {256, 576, 768, 800, 3072}) {
        check_products<Q8_0>(1, 130, k);
        check_products<Q4_0>(1, 130, k);
        check_products<bf16>(1, 130, k);
    }
    check_products<bf16>(1, 130, 808);  // the one-row bf16 dot's masked tail
    check_products<Q8_0>(40, 130, 800);  // several panels
    // A few rows (the tiles: 4 activation rows at a time, then 3, 2, 1; eight blocks per step,
    // then the rest one by one), and the sizes where each path hands over to the next.
    for (std::size_t m : {3, 4, 5, 6, 7, 10, 11, 12, 13, 16, 17, 31, 32, 33, 47, 48, 64, 65, 96, 97, 192, 193}) {
        check_products<bf16>(m, 37, 800);
        check_products<Q8_0>(m, 37, 800);
        check_products<Q4_0>(m, 37, 800);
    }
    // A depth that is not a multiple of 32 (the AMX tiles' step: those blocks go through a padded copy).
    for (std::size_t m : {cpu::amx_rows_min, cpu::amx_rows_min + 17}) check_products<bf16>(m, 37, 808);
}

TEST_CASE("Products with Q6_K weights (a Q4_0 model's head) match double-precision references", "[formats][gemm]") {
    for (std::size_t k : {256, 768, 3072}) check_products<Q6_K>(1, 130, k);
    // 2 or more rows: the tiles of 4, 3, 2 and 1 activation rows (with VNNI; with AVX2 up to
    // avx2_dot_rows_max rows, then the panels), else W widened to float.
    for (std::size_t m : {std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{5}, std::size_t{6}, std::size_t{7},
                          std::size_t{9}, std::size_t{16}, std::size_t{17}, std::size_t{33}, std::size_t{70}})
        check_products<Q6_K>(m, 37, 768);
}

// The types of llama-quantize's K-quant files besides Q6_K and Q8_0 (a KQuantMix model's
// matrices): up to cpu::rows_by_dots_max<W>() rows the dots per pair of rows, more rows the
// packed integer GEMM and its mins (8-bit activations; with AVX2 the panels packed per call;
// portable, W widened to float). 37 weight rows: the last panel of 8 is partial.
TEST_CASE("Products with Q4_K, Q5_K, Q5_0 and Q5_1 weights match double-precision references", "[formats][gemm]") {
    for (std::size_t m : {std::size_t{1}, std::size_t{2}, cpu::dot_rows_max, cpu::dot_rows_max + 1, std::size_t{7},
                          cpu::dot_rows_max_without_vnni, cpu::dot_rows_max_without_vnni + 1, std::size_t{40},
                          cpu::avx2_dot_rows_max, cpu::avx2_dot_rows_max + 1, std::size_t{130}}) {
        check_products<Q4_K>(m, 37, 768);
        check_products<Q5_K>(m, 37, 768);
        check_products<Q5_0>(m, 37, 800);  // an odd number of blocks (the two-block steps' tail)
        check_products<Q5_1>(m, 37, 800);
    }
    for (std::size_t k : {256, 3072}) {
        check_products<Q4_K>(1, 130, k);
        check_products<Q5_K>(1, 130, k);
    }
    for (std::size_t k : {32, 64, 576, 896}) {
        check_products<Q5_0>(1, 130, k);
        check_products<Q5_1>(1, 130, k);
    }
}

namespace {

// A random bias(n) and activations(most, k) for the products over weights packed or arranged
// in advance, whose row counts m = 1..most take a's last m rows (the last one always the same).
struct Operands {
    Tensor<float, Extents<dyn>, Cpu> bias;
    Tensor<float, Extents<dyn, dyn>, Cpu> a;
    Tensor<float, Extents<dyn, dyn>, Cpu> last_rows(std::size_t m) const {
        Tensor<float, Extents<dyn, dyn>, Cpu> rows(m, a.extent(1));
        std::copy(a.data() + (a.extent(0) - m) * a.extent(1), a.data() + a.size(), rows.data());
        return rows;
    }
};
Operands random_operands(std::mt19937& rng, std::size_t n, std::size_t most, std::size_t k) {
    std::normal_distribution<float> normal;
    Operands o{Tensor<float, Extents<dyn>, Cpu>(n), Tensor<float, Extents<dyn, dyn>, Cpu>(most, k)};
    for (std::size_t i = 0; i < n; ++i) o.bias.data()[i] = normal(rng);
    for (std::size_t i = 0; i < most * k; ++i) o.a.data()[i] = normal(rng);
    return o;
}

#if TESSERA_HAS_AVX512_KERNELS
// Whether a Linear's (or a tied table's) W is arranged on this CPU, shapes aside, and whether
// for the AVX2 kernels (cpu/arranged_weights.hpp).
template <class W>
bool arranged_for_avx2() {
    return cpu::has_avx2() && !(std::is_same_v<W, float> || std::is_same_v<W, bf16> ? cpu::has_avx512() : cpu::has_avx512_vnni());
}
template <class W>
bool arranges_here() {
    return std::is_same_v<W, bf16> ? cpu::arranges_bf16() || arranged_for_avx2<W>() : cpu::has_avx2();
}

// C(m, n) with each output one fused multiply-add chain over k in order from 0, then the bias
// (null: none): what float weights arranged in place give, and bf16 ones arranged for AVX2
// (w: the weights widened).
std::vector<float> fma_chains(const float* a, const std::vector<float>& w, const float* bias, std::size_t m, std::size_t n, std::size_t k) {
    std::vector<float> c(m * n);
    for (std::size_t t = 0; t < m; ++t)
        for (std::size_t j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (std::size_t i = 0; i < k; ++i) sum = std::fma(a[t * k + i], w[j * k + i], sum);
            c[t * n + j] = bias != nullptr ? sum + bias[j] : sum;
        }
    return c;
}

// What products over Q8_0 / Q4_0 arranged in AVX2's panels of 8 rows must give, bit for bit:
// for a row in a whole group of 32, avx2::panel_tile's arithmetic per lane in scalar code of
// the same order (per block the exact integer sum of the unsigned nibbles or the signed bytes,
// then acc = fma(sum, dw · dx, acc), and for Q4_0 acc = fma(dw, -8 · Σq · dx, acc)); for the
// rows after the groups, the tiles over W as stored; then the bias.
template <class W>
std::vector<float> avx2_panels_expected(const float* a, const W* w, const float* bias, std::size_t m, std::size_t n, std::size_t k) {
    std::vector<cpu::QuantizedRow> x(m);
    for (std::size_t t = 0; t < m; ++t) {
        x[t].assign(a + t * k, k);
        x[t].template prepare_for_avx2<W>(k);
    }
    const std::size_t blocks = k / 32, whole = n / 32 * 32;
    std::vector<float> c(m * n);
    for (std::size_t t = 0; t < m; ++t) {
        for (std::size_t j = 0; j < whole; ++j) {
            float acc = 0.0f;
            for (std::size_t b = 0; b < blocks; ++b) {
                const W& block = w[j * blocks + b];
                const std::int8_t* q = x[t].q.data() + 32 * b;
                int sum = 0;
                if constexpr (std::is_same_v<W, Q4_0>) {
                    for (std::size_t e = 0; e < 16; ++e) sum += (block.qs[e] & 15) * q[e] + (block.qs[e] >> 4) * q[e + 16];
                } else {
                    for (std::size_t e = 0; e < 32; ++e) sum += block.qs[e] * q[e];
                }
                const float dw = static_cast<float>(block.d), scale = dw * x[t].d[b];
                acc = std::fma(static_cast<float>(sum), scale, acc);
                if constexpr (std::is_same_v<W, Q4_0>) acc = std::fma(dw, x[t].minus_8_sum[b], acc);
            }
            c[t * n + j] = acc;
        }
    }
    if (whole < n) cpu::avx2::integer_columns(x.data(), w, c.data(), m, k, n, whole, n);
    if (bias != nullptr)
        for (std::size_t i = 0; i < m * n; ++i) c[i] += bias[i % n];
    return c;
}

// The bits a product over W(n, k) arranged in place on this CPU must have (a: m rows; widened:
// W's values as float; bias null: none): float, and bf16 arranged for AVX2, one fma chain per
// output; bf16 for vdpbf16ps, the packed GEMM over W as stored; Q8_0 / Q4_0 with AVX-512 VNNI,
// the packed integer GEMM over W as stored, else avx2_panels_expected.
template <class W>
std::vector<float> arranged_expected(Cpu& cpu, const float* a, const W* stored, const std::vector<float>& widened, const float* bias,
                                     std::size_t m, std::size_t n, std::size_t k) {
    if (std::is_same_v<W, float> || (std::is_same_v<W, bf16> && arranged_for_avx2<W>())) return fma_chains(a, widened, bias, m, n, k);
    std::vector<float> c(m * n);
    if constexpr (std::is_same_v<W, bf16>) {
        cpu::packed_bf16_gemm(cpu.pool(), a, stored, bias, c.data(), m, n, k);
    } else if constexpr (std::is_same_v<W, Q8_0> || std::is_same_v<W, Q4_0>) {
        if (!cpu::has_avx512_vnni()) return avx2_panels_expected(a, stored, bias, m, n, k);
        cpu::packed_integer_gemm(cpu.pool(), a, stored, bias, c.data(), m, n, k);
    }
    return c;
}
#endif

// Row `row` of an m-row product, for m = 1..max: every result must have the same bits.
template <class W>
void check_batch_independence(std::size_t max, std::size_t first_m) {
    Cpu cpu(2);
    const std::size_t n = 45, k = WeightFormat<W>::block == 256 ? 768 : 800;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    std::vector<float> w(n * k);
    for (float& v : w) v = 0.02f * normal(rng);
    Tensor<float, Extents<dyn, dyn>, Cpu> a(max, k);
    for (std::size_t i = 0; i < max * k; ++i) a.data()[i] = normal(rng);
    Tensor<float, Extents<dyn>, Cpu> bias(n);
    for (std::size_t i = 0; i < n; ++i) bias.data()[i] = normal(rng);
    std::vector<float> alone;
    for (std::size_t m = first_m; m <= max; ++m) {
        Tensor<float, Extents<dyn, dyn>, Cpu> c(m, n);
        Tensor<float, Extents<dyn, dyn>, Cpu> rows(m, k);  // a's last m rows: the last one is always the same
        std::copy(a.data() + (max - m) * k, a.data() + max * k, rows.data());
        if constexpr (std::is_same_v<W, float>) {
            Tensor<float, Extents<dyn, dyn>, Cpu> stored(n, k);
            std::copy(w.begin(), w.end(), stored.data());
            gemm(cpu, rows, stored, bias, c);
        } else {
            Tensor<W, Extents<dyn, dyn>, Cpu> stored(n, k / WeightFormat<W>::block);
            WeightFormat<W>::quantize(w.data(), stored.data(), n * k);
            gemm(cpu, rows, stored, bias, c);
        }
        const std::vector<float> last(c.data() + (m - 1) * n, c.data() + m * n);
        if (alone.empty()) alone = last;
        INFO(WeightFormat<W>::name << ": the same row in a product of " << m << " rows");
        CHECK(last == alone);
    }
}

}  // namespace

#if TESSERA_HAS_AVX512_KERNELS
namespace {
// What a product over Q4_K / Q5_K / Q5_0 / Q5_1 / Q6_K weights on AVX2's panels (more than
// avx2_dot_rows_max rows, without VNNI) must give, bit for bit: avx2::offset_panel_tile's
// arithmetic per lane in scalar code of the same order (per block of 32 the exact integer sum
// of the unsigned quants times x, then acc = fma(sum, scale · xd, acc) and
// acc = fma(min, xd · Σ x, acc); Q6_K per group of 16, its -32 in the integer sum), then the bias.
template <class W>
std::vector<float> offset_panels_expected(const float* a, const W* w, const float* bias, std::size_t m, std::size_t n, std::size_t k) {
    std::vector<cpu::QuantizedRow> x(m);
    for (std::size_t t = 0; t < m; ++t) {
        x[t].assign(a + t * k, k);
        x[t].template prepare_for_avx2<W>(k);
    }
    constexpr std::size_t per = WeightFormat<W>::block / 32;
    const std::size_t stored = k / WeightFormat<W>::block;
    std::vector<float> c(m * n);
    for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t t = 0; t < m; ++t) {
            float acc = 0.0f;
            for (std::size_t sb = 0; sb < stored; ++sb) {
                const W& block = w[j * stored + sb];
                const float d = static_cast<float>(block.d);
                int u[256];
                float scales[per] = {}, mins[per] = {};
                if constexpr (std::is_same_v<W, Q6_K>) {  // per group of 16: S - 32 Σ x, scaled by d · scale · xd
                    std::uint8_t q[256];
                    WeightFormat<W>::quants(block, q);
                    for (std::size_t i = 0; i < 8; ++i) {
                        const std::size_t b = sb * 8 + i;
                        for (std::size_t g = 0; g < 2; ++g) {
                            int sum = 0;
                            for (std::size_t e = 16 * g; e < 16 * g + 16; ++e) sum += (q[32 * i + e] - 32) * x[t].q[32 * b + e];
                            acc = std::fma(static_cast<float>(sum), d * static_cast<float>(block.scales[2 * i + g]) * x[t].d[b], acc);
                        }
                    }
                    continue;
                } else if constexpr (per == 8) {
                    std::uint8_t q[256];
                    WeightFormat<W>::quants(block, q);
                    std::copy(q, q + 256, u);
                    const auto packed = cpu::detail::scales_and_mins(block.scales);
                    for (std::size_t g = 0; g < 8; ++g) {
                        scales[g] = d * static_cast<float>((packed.scales >> (8 * g)) & 255);
                        mins[g] = -static_cast<float>(block.dmin) * static_cast<float>((packed.mins >> (8 * g)) & 255);
                    }
                } else {
                    tessera::detail::unpack_five_bits(block.qs, block.qh, u);
                    scales[0] = d;
                    if constexpr (std::is_same_v<W, Q5_1>) mins[0] = static_cast<float>(block.m);
                    else mins[0] = -16.0f * d;
                }
                for (std::size_t i = 0; i < per; ++i) {
                    const std::size_t b = sb * per + i;
                    int sum = 0;
                    for (std::size_t e = 0; e < 32; ++e) sum += u[32 * i + e] * x[t].q[32 * b + e];
                    acc = std::fma(static_cast<float>(sum), scales[i] * x[t].d[b], acc);
                    acc = std::fma(mins[i], x[t].scaled_sums[b], acc);
                }
            }
            c[t * n + j] = acc + bias[j];
        }
    }
    return c;
}

template <class W>
void check_offset_panels(std::size_t m, std::size_t n, std::size_t k) {
    Cpu cpu(2);
    std::mt19937 rng(static_cast<unsigned>(7 * m + n + k));
    const Operands o = random_operands(rng, n, m, k);
    std::vector<float> w(n * k);
    std::normal_distribution<float> normal;
    for (float& v : w) v = 0.02f * normal(rng);
    Tensor<W, Extents<dyn, dyn>, Cpu> stored(n, k / WeightFormat<W>::block);
    WeightFormat<W>::quantize(w.data(), stored.data(), n * k);
    Tensor<float, Extents<dyn, dyn>, Cpu> c(m, n);
    gemm(cpu, o.a, stored, o.bias, c);
    const std::vector<float> expected = offset_panels_expected(o.a.data(), stored.data(), o.bias.data(), m, n, k);
    INFO(WeightFormat<W>::name << " m=" << m << " n=" << n << " k=" << k);
    CHECK(std::equal(expected.begin(), expected.end(), c.data()));
}
}  // namespace
#endif

TEST_CASE("Products with K-quant, Q5_0 and Q5_1 weights on AVX2's panels have the bits of their arithmetic", "[formats][gemm]") {
#if TESSERA_HAS_AVX512_KERNELS
    if (!cpu::has_avx2() || cpu::has_avx512_vnni()) {
        test::skip("the panels run with AVX2 and without AVX-512 VNNI");
        return;
    }
    // Tiles of 4 activation rows and the rest; 8-row panels, a last partial one, and the
    // threads' ranges (multiples of 8 rows).
    for (std::size_t m : {cpu::avx2_dot_rows_max + 1, std::size_t{5}, std::size_t{7}, std::size_t{16}, std::size_t{19}}) {
        for (std::size_t n : {8, 37, 64}) {
            check_offset_panels<Q4_K>(m, n, 512);
            check_offset_panels<Q5_K>(m, n, 768);
            check_offset_panels<Q5_0>(m, n, 800);
            check_offset_panels<Q5_1>(m, n, 576);
            check_offset_panels<Q6_K>(m, n, 512);
        }
    }
#else
    test::skip("no AVX2 kernels in this build");
#endif
}

// What batched decoding needs: a sequence's logits must not depend on which other sequences
// share its decode step (float sums in a fixed order per row, whatever the tile).
TEST_CASE("A row's product has the same bits whatever other rows share the product", "[formats][gemm]") {
#if TESSERA_HAS_AVX512_KERNELS
    if (!cpu::has_avx512()) {
        if (!cpu::has_avx2()) {  // (or switched off): every product of several rows is Eigen's
            test::skip("without AVX2 or AVX-512 no tile of ours multiplies several rows: nothing to check");
            return;
        }
        // The AVX2 tiles sum each row as the one-row kernel does: the same bits from one row on.
        {
            check_batch_independence<Q8_0>(cpu::avx2_integer_rows_max<Q8_0>, 1);
            check_batch_independence<Q4_0>(cpu::avx2_integer_rows_max<Q4_0>, 1);
            // The float tiles from two rows on (one row is gemv: Eigen, or the bf16 dot).
            check_batch_independence<float>(cpu::avx2::few_rows_max<float>, 2);
            check_batch_independence<bf16>(cpu::avx2::few_rows_max<bf16>, 2);
            // The K-quants and Q5_0 / Q5_1: the dots up to avx2_dot_rows_max rows, more the panels
            // packed per call (within each the same bits).
            check_batch_independence<Q4_K>(cpu::avx2_dot_rows_max, 1);
            check_batch_independence<Q5_K>(cpu::avx2_dot_rows_max, 1);
            check_batch_independence<Q5_0>(cpu::avx2_dot_rows_max, 1);
            check_batch_independence<Q5_1>(cpu::avx2_dot_rows_max, 1);
            check_batch_independence<Q4_K>(40, cpu::avx2_dot_rows_max + 1);
            check_batch_independence<Q5_K>(40, cpu::avx2_dot_rows_max + 1);
            check_batch_independence<Q5_0>(40, cpu::avx2_dot_rows_max + 1);
            check_batch_independence<Q5_1>(40, cpu::avx2_dot_rows_max + 1);
            check_batch_independence<Q6_K>(cpu::avx2_dot_rows_max, 1);
            check_batch_independence<Q6_K>(40, cpu::avx2_dot_rows_max + 1);
        }
        WARN("without AVX-512 the other products of several rows are Eigen's: not checked");
        return;
    }
    check_batch_independence<float>(cpu::avx512::few_rows_max<float>, 1);
    // bf16's one-row kernel sums in two accumulators (decoding reads faster one row at a time).
    if (cpu::has_amx()) {  // the float tiles below amx_rows_min rows, AMX tiles from there on
        check_batch_independence<bf16>(cpu::amx_rows_min - 1, 2);
        check_batch_independence<bf16>(100, cpu::amx_rows_min);
    } else {
        check_batch_independence<bf16>(cpu::has_avx512_bf16() ? cpu::bf16_few_rows_max : cpu::avx512::few_rows_max<bf16>, 2);
        if (cpu::has_avx512_bf16()) check_batch_independence<bf16>(100, cpu::bf16_few_rows_max + 1);
    }
    if (cpu::has_avx512_vnni()) {
        // One row runs gemv's two-accumulator kernel, 2 to integer_rows_max the few-row tiles,
        // more the packed GEMM: within each the same bits, between them the last float bits differ.
        check_batch_independence<Q8_0>(cpu::integer_rows_max, 2);
        check_batch_independence<Q4_0>(cpu::integer_rows_max, 2);
        check_batch_independence<Q8_0>(40, cpu::integer_rows_max + 1);
        check_batch_independence<Q4_0>(40, cpu::integer_rows_max + 1);
        // Q6_K: one kernel for any number of rows, decoding's one included.
        check_batch_independence<Q6_K>(40, 1);
        // The one-row dot for every row up to dot_rows_max rows, the packed GEMM beyond.
        check_batch_independence<Q4_K>(cpu::dot_rows_max, 1);
        check_batch_independence<Q5_K>(cpu::dot_rows_max, 1);
        check_batch_independence<Q5_0>(cpu::dot_rows_max, 1);
        check_batch_independence<Q5_1>(cpu::dot_rows_max, 1);
        check_batch_independence<Q4_K>(40, cpu::dot_rows_max + 1);
        check_batch_independence<Q5_K>(40, cpu::dot_rows_max + 1);
        check_batch_independence<Q5_0>(40, cpu::dot_rows_max + 1);
        check_batch_independence<Q5_1>(40, cpu::dot_rows_max + 1);
    }
#else
    test::skip("no AVX-512 kernels in this build");
#endif
}

// A Q4_0 model's Q6_K head in batched steps (Embedding::prepare_batches): packed once as the
// Q8_0 head is, two scales per block of 32. One row stays on gemv over the stored blocks; from
// two rows on every product is within a few float ulps of the double-precision one (8-bit
// activations, as the kernel's), and a row has the same bits whatever shares the product.
TEST_CASE("Q6_K products over the head's packed copy match the reference, a row alike in any batch", "[formats][gemm]") {
    STATIC_REQUIRE(HasPackedWeights<Cpu, Q6_K>);
#if TESSERA_HAS_AVX512_KERNELS
    if (!cpu::has_avx512_vnni()) {
        test::skip("without AVX-512 VNNI there is no packed layout");
        return;
    }
    Cpu cpu(2);
    std::mt19937 rng(6);
    std::normal_distribution<float> normal;
    for (const std::size_t n : {45, 64, 70}) {  // a partial last panel of 32 rows, and none
        const std::size_t k = 768;
        std::vector<float> w(n * k), widened(n * k);
        for (float& v : w) v = 0.02f * normal(rng);
        Embedding<dyn, dyn, Cpu, Q6_K> head(n, k);
        WeightFormat<Q6_K>::quantize(w.data(), head.table.data(), n * k);
        WeightFormat<Q6_K>::dequantize(head.table.data(), widened.data(), n * k);
        head.prepare_batches(cpu);
        REQUIRE(!head.packed.empty());
        const std::size_t most = 40;
        const Operands operands = random_operands(rng, n, most, k);
        std::vector<float> last_alone;
        for (std::size_t m = 1; m <= most; ++m) {
            const auto rows = operands.last_rows(m);
            Tensor<float, Extents<dyn, dyn>, Cpu> c(m, n), stored(m, n);
            head.project(cpu, rows, c);
            INFO("n " << n << ", " << m << " rows");
            if (m == 1) {
                gemm(cpu, rows, head.table, stored);
                REQUIRE(std::memcmp(c.data(), stored.data(), n * sizeof(float)) == 0);
            }
            const std::vector<float> a(rows.data(), rows.data() + m * k);
            const std::vector<double> ref = reference(a, widened, m, n, k, cpu::ActivationPrecision::int8);
            double worst = 0.0;
            for (std::size_t i = 0; i < m * n; ++i) worst = std::max(worst, std::abs(c.data()[i] - ref[i]));
            CHECK(worst < 2e-5);
            const std::vector<float> last(c.data() + (m - 1) * n, c.data() + m * n);
            if (m == 2) last_alone = last;
            if (m > 2) CHECK(last == last_alone);
        }
    }
#else
    test::skip("no AVX-512 kernels in this build");
#endif
}

// The tied head's float, bf16, Q8_0 and Q4_0 tables arranged in place once loaded (ArrangesTables,
// Embedding::load): a Linear's arrangement over the whole groups of 32 rows, the last V % 32
// rows as stored. Every product (one row included) must have the bits of the packed GEMM over
// the table as stored (float: one fused multiply-add chain per output in the order of k; bf16
// where arranges_bf16(): the packed vdpbf16ps GEMM; Q8_0 / Q4_0 without AVX-512 VNNI:
// avx2_panels_expected), a
// row the same bits in any batch; gathered rows must be the stored table's rows widened, the
// last rows' included; and an out-of-range id is still refused.
namespace {
// A checkpoint holding one table's blocks as stored (as a GGUF file of that format does).
template <class W>
class StoredTable final : public Checkpoint {
public:
    explicit StoredTable(const Tensor<W, Extents<dyn, dyn>, Cpu>& table) : table_(table) {}
    const std::string& path() const override { return path_; }
    void read_rows(const TensorRequest& request, std::size_t first, std::span<float> dst) const override {
        if constexpr (!std::is_same_v<W, float>) throw FormatError(path_ + ": " + request.name + " is not float");
        else std::memcpy(dst.data(), table_.data() + first * table_.extent(1), dst.size_bytes());
    }
    bool stores_as(const TensorRequest&, WeightFormatId id) const override { return id == WeightFormat<W>::id; }
    void read_stored_rows(const TensorRequest&, std::size_t first, std::span<std::byte> dst) const override {
        std::memcpy(dst.data(), table_.data() + first * table_.extent(1), dst.size());
    }

private:
    const Tensor<W, Extents<dyn, dyn>, Cpu>& table_;
    std::string path_ = "table in memory";
};

template <class W>
void check_arranged_table() {
    Cpu cpu(2);
    std::mt19937 rng(9);
    std::normal_distribution<float> normal;
    const std::size_t vocab = 75, width = 800;  // two whole groups and 11 rows after them
    std::vector<float> w(vocab * width), widened(vocab * width);
    for (float& v : w) v = 0.02f * normal(rng);
    Tensor<W, Extents<dyn, dyn>, Cpu> stored(vocab, width / WeightFormat<W>::block);
    WeightFormat<W>::quantize(w.data(), stored.data(), w.size());
    WeightFormat<W>::dequantize(stored.data(), widened.data(), w.size());
    Embedding<dyn, dyn, Cpu, W> head(vocab, width);
    const StoredTable<W> file(stored);
    head.load(WeightSource<Cpu>{file, "", cpu}, "wte.weight");
#if TESSERA_HAS_AVX512_KERNELS
    const bool arranges = arranges_here<W>();
#else
    const bool arranges = false;
#endif
    INFO(WeightFormat<W>::name);
    REQUIRE(head.packed.empty() == !arranges);
    CHECK((std::memcmp(head.table.data(), stored.data(), stored.size() * sizeof(W)) != 0) == arranges);
    // Rows gathered back out of the groups, and out of the rows after them.
    const std::vector<TokenId> ids{0, 17, 31, 32, 63, 64, 70, 74};
    Tensor<float, Extents<dyn, dyn>, Cpu> rows_out(ids.size(), width);
    head(cpu, ids, rows_out);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        INFO("id " << ids[i]);
        CHECK(std::memcmp(rows_out.data() + i * width, widened.data() + static_cast<std::size_t>(ids[i]) * width, width * sizeof(float)) == 0);
    }
    const TokenId outside = 75;
    Tensor<float, Extents<dyn, dyn>, Cpu> one(1, width);
    CHECK_THROWS_WITH(head(cpu, std::span<const TokenId>(&outside, 1), one), Catch::Contains("token id 75"));

    const Operands operands = random_operands(rng, vocab, 16, width);
    std::vector<float> last_alone;
    for (const std::size_t m : {1, 2, 5, 16}) {
        const auto rows = operands.last_rows(m);
        Tensor<float, Extents<dyn, dyn>, Cpu> c(m, vocab), expected(m, vocab);
        head.project(cpu, rows, c);
        INFO(m << " rows");
#if TESSERA_HAS_AVX512_KERNELS
        if (arranges) {
            const auto bits = arranged_expected(cpu, rows.data(), stored.data(), widened, nullptr, m, vocab, width);
            std::copy(bits.begin(), bits.end(), expected.data());
            REQUIRE(std::memcmp(c.data(), expected.data(), m * vocab * sizeof(float)) == 0);
            const std::vector<float> last(c.data() + (m - 1) * vocab, c.data() + m * vocab);
            if (m == 1) last_alone = last;
            CHECK(last == last_alone);
            continue;
        }
#endif
        gemm(cpu, rows, stored, expected);
        CHECK(std::memcmp(c.data(), expected.data(), m * vocab * sizeof(float)) == 0);
    }
}
}  // namespace

TEST_CASE("Head tables arranged in place: gathered rows and products", "[formats][gemm]") {
    STATIC_REQUIRE(ArrangesTables<Cpu, float>);
    STATIC_REQUIRE(ArrangesTables<Cpu, bf16>);
    STATIC_REQUIRE(ArrangesTables<Cpu, Q8_0>);
    STATIC_REQUIRE(ArrangesTables<Cpu, Q4_0>);
    STATIC_REQUIRE(!ArrangesTables<Cpu, Q6_K>);
    STATIC_REQUIRE(HasPackedWeights<Cpu, Q6_K>);
    STATIC_REQUIRE(!HasPackedWeights<Cpu, Q8_0>);
    check_arranged_table<float>();
    check_arranged_table<bf16>();
    check_arranged_table<Q8_0>();
    check_arranged_table<Q4_0>();
}

// Q8_0, Q4_0, bf16 and float arranged in place once loaded (Cpu::arrange_weights,
// cpu/arranged_weights.hpp): products of any number of rows, one included, must have the bits
// of the packed GEMM over W as stored (which packs W per call into the same tiles; for float,
// of one fused multiply-add chain per output in the order of k; Q8_0 / Q4_0 in AVX2's panels,
// avx2_panels_expected), match the double-precision
// reference, and give a row the same bits whatever shares the product. The whole groups of 32
// rows are arranged, the rest stay as stored after them (fewer than 32 rows: nothing).
namespace {
template <class W>
void check_arranged_products() {
    Cpu cpu(2);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    for (const std::size_t n : {32, 96, 45, 160}) {
        for (const std::size_t k : {800, 3072}) {
            std::vector<float> w(n * k);
            for (float& v : w) v = 0.02f * normal(rng);
            constexpr std::size_t block = WeightFormat<W>::block;
            Tensor<W, Extents<dyn, dyn>, Cpu> stored(n, k / block), arranged_w(n, k / block);
            WeightFormat<W>::quantize(w.data(), stored.data(), n * k);
            std::vector<float> dequantized(n * k);
            WeightFormat<W>::dequantize(stored.data(), dequantized.data(), n * k);
            std::copy(stored.data(), stored.data() + stored.size(), arranged_w.data());
            const auto arranged = cpu.arrange_weights(arranged_w.view());
#if TESSERA_HAS_AVX512_KERNELS
            const bool arranges = arranges_here<W>() && n >= 32;
#else
            const bool arranges = false;
#endif
            INFO(WeightFormat<W>::name << ", n " << n << ", k " << k);
            REQUIRE(arranged.empty() == !arranges);
            // Arranging moves bytes: some must have moved, none may be lost (a multiset check).
            const auto* before = reinterpret_cast<const unsigned char*>(stored.data());
            const auto* after = reinterpret_cast<const unsigned char*>(arranged_w.data());
            const std::size_t bytes = stored.size() * sizeof(W);
            CHECK((std::memcmp(before, after, bytes) != 0) == arranges);
            std::vector<unsigned char> sorted_before(before, before + bytes), sorted_after(after, after + bytes);
            std::sort(sorted_before.begin(), sorted_before.end());
            std::sort(sorted_after.begin(), sorted_after.end());
            CHECK(sorted_before == sorted_after);

            const Operands operands = random_operands(rng, n, 20, k);
            const auto& bias = operands.bias;
            std::vector<float> last_alone;
            for (std::size_t m = 1; m <= 20; ++m) {
                const auto rows = operands.last_rows(m);
                Tensor<float, Extents<dyn, dyn>, Cpu> c(m, n), expected(m, n);
                gemm(cpu, rows, arranged_w, arranged, bias, c);
                INFO(m << " rows");
                const std::vector<float> last(c.data() + (m - 1) * n, c.data() + m * n);
                if (m == 1) last_alone = last;
                // As check_products: the reference over the activations rounded as the kernel rounds them.
                const auto precision = arranges ? cpu::arranged_activation_precision<W>(m) : cpu::activation_precision<W>(m);
                const std::vector<double> ref = reference(std::vector<float>(rows.data(), rows.data() + m * k), dequantized, m, n, k, precision);
                double worst = 0.0;
                for (std::size_t i = 0; i < m * n; ++i) worst = std::max(worst, std::abs(c.data()[i] - (ref[i] + bias.data()[i % n])));
                CHECK(worst < 2e-5);
#if TESSERA_HAS_AVX512_KERNELS
                if (arranges) {
                    const auto bits = arranged_expected(cpu, rows.data(), stored.data(), dequantized, bias.data(), m, n, k);
                    std::copy(bits.begin(), bits.end(), expected.data());
                    REQUIRE(std::memcmp(c.data(), expected.data(), m * n * sizeof(float)) == 0);
                    CHECK(last == last_alone);
                    continue;
                }
#endif
                gemm(cpu, rows, stored, bias, expected);  // not arranged: the products over W as stored
                REQUIRE(std::memcmp(c.data(), expected.data(), m * n * sizeof(float)) == 0);
            }
        }
    }
}
}  // namespace

TEST_CASE("Products over weights arranged in place have the packed GEMMs' bits", "[formats][gemm]") {
    STATIC_REQUIRE(ArrangesWeights<Cpu, Q8_0>);
    STATIC_REQUIRE(ArrangesWeights<Cpu, Q4_0>);
    STATIC_REQUIRE(ArrangesWeights<Cpu, bf16>);
    STATIC_REQUIRE(ArrangesWeights<Cpu, float>);
    check_arranged_products<float>();
    check_arranged_products<Q8_0>();
    check_arranged_products<Q4_0>();
    check_arranged_products<bf16>();
}

TEST_CASE("Stored-weight products check their shapes", "[formats][gemm]") {
    Cpu cpu(1);
    Tensor<Q8_0, Extents<dyn, dyn>, Cpu> w(4, 2);  // 4 rows of 64 weights
    Tensor<float, Extents<dyn, dyn>, Cpu> a(3, 32), c(3, 4);
    CHECK_THROWS_WITH(gemm(cpu, a, w, c), Catch::Contains("gemm: a's column count is 32 but w's column count is 64"));
    Tensor<float, Extents<dyn, dyn>, Cpu> a64(3, 64), c5(3, 5);
    CHECK_THROWS_AS(gemm(cpu, a64, w, c5), ShapeError);
    Tensor<float, Extents<dyn, dyn>, Cpu> out(1, 32);
    const TokenId id = 3;
    CHECK_THROWS_AS(gather_rows(cpu, w, std::span<const TokenId>(&id, 1), out), ShapeError);
    const TokenId outside = 4;
    Tensor<float, Extents<dyn, dyn>, Cpu> row(1, 64);
    CHECK_THROWS_WITH(gather_rows(cpu, w, std::span<const TokenId>(&outside, 1), row), Catch::Contains("token id 4"));
}

TEST_CASE("Layers refuse widths that are not whole blocks", "[formats]") {
    CHECK_THROWS_WITH((Linear<dyn, dyn, Cpu, Q8_0>(48, 16)),
                      "Linear: 48 weights per row are not a whole number of q8_0 blocks of 32 (use f32 or bf16 for this model)");
    CHECK_NOTHROW(Linear<dyn, dyn, Cpu, bf16>(48, 16));
    CHECK_THROWS_WITH((Embedding<dyn, dyn, Cpu, Q4_0>(10, 40)), Catch::Contains("Embedding: 40 weights per row"));
}

namespace {
// Named float matrices (rows of `cols`) and vectors in memory: what a layer loads from.
class MemoryCheckpoint final : public Checkpoint {
public:
    std::map<std::string, std::pair<std::size_t, std::vector<float>>> tensors;  // name -> (cols, elements)
    const std::string& path() const override { return path_; }
    void read_rows(const TensorRequest& request, std::size_t first, std::span<float> dst) const override {
        const auto& [cols, elements] = tensors.at(request.name);
        REQUIRE(cols == request.cols);
        REQUIRE((first * cols + dst.size()) <= elements.size());
        std::copy_n(elements.begin() + static_cast<std::ptrdiff_t>(first * cols), dst.size(), dst.begin());
    }

private:
    std::string path_ = "memory";
};

// q, k and v (with biases when `biased`) as one StackedLinear, against each as its own Linear,
// over 1 to 40 rows: each map's outputs with the same bits where `exact` (every map a whole
// number of the arranged layout's 32-row groups: the same kernels over the same rows), else
// within `tolerance` of them (and within float rounding where products of several rows are
// Eigen's, without AVX2 or switched off: its blocking depends on the matrix's size): a map of fewer than 32 rows alone is not arranged, and over
// several rows its stored-weight product may take float activations where the arranged one
// quantizes them to 8 bits (outputs here ~1: 8-bit rounding moves them by up to ~1e-2).
template <class W>
void check_stacked(const std::array<std::size_t, 3>& outputs, bool biased, bool exact, float tolerance = 0.0f) {
    Cpu cpu(2);
    constexpr std::size_t in = 128;
    std::mt19937 rng(static_cast<unsigned>(outputs[0] + 7 * outputs[1]));
    std::normal_distribution<float> normal;
    const auto random = [&](std::size_t n, float scale) {
        std::vector<float> v(n);
        for (float& x : v) x = scale * normal(rng);
        return v;
    };
    MemoryCheckpoint file;
    const std::array<std::string, 3> names{"q_proj", "k_proj", "v_proj"};
    for (std::size_t i = 0; i < 3; ++i) {
        file.tensors[names[i] + ".weight"] = {in, random(outputs[i] * in, 0.05f)};
        file.tensors[names[i] + ".bias"] = {outputs[i], random(outputs[i], 1.0f)};
    }
    const WeightSource<Cpu> src{file, "", cpu};
    StackedLinear<Cpu, W, 3> stacked(in, outputs, biased);
    stacked.load(src, names);
    std::vector<Linear<dyn, dyn, Cpu, W>> alone;
    for (std::size_t i = 0; i < 3; ++i) {
        alone.emplace_back(in, outputs[i], biased);
        alone[i].load(src, names[i]);
    }
    for (const std::size_t t : {1u, 3u, 16u, 17u, 40u}) {  // one product up to together_rows_max rows, apart after
        Tensor<float, Extents<dyn, dyn>, Cpu> x(t, in);
        const std::vector<float> xs = random(t * in, 1.0f);
        std::copy(xs.begin(), xs.end(), x.data());
        Tensor<float, Extents<dyn>, Cpu> room(stacked.room_floats(t));
        std::array<Tensor<float, Extents<dyn, dyn>, Cpu>, 3> got{Tensor<float, Extents<dyn, dyn>, Cpu>(t, outputs[0]),
                                                              Tensor<float, Extents<dyn, dyn>, Cpu>(t, outputs[1]),
                                                              Tensor<float, Extents<dyn, dyn>, Cpu>(t, outputs[2])};
        stacked(cpu, x, room.view(), got[0], got[1], got[2]);
        for (std::size_t i = 0; i < 3; ++i) {
            Tensor<float, Extents<dyn, dyn>, Cpu> want(t, outputs[i]);
            alone[i](cpu, x, want);
            float worst = 0.0f;
            std::size_t differ = 0;
            for (std::size_t e = 0; e < want.size(); ++e) {
                worst = std::max(worst, std::abs(got[i].data()[e] - want.data()[e]));
                differ += got[i].data()[e] != want.data()[e];
            }
            INFO(WeightFormat<W>::name << " map " << names[i] << " of " << outputs[i] << " outputs, " << t << " rows: "
                                       << differ << " differ, by up to " << worst);
            if (exact && cpu::has_avx2()) CHECK(differ == 0);
            else CHECK(worst < std::max(tolerance, 1e-5f));  // portable: Eigen's GEMM blocks by the matrix's size
        }
        if constexpr (!std::is_same_v<W, KQuantMix>) {  // (which needs no room)
            Tensor<float, Extents<dyn>, Cpu> small(stacked.room_floats(t) - 1);
            if (t <= stacked.together_rows_max) {
                CHECK_THROWS_WITH(stacked(cpu, x, small.view(), got[0], got[1], got[2]), Catch::Contains("StackedLinear: room for"));
            }
        }
    }
}
}  // namespace

TEST_CASE("StackedLinear: each map's outputs are those of its own Linear", "[formats][gemm]") {
    check_stacked<float>({64, 32, 32}, true, true);
    check_stacked<bf16>({64, 32, 32}, false, true);
    check_stacked<Q8_0>({96, 32, 32}, true, true);
    check_stacked<Q4_0>({64, 64, 64}, false, true);
    check_stacked<KQuantMix>({64, 32, 32}, true, true);  // float maps here (the file stores floats), one product each
    // maps that are not whole 32-row groups: their tails run other kernels alone than stacked
    check_stacked<float>({40, 24, 24}, true, false, 1e-5f);
    check_stacked<Q8_0>({40, 24, 24}, false, false, 0.05f);
    check_stacked<Q4_0>({72, 8, 8}, true, false, 0.05f);
}

TEST_CASE("copy_columns checks that the columns lie inside the source", "[formats]") {
    Cpu cpu(1);
    Tensor<float, Extents<dyn, dyn>, Cpu> src(2, 5), dst(2, 2), tall(3, 2);
    for (std::size_t i = 0; i < src.size(); ++i) src.data()[i] = static_cast<float>(i);
    copy_columns(cpu, src, 3, dst);
    CHECK(std::vector<float>(dst.data(), dst.data() + 4) == std::vector<float>{3, 4, 8, 9});
    CHECK_THROWS_WITH(copy_columns(cpu, src, 4, dst), Catch::Contains("columns [4, 6) of 2 rows are not inside the source's 2 x 5"));
    CHECK_THROWS_AS(copy_columns(cpu, src, 0, tall), ShapeError);
}

TEST_CASE("Weight format names", "[formats]") {
    CHECK(weight_format_named("q8_0") == WeightFormatId::q8_0);
    CHECK(weight_format_named("Q8_0") == std::nullopt);
    CHECK(weight_format_name(WeightFormatId::q4_0) == "q4_0");
    CHECK(weight_format_name(WeightFormatId::bf16) == "bf16");
    CHECK(weight_format_name(WeightFormatId::f32) == "f32");
}

#if TESSERA_HAS_AVX512_KERNELS
TEST_CASE("The vector activation quantization gives the portable one's bits", "[formats]") {
    if (!cpu::has_avx2()) {
        test::skip("no AVX2 here (or switched off): nothing to compare");
        return;
    }
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    std::vector<float> x(32 * 40);
    for (float& v : x) v = normal(rng);
    for (std::size_t j = 0; j < 32; ++j) x[j] = static_cast<float>(j) - 15.5f;  // ties: 127 / 16 * (j - 15.5)
    x[32] = 127.0f;                                                             // a block with scale 1
    for (std::size_t j = 1; j < 32; ++j) x[32 + j] = static_cast<float>(j) + 0.5f;
    x[64 + 5] = -1000.0f;  // a block whose largest magnitude is negative
    cpu::QuantizedRow portable;
    portable.assign(x.data(), x.size());
    const auto check = [&](auto quantize_row, const char* which) {
        INFO(which);
        cpu::QuantizedRow vector;
        vector.reserve(x.size());
        quantize_row(vector, x.data(), x.size());
        CHECK(portable.q == vector.q);
        CHECK(portable.d == vector.d);
        CHECK(vector.q[33] == 2);  // 1.5 -> 2 and 2.5 -> 2: ties to even
        CHECK(vector.q[34] == 2);
        CHECK(vector.q[64 + 5] == -127);
    };
    check(cpu::avx2::quantize_row, "AVX2");
    if (cpu::has_avx512_vnni()) check(cpu::avx512vnni::quantize_row, "AVX-512");
}
#endif

namespace {

// Integer weights and activations with every scale 1, so that a one-row product is an exact
// integer: the vector kernels must give the portable loops' result exactly. First a block of
// ±127 everywhere (the largest products vpmaddubsw pairs), then, for Q8_0, one of weights -128
// (GGUF allows them; GGML's quantizer never writes one) against activations of both signs.
template <class W>
void check_integer_dot_is_exact(std::size_t k) {
    std::mt19937 rng(static_cast<unsigned>(k));
    std::uniform_int_distribution<int> activation(-127, 127), weight(std::is_same_v<W, Q4_0> ? 0 : -127,
                                                                     std::is_same_v<W, Q4_0> ? 15 : 127);
    cpu::QuantizedRow x;
    x.reserve(k);
    std::vector<W> w(k / 32);
    for (std::size_t b = 0; b < k / 32; ++b) {
        w[b].d = f16(1.0f);
        x.d[b] = 1.0f;
        for (std::size_t j = 0; j < 32; ++j) {
            const bool extreme = b == 0;
            const int xj = extreme ? (j % 2 ? 127 : -127) : activation(rng);
            x.q[b * 32 + j] = static_cast<std::int8_t>(xj);
            if constexpr (std::is_same_v<W, Q4_0>) {
                const int nibble = extreme ? (j % 2 ? 0 : 15) : weight(rng);  // -8 or 7
                auto& byte = w[b].qs[j % 16];
                byte = static_cast<std::uint8_t>(j < 16 ? (byte & 0xF0) | nibble : (byte & 0x0F) | (nibble << 4));
            } else if (b == 1) {
                w[b].qs[j] = -128;
            } else {
                w[b].qs[j] = static_cast<std::int8_t>(extreme ? (j % 2 ? 127 : -127) : weight(rng));
            }
        }
    }
    x.prepare_for_avx2<W>(k);
    std::int64_t exact = 0;
    for (std::size_t b = 0; b < k / 32; ++b) exact += cpu::portable::block_dot(w[b], x.q.data() + b * 32);
    INFO(WeightFormat<W>::name << " k=" << k);
    CHECK(cpu::portable::dot(w.data(), nullptr, x, k) == static_cast<float>(exact));
#if TESSERA_HAS_AVX512_KERNELS
    if (cpu::supported_kernel_level() >= cpu::KernelLevel::avx2)
        CHECK(cpu::avx2::dot(w.data(), nullptr, x, k) == static_cast<float>(exact));
    if (cpu::has_avx512_vnni()) {
        if constexpr (std::is_same_v<W, Q4_0>) x.pair_for_nibbles(k);
        CHECK(cpu::avx512vnni::dot(w.data(), nullptr, x, k) == static_cast<float>(exact));
    }
#endif
}

}  // namespace

namespace {

// The one-row dot of each level this CPU has (portable, AVX2, AVX-512 VNNI) over a row whose
// product is the integer `exact`.
template <class W>
void check_every_level_gives(const W* w, const cpu::QuantizedRow& x, std::size_t k, std::int64_t exact) {
    CHECK(cpu::portable::dot(w, nullptr, x, k) == static_cast<float>(exact));
#if TESSERA_HAS_AVX512_KERNELS
    if (cpu::supported_kernel_level() >= cpu::KernelLevel::avx2) CHECK(cpu::avx2::dot(w, nullptr, x, k) == static_cast<float>(exact));
    if (cpu::has_avx512_vnni()) CHECK(cpu::avx512vnni::dot(w, nullptr, x, k) == static_cast<float>(exact));
#endif
}

// Q6_K with d = 1, every group scale 1 and x's scales 1: the sum of (q - 32) x, an integer.
// The first super-block pairs the extreme quants (0 and 63: -32 and 31) with ±127.
void check_q6_k_dot_is_exact(std::size_t k) {
    std::mt19937 rng(static_cast<unsigned>(k) + 1);
    std::uniform_int_distribution<int> activation(-127, 127), quant(0, 63);
    cpu::QuantizedRow x;
    x.reserve(k);
    std::vector<int> q(k);
    for (std::size_t i = 0; i < k; ++i) {
        const bool extreme = i < 256;
        q[i] = extreme ? (i % 3 ? 63 : 0) : quant(rng);
        x.q[i] = static_cast<std::int8_t>(extreme ? (i % 2 ? 127 : -127) : activation(rng));
    }
    for (std::size_t b = 0; b < k / 32; ++b) x.d[b] = 1.0f;
    std::vector<Q6_K> w(k / 256);
    std::vector<float> ones(k, 1.0f);
    WeightFormat<Q6_K>::quantize(ones.data(), w.data(), k);  // the layout, then every field set by hand
    std::int64_t exact = 0;
    for (std::size_t b = 0; b < k / 256; ++b) {
        w[b].d = f16(1.0f);
        for (std::int8_t& s : w[b].scales) s = 1;
        for (std::size_t half = 0; half < 2; ++half) {
            for (std::size_t l = 0; l < 32; ++l) {
                const int* v = q.data() + b * 256 + 128 * half + l;  // weights l, l + 32, l + 64, l + 96
                w[b].ql[64 * half + l] = static_cast<std::uint8_t>((v[0] & 15) | ((v[64] & 15) << 4));
                w[b].ql[64 * half + l + 32] = static_cast<std::uint8_t>((v[32] & 15) | ((v[96] & 15) << 4));
                w[b].qh[32 * half + l] = static_cast<std::uint8_t>((v[0] >> 4) | ((v[32] >> 4) << 2) | ((v[64] >> 4) << 4) | ((v[96] >> 4) << 6));
            }
        }
    }
    for (std::size_t i = 0; i < k; ++i) exact += (q[i] - 32) * x.q[i];
    std::vector<float> widened(k);
    WeightFormat<Q6_K>::dequantize(w.data(), widened.data(), k);
    for (std::size_t i = 0; i < k; ++i) REQUIRE(widened[i] == static_cast<float>(q[i] - 32));  // the layout as meant
    x.prepare_for_avx2<Q6_K>(k);
    x.prepare_for<Q6_K>(k);
    INFO("q6_k k=" << k);
    check_every_level_gives(w.data(), x, k, exact);
}

}  // namespace

namespace {

// Q4_K / Q5_K / Q5_0 / Q5_1 rows of random quants with d = 1 and small integer scales and
// mins (offsets), x's scales 1: every weight an integer, so the dot is an integer sum (under
// 2^24 for these k) that each kernel must give exactly. Each field is set by hand; the widened
// row (the format's dequantize) gives the expected sum.
template <class W>
void check_offset_dot_is_exact(std::size_t k) {
    std::mt19937 rng(static_cast<unsigned>(k) + 7);
    std::uniform_int_distribution<int> activation(-127, 127), byte(0, 255), small(1, 2);
    cpu::QuantizedRow x;
    x.reserve(k);
    for (std::size_t i = 0; i < k; ++i) x.q[i] = static_cast<std::int8_t>(i < 64 ? (i % 2 ? 127 : -127) : activation(rng));
    for (std::size_t b = 0; b < k / 32; ++b) x.d[b] = 1.0f;
    std::vector<W> w(k / WeightFormat<W>::block);
    for (W& block : w) {
        block.d = f16(1.0f);
        for (auto& q : block.qs) q = static_cast<std::uint8_t>(byte(rng));
        if constexpr (requires { block.qh; }) {
            for (auto& h : block.qh) h = static_cast<std::uint8_t>(byte(rng));
        }
        if constexpr (requires { block.dmin; }) {
            block.dmin = f16(1.0f);
            std::memset(block.scales, 0, sizeof block.scales);  // scales and mins 1 or 2, all eight groups
            for (int g = 0; g < 8; ++g) {
                const int sc = small(rng), m = small(rng);
                if (g < 4) {
                    block.scales[g] = static_cast<std::uint8_t>(sc);
                    block.scales[g + 4] = static_cast<std::uint8_t>(m);
                } else {
                    block.scales[g + 4] = static_cast<std::uint8_t>(sc | (m << 4));
                }
            }
        }
        if constexpr (std::is_same_v<W, Q5_1>) block.m = f16(static_cast<float>(-small(rng)));
    }
    std::vector<float> widened(k);
    WeightFormat<W>::dequantize(w.data(), widened.data(), k);
    std::int64_t exact = 0;
    for (std::size_t i = 0; i < k; ++i) {
        REQUIRE(widened[i] == std::round(widened[i]));
        exact += static_cast<std::int64_t>(widened[i]) * x.q[i];
    }
    REQUIRE(std::abs(exact) < (1 << 24));
    x.prepare_for<W>(k);  // (what the kernels of every level read besides q and d)
    INFO(WeightFormat<W>::name << " k=" << k);
    check_every_level_gives(w.data(), x, k, exact);
}

}  // namespace

TEST_CASE("The integer sums of the K-quant and Q5_0 / Q5_1 kernels are exact", "[formats][gemm]") {
    for (std::size_t k : {256, 512, 1024}) {
        check_offset_dot_is_exact<Q4_K>(k);
        check_offset_dot_is_exact<Q5_K>(k);
    }
    for (std::size_t k : {32, 64, 96, 800, 1024}) {
        check_offset_dot_is_exact<Q5_0>(k);
        check_offset_dot_is_exact<Q5_1>(k);
    }
}

TEST_CASE("The integer sums of the one-row kernels are exact", "[formats][gemm]") {
    for (std::size_t k : {32, 64, 96, 256, 800, 3072}) {
        check_integer_dot_is_exact<Q8_0>(k);
        check_integer_dot_is_exact<Q4_0>(k);
    }
    for (std::size_t k : {256, 768, 3072}) check_q6_k_dot_is_exact(k);
}

#if TESSERA_HAS_AVX512_KERNELS
TEST_CASE("The AVX2 bf16 row product matches a double-precision one for every tail", "[formats][gemm]") {
    if (cpu::supported_kernel_level() < cpu::KernelLevel::avx2) {
        test::skip("no AVX2 here (or switched off): nothing to compare");
        return;
    }
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    for (std::size_t k : {1, 7, 8, 9, 31, 32, 33, 40, 800}) {
        std::vector<bf16> w(k);
        std::vector<float> x(k);
        double ref = 0.0;
        for (std::size_t i = 0; i < k; ++i) {
            w[i] = bf16(normal(rng));
            x[i] = normal(rng);
            ref += static_cast<double>(static_cast<float>(w[i])) * x[i];
        }
        INFO("k=" << k);
        CHECK(std::abs(cpu::avx2::dot(w.data(), x.data(), cpu::QuantizedRow{}, k) - ref) < 1e-4 * std::sqrt(double(k)));
    }
}
#endif

TEST_CASE("TESSERA_CPU_KERNELS narrows the kernels, and an unknown value is refused by name", "[formats]") {
    const cpu::KernelLevel supported = cpu::supported_kernel_level();
    const std::optional<cpu::KernelLevel> requested = cpu::requested_kernel_level();  // as ctest sets it
    CHECK(cpu::kernel_level() == (requested && *requested < supported ? *requested : supported));
    CHECK(cpu::has_amx() == (cpu::kernel_level() == cpu::KernelLevel::amx));
    CHECK(cpu::has_avx512() == (cpu::kernel_level() >= cpu::KernelLevel::avx512));
    CHECK(cpu::has_avx2() == (cpu::kernel_level() >= cpu::KernelLevel::avx2));
    const std::string before = requested ? std::getenv("TESSERA_CPU_KERNELS") : "";
    ::setenv("TESSERA_CPU_KERNELS", "avx3", 1);
    CHECK_THROWS_AS(Cpu(1), ArgumentError);
    CHECK_THROWS_WITH(Cpu(1), "TESSERA_CPU_KERNELS=avx3: expected portable, avx2, avx512 or amx");
    ::setenv("TESSERA_CPU_KERNELS", "avx2", 1);
    CHECK(cpu::requested_kernel_level() == cpu::KernelLevel::avx2);
    CHECK_NOTHROW(Cpu(1));
    if (requested) ::setenv("TESSERA_CPU_KERNELS", before.c_str(), 1);
    else ::unsetenv("TESSERA_CPU_KERNELS");
}
