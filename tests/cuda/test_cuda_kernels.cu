// Every CUDA kernel against the CPU backend on the same inputs, with a normalised error bound
// (as llama.cpp's test-backend-ops): NMSE = Σ(gpu - cpu)² / Σ cpu² <= 1e-10. Both compute in
// fp32 with different summation orders, which gives NMSE ~1e-14; a wrong index or a missing
// term gives ~1e-3 or worse. Without a device, every test is skipped (exit code 77).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>
#include <span>
#include <vector>

#include <tessera/backend/cuda/cuda.cuh>
#include <tessera/nn/rotary_positions.hpp>
#include <tessera/tessera.hpp>

#include "../reference_kernels.hpp"

using namespace tessera;

namespace {

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        err += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
        norm += static_cast<double>(want[i]) * want[i];
    }
    return norm == 0 ? err : err / norm;
}

constexpr double max_nmse = 1e-10;

Cpu& host_backend() {
    static Cpu instance(2);
    return instance;
}
Cuda& device_backend() {
    static Cuda instance;
    return instance;
}

// The same random values on both backends.
template <std::size_t... Es>
struct Pair {
    Tensor<float, Extents<Es...>, Cpu> host;
    Tensor<float, Extents<Es...>, Cuda> device;
    template <class... Ds>
    Pair(std::uint64_t seed, Ds... sizes) : host(sizes...), device(sizes...) {
        const auto v = test::random_values(host.size(), seed);
        copy_from_host(std::span<const float>(v), host);
        copy_from_host(device_backend(), std::span<const float>(v), device);
    }
};

}  // namespace

// m <= 8: the skinny kernel (vector loads when k % 4 == 0), m > 8: cuBLAS + the bias kernel.
TEST_CASE("cuda gemm and gemv match the CPU", "[cuda]") {
    const std::size_t m = GENERATE(1u, 3u, 8u, 9u, 130u);
    const std::size_t n = GENERATE(1u, 17u, 769u, 3000u);
    const std::size_t k = GENERATE(1u, 3u, 768u, 769u, 3072u);
    Pair<dyn, dyn> a(1, m, k), w(2, n, k), c(3, m, n);
    Pair<dyn> bias(4, n), x(5, k), y(6, n);
    gemm(host_backend(), a.host, w.host, bias.host, c.host);
    gemm(device_backend(), a.device, w.device, bias.device, c.device);
    CHECK(nmse(to_host(device_backend(), c.device), to_host(c.host)) <= max_nmse);
    gemv(host_backend(), w.host, x.host, bias.host, y.host);
    gemv(device_backend(), w.device, x.device, bias.device, y.device);
    CHECK(nmse(to_host(device_backend(), y.device), to_host(y.host)) <= max_nmse);
    gemv(host_backend(), w.host, x.host, y.host);
    gemv(device_backend(), w.device, x.device, y.device);
    CHECK(nmse(to_host(device_backend(), y.device), to_host(y.host)) <= max_nmse);
}

TEST_CASE("cuda element-wise, row and attention kernels match the CPU", "[cuda]") {
    const std::size_t rows = GENERATE(1u, 3u, 17u);
    const std::size_t cols = GENERATE(1u, 17u, 769u, 50257u);
    Pair<dyn, dyn> x(7, rows, cols), y(8, rows, cols), out(9, rows, cols);
    Pair<dyn> gamma(10, cols), beta(11, cols);
    add(host_backend(), x.host, y.host, out.host);
    add(device_backend(), x.device, y.device, out.device);
    CHECK(nmse(to_host(device_backend(), out.device), to_host(out.host)) <= max_nmse);
    gelu(host_backend(), x.host, out.host);
    gelu(device_backend(), x.device, out.device);
    CHECK(nmse(to_host(device_backend(), out.device), to_host(out.host)) <= max_nmse);
    layer_norm(host_backend(), x.host, gamma.host, beta.host, 1e-5f, out.host);
    layer_norm(device_backend(), x.device, gamma.device, beta.device, 1e-5f, out.device);
    CHECK(nmse(to_host(device_backend(), out.device), to_host(out.host)) <= max_nmse);
}

// dim picks the kernel's elements per lane (1, 2, 4, 8); tq * heads >= 1024 picks 4 warps per
// block instead of 32.
TEST_CASE("cuda causal attention matches the CPU, prefill and decode", "[cuda]") {
    const std::size_t tk = GENERATE(1u, 17u, 300u);
    const std::size_t heads = GENERATE(1u, 12u);
    const std::size_t dim = GENERATE(1u, 64u, 65u, 200u);
    const std::size_t tq = GENERATE_COPY(values<std::size_t>({1u, tk}));
    Pair<dyn, dyn, dyn> q(12, tq, heads, dim), k(13, tk, heads, dim), v(14, tk, heads, dim), out(15, tq, heads, dim);
    causal_attention(host_backend(), q.host, k.host, v.host, out.host);
    causal_attention(device_backend(), q.device, k.device, v.device, out.device);
    CHECK(nmse(to_host(device_backend(), out.device), to_host(out.host)) <= max_nmse);
}

