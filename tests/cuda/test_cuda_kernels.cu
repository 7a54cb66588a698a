// Every CUDA kernel against the CPU backend on the same inputs, with a normalised error bound
// (as llama.cpp's test-backend-ops): NMSE = Σ(gpu - cpu)² / Σ cpu² <= 1e-10. Both compute in
// fp32 with different summation orders, which gives NMSE ~1e-14; a wrong index or a missing
// term gives ~1e-3 or worse. Without a device, every test is skipped (exit code 77).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <span>
#include <vector>

#include <tessera/backend/cuda/cuda.cuh>
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

// The same random values on both backends.
template <std::size_t... Es>
struct Pair {
    Tensor<float, Extents<Es...>, Cpu> host;
    Tensor<float, Extents<Es...>, Cuda> device;
    template <class... Ds>
    Pair(std::uint64_t seed, Ds... sizes) : host(sizes...), device(sizes...) {
        const auto v = test::random_values(host.size(), seed);
        copy_from_host(std::span<const float>(v), host);
        copy_from_host(std::span<const float>(v), device);
    }
};

Cpu& host_backend() {
    static Cpu instance(2);
    return instance;
}
Cuda& device_backend() {
    static Cuda instance;
    return instance;
}

}  // namespace

// m <= 8: the skinny kernel (vector loads when k % 4 == 0), m > 8: cuBLAS + the bias kernel.
TEST_CASE("cuda gemm and gemv match the CPU", "[cuda]") {
    const std::size_t m = GENERATE(1u, 3u, 8u, 9u, 130u);
    const std::size_t n = GENERATE(1u, 17u, 769u);
    const std::size_t k = GENERATE(1u, 3u, 768u, 769u);
    Pair<dyn, dyn> a(1, m, k), w(2, n, k), c(3, m, n);
    Pair<dyn> bias(4, n), x(5, k), y(6, n);
    gemm(host_backend(), a.host, w.host, bias.host, c.host);
    gemm(device_backend(), a.device, w.device, bias.device, c.device);
    CHECK(nmse(to_host(c.device), to_host(c.host)) <= max_nmse);
    gemv(host_backend(), w.host, x.host, bias.host, y.host);
    gemv(device_backend(), w.device, x.device, bias.device, y.device);
    CHECK(nmse(to_host(y.device), to_host(y.host)) <= max_nmse);
    gemv(host_backend(), w.host, x.host, y.host);
    gemv(device_backend(), w.device, x.device, y.device);
    CHECK(nmse(to_host(y.device), to_host(y.host)) <= max_nmse);
}

TEST_CASE("cuda element-wise, row and attention kernels match the CPU", "[cuda]") {
    const std::size_t rows = GENERATE(1u, 3u, 17u);
    const std::size_t cols = GENERATE(1u, 17u, 769u, 50257u);
    Pair<dyn, dyn> x(7, rows, cols), y(8, rows, cols), out(9, rows, cols);
    Pair<dyn> gamma(10, cols), beta(11, cols);
    add(host_backend(), x.host, y.host, out.host);
    add(device_backend(), x.device, y.device, out.device);
    CHECK(nmse(to_host(out.device), to_host(out.host)) <= max_nmse);
    gelu(host_backend(), x.host, out.host);
    gelu(device_backend(), x.device, out.device);
    CHECK(nmse(to_host(out.device), to_host(out.host)) <= max_nmse);
    layer_norm(host_backend(), x.host, gamma.host, beta.host, 1e-5f, out.host);
    layer_norm(device_backend(), x.device, gamma.device, beta.device, 1e-5f, out.device);
    CHECK(nmse(to_host(out.device), to_host(out.host)) <= max_nmse);
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
    CHECK(nmse(to_host(out.device), to_host(out.host)) <= max_nmse);
}

TEST_CASE("cuda attention in place (out = q) and over 256 head elements", "[cuda]") {
    Pair<dyn, dyn, dyn> q(19, 5, 2, 64), k(20, 9, 2, 64), v(21, 9, 2, 64), out(22, 5, 2, 64);
    causal_attention(host_backend(), q.host, k.host, v.host, out.host);
    causal_attention(device_backend(), q.device, k.device, v.device, q.device);
    CHECK(nmse(to_host(q.device), to_host(out.host)) <= max_nmse);
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
    CHECK(to_host(out.device) == to_host(out.host));
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
        CHECK(to_host(d.device) == to_host(c.device));
    }
    CHECK_THROWS_WITH(cuda.run_as_graph([&] {
        gelu(cuda, a.device, a.device);
        throw ArgumentError("thrown inside the capture");
    }), "thrown inside the capture");
    cuda.run_as_graph([&] { step(d.device); });
    CHECK(to_host(d.device) == to_host(c.device));
}

TEST_CASE("cuda shape errors are caught before any launch", "[cuda]") {
    Pair<dyn, dyn> a(16, 3, 5), w(17, 4, 6), c(18, 3, 4);
    CHECK_THROWS_AS(gemm(device_backend(), a.device, w.device, c.device), ShapeError);
}

int main(int argc, char** argv) {
    if (cuda_device_count() == 0) {
        std::printf("no CUDA device: skipping the CUDA kernel tests\n");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