// The Llama family's kernels: RMSNorm, the gated SiLU, rotary positions in both pairings, and
// grouped-query attention (2 and 12 query heads per key/value head).
TEST_CASE("cuda RMSNorm, gated SiLU, rotary positions and grouped-query attention match the CPU", "[cuda][llama]") {
    const std::size_t rows = GENERATE(1u, 17u);
    const std::size_t cols = GENERATE(64u, 769u);
    Pair<dyn, dyn> x(25, rows, cols), y(26, rows, cols), out(27, rows, cols);
    Pair<dyn> gamma(28, cols);
    rms_norm(host_backend(), x.host, gamma.host, 1e-6f, out.host);
    rms_norm(device_backend(), x.device, gamma.device, 1e-6f, out.device);
    CHECK(nmse(to_host(device_backend(), out.device), to_host(out.host)) <= max_nmse);
    silu_mul(host_backend(), x.host, y.host, out.host);
    silu_mul(device_backend(), x.device, y.device, out.device);
    CHECK(nmse(to_host(device_backend(), out.device), to_host(out.host)) <= max_nmse);
    for (const RopePairing pairing : {RopePairing::adjacent, RopePairing::halves}) {
        Pair<dyn, dyn, dyn> r(29, rows, 3, 64);
        const std::vector<double> inv_freq = rotary_frequencies(64, {500000.0, pairing, {}});
        rotary(host_backend(), r.host, 1000, inv_freq, pairing, 1.1386f);  // with YaRN's attention factor for 4x
        rotary(device_backend(), r.device, 1000, inv_freq, pairing, 1.1386f);
        CHECK(nmse(to_host(device_backend(), r.device), to_host(r.host)) <= max_nmse);
    }
    const std::size_t kv_heads = GENERATE(1u, 6u);
    Pair<dyn, dyn, dyn> q(30, rows, 12, 64), k(31, 40, kv_heads, 64), v(32, 40, kv_heads, 64), att(33, rows, 12, 64);
    causal_attention(host_backend(), q.host, k.host, v.host, att.host);
    causal_attention(device_backend(), q.device, k.device, v.device, att.device);
    CHECK(nmse(to_host(device_backend(), att.device), to_host(att.host)) <= max_nmse);
}

TEST_CASE("cuda attention in place (out = q) and over 256 head elements", "[cuda]") {
    Pair<dyn, dyn, dyn> q(19, 5, 2, 64), k(20, 9, 2, 64), v(21, 9, 2, 64), out(22, 5, 2, 64);
    causal_attention(host_backend(), q.host, k.host, v.host, out.host);
    causal_attention(device_backend(), q.device, k.device, v.device, q.device);
    CHECK(nmse(to_host(device_backend(), q.device), to_host(out.host)) <= max_nmse);
    Pair<dyn, dyn, dyn> wide(23, 1, 1, 257), wide_kv(24, 2, 1, 257);
    CHECK_THROWS_WITH(causal_attention(device_backend(), wide.device, wide_kv.device, wide_kv.device, wide.device),
                      Catch::Contains("head size 257 is over the 256 supported"));
}

TEST_CASE("cuda gather_rows copies the rows of the ids, in launches of 256", "[cuda]") {
    Pair<dyn, dyn> table(25, 1000, 33), out(26, 600, 33);
    std::vector<std::int32_t> ids(600);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>((i * 613) % 1000);
    host_backend().gather_rows(table.host.view(), ids, out.host.view());
    device_backend().gather_rows(table.device.view(), ids, out.device.view());
    CHECK(to_host(device_backend(), out.device) == to_host(out.host));
}

TEST_CASE("cuda graph replay gives what the kernels give one by one, and survives a throwing step", "[cuda]") {
    Pair<dyn, dyn> a(27, 1, 768), w(28, 3072, 768), c(29, 1, 3072), d(30, 1, 3072);
    Pair<dyn> bias(31, 3072);
    Cuda& cuda = device_backend();
    const auto step = [&](auto& out) {
        gemm(cuda, a.device, w.device, bias.device, out);
        gelu(cuda, out, out);
        add(cuda, out, out, out);
    };
    step(c.device);
    for (int replay = 0; replay < 3; ++replay) {  // captured anew each time, updated in place
        cuda.run_as_graph([&] { step(d.device); });
        CHECK(to_host(device_backend(), d.device) == to_host(device_backend(), c.device));
    }
    CHECK_THROWS_WITH(cuda.run_as_graph([&] {
        gelu(cuda, a.device, a.device);
        throw ArgumentError("thrown inside the capture");
    }), "thrown inside the capture");
    cuda.run_as_graph([&] { step(d.device); });
    CHECK(to_host(device_backend(), d.device) == to_host(device_backend(), c.device));
}

TEST_CASE("cuda shape errors are caught before any launch", "[cuda]") {
    Pair<dyn, dyn> a(16, 3, 5), w(17, 4, 6), c(18, 3, 4);
    CHECK_THROWS_AS(gemm(device_backend(), a.device, w.device, c.device), ShapeError);
}

TEST_CASE("cuda argmax_rows equals the CPU's, ties and NaN / infinity rows included", "[cuda][argmax]") {
    const std::size_t cols = GENERATE(1u, 255u, 50257u);
    Pair<dyn, dyn> logits(32, 6, cols);
    std::vector<float> values = to_host(logits.host);
    const float inf = INFINITY;
    if (cols > 1) {
        values[1 * cols + cols - 1] = values[1 * cols] = 100.0f;  // a tie: the lowest column wins
        values[2 * cols + cols / 2] = NAN;
        values[3 * cols + cols - 1] = inf;
        for (std::size_t c = 0; c < cols; ++c) values[4 * cols + c] = -inf;
    }
    copy_from_host(std::span<const float>(values), logits.host);
    copy_from_host(device_backend(), std::span<const float>(values), logits.device);
    std::vector<std::int32_t> want(6, 99), got(6, 99);
    host_backend().argmax_rows(logits.host.view(), want);
    device_backend().argmax_rows(logits.device.view(), got);
    CHECK(got == want);
    if (cols > 1) CHECK(want[1] == 0);
}

// The contract of backend.hpp, on a GPU: a step may not allocate, and the backend's stream is
// independent of the legacy default stream, so another thread's synchronous copies while a
// step is being captured neither break the capture nor race it.
TEST_CASE("cuda refuses an allocation inside a captured step, naming it", "[cuda][contract]") {
    Cuda& cuda = device_backend();
    CHECK_THROWS_WITH(cuda.run_as_graph([&] { Tensor<float, Extents<dyn>, Cuda> scratch(1000); }),
                      Catch::Contains("4000 bytes allocated inside a captured step"));
    Pair<dyn> x(33, 1000);
    cuda.run_as_graph([&] { gelu(cuda, x.device, x.device); });  // the backend still captures
    cuda.synchronize();
}

TEST_CASE("cuda captures a step while another thread copies on the legacy stream", "[cuda][contract]") {
    Pair<dyn, dyn> a(34, 1, 768), w(35, 3072, 768), c(36, 1, 3072), d(37, 1, 3072);
    Pair<dyn> bias(38, 3072);
    Cuda& cuda = device_backend();
    gemm(cuda, a.device, w.device, bias.device, c.device);
    const auto want = to_host(cuda, c.device);
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::thread other([&] {  // pageable cudaMemcpy: the legacy default stream
        float* scratch = nullptr;
        if (cudaMalloc(&scratch, 1 << 20) != cudaSuccess) return;
        std::vector<float> host(1 << 18, 1.0f);
        for (int i = 0; i < 10000 && !stop; ++i) {
            if (cudaMemcpy(scratch, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) ++failures;
        }
        cudaFree(scratch);
    });
    for (int replay = 0; replay < 200; ++replay) {
        cuda.run_as_graph([&] { gemm(cuda, a.device, w.device, bias.device, d.device); });
        CHECK(to_host(cuda, d.device) == want);
    }
    stop = true;
    other.join();
    CHECK(failures == 0);
}

TEST_CASE("cuda operations leave the thread's current device and stream as they found them", "[cuda][contract]") {
    Cuda& cuda = device_backend();
    Pair<dyn> x(39, 64);
    int before = -1, after = -2;
    REQUIRE(cudaGetDevice(&before) == cudaSuccess);
    gelu(cuda, x.device, x.device);
    REQUIRE(cudaGetDevice(&after) == cudaSuccess);
    CHECK(after == before);
    CHECK(gpu::Activation::stream() == nullptr);
    {
        const auto on = cuda.activate();
        CHECK(gpu::Activation::stream() == cuda.stream());
        Tensor<float, Extents<dyn>, Cuda> filled_on_the_stream(64);
        CHECK(to_host(cuda, filled_on_the_stream) == std::vector<float>(64, 0.0f));
    }
    CHECK(gpu::Activation::stream() == nullptr);
    CHECK_THROWS_WITH(Cuda(cuda_device_count()), Catch::Contains("does not exist"));
}
