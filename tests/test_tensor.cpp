// Tensor and TensorView: ownership, row-major indexing, conversions, transfers, concepts.
#include <catch2/catch.hpp>
#include <numeric>
#include <type_traits>
#include <vector>

#include <tessera/tessera.hpp>

using namespace tessera;

TEST_CASE("Tensor owns zeroed, aligned, row-major storage", "[tensor]") {
    Tensor<float, Extents<dyn, 5>, Cpu> t(3);
    REQUIRE(t.size() == 15);
    CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
    for (std::size_t i = 0; i < t.size(); ++i) CHECK(t.data()[i] == 0.0f);
    t(1, 2) = 7.0f;
    CHECK(t.data()[1 * 5 + 2] == 7.0f);

    Tensor<float, Extents<2, 3, 4>, Cpu> s;
    s(1, 2, 3) = 1.0f;
    CHECK(s.data()[1 * 12 + 2 * 4 + 3] == 1.0f);
}

TEST_CASE("Static extents take no space in a view", "[tensor]") {
    STATIC_REQUIRE(sizeof(TensorView<float, Extents<3, 4>, Cpu>) == sizeof(float*));
    STATIC_REQUIRE(sizeof(TensorView<float, Extents<dyn, 4>, Cpu>) == sizeof(float*) + sizeof(std::size_t));
}

TEST_CASE("Tensor is move-only and moves its buffer", "[tensor]") {
    STATIC_REQUIRE(!std::is_copy_constructible_v<Tensor<float, Extents<4>, Cpu>>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<Tensor<float, Extents<4>, Cpu>>);
    Tensor<float, Extents<dyn>, Cpu> a(4);
    a(2) = 3.0f;
    const float* p = a.data();
    Tensor<float, Extents<dyn>, Cpu> b(std::move(a));
    CHECK(b.data() == p);
    CHECK(b(2) == 3.0f);
}

TEST_CASE("Views convert to const and to more dynamic extents", "[tensor]") {
    Tensor<float, Extents<4, 8>, Cpu> t;
    TensorView<float, Extents<4, 8>, Cpu> v = t;
    MatrixView<const float, Cpu> d = v;  // implicit: adds const, forgets static sizes
    CHECK(d.extent(0) == 4);
    CHECK(d.extent(1) == 8);
    CHECK(d.data() == t.data());
    STATIC_REQUIRE(!std::is_convertible_v<MatrixView<const float, Cpu>, MatrixView<float, Cpu>>);
    STATIC_REQUIRE(!std::is_convertible_v<MatrixView<float, Cpu>, TensorView<float, Extents<4, 8>, Cpu>>);
    const TensorView<float, Extents<4, 8>, Cpu> back(MatrixView<float, Cpu>(t.data(), DynExtents<2>(4, 8)));
    CHECK(back.data() == t.data());
    CHECK_THROWS_AS((TensorView<float, Extents<4, 8>, Cpu>(MatrixView<float, Cpu>(t.data(), DynExtents<2>(8, 4)))),
                    ShapeError);
}

TEST_CASE("rows() and flat() select contiguous parts", "[tensor]") {
    Tensor<float, Extents<dyn, 3>, Cpu> t(4);
    std::iota(t.data(), t.data() + t.size(), 0.0f);
    const auto r = t.view().rows(1, 2);
    CHECK(r.extent(0) == 2);
    CHECK(r(0, 0) == 3.0f);
    CHECK(r(1, 2) == 8.0f);
    CHECK(t.view().flat().extent(0) == 12);
    CHECK_THROWS_WITH(t.view().rows(3, 2), Catch::Contains("outside the 4 rows"));
}

TEST_CASE("to_host and copy_from_host round-trip", "[tensor]") {
    Tensor<float, Extents<dyn, 2>, Cpu> t(3);
    const std::vector<float> values{1, 2, 3, 4, 5, 6};
    copy_from_host(std::span<const float>(values), t);
    CHECK(to_host(t) == values);
    CHECK_THROWS_WITH(copy_from_host(std::span<const float>(values.data(), 5), t),
                      Catch::Contains("5 host values for a tensor of 6 elements"));
}

TEST_CASE("convert narrows and widens storage types", "[tensor]") {
    Tensor<float, Extents<3>, Cpu> f;
    f(0) = 1.0f;
    f(1) = -2.5f;
    f(2) = 1.0f + 1.0f / 512.0f;  // between two bf16 values: rounds to even (1.0)
    Tensor<bf16, Extents<3>, Cpu> b;
    convert(f, b);
    Tensor<float, Extents<3>, Cpu> back;
    convert(b, back);
    CHECK(back(0) == 1.0f);
    CHECK(back(1) == -2.5f);
    CHECK(back(2) == 1.0f);
}

TEST_CASE("Concepts describe tensors and backends", "[tensor]") {
    STATIC_REQUIRE(Backend<Cpu>);
    STATIC_REQUIRE(StorageBackend<Cpu>);
    STATIC_REQUIRE(TensorLike<Tensor<float, Extents<4>, Cpu>>);
    STATIC_REQUIRE(TensorLike<const Tensor<float, Extents<4>, Cpu>&>);
    STATIC_REQUIRE(TensorLike<VectorView<const float, Cpu>>);
    STATIC_REQUIRE(!TensorLike<std::vector<float>>);
    STATIC_REQUIRE(!StorageBackend<int>);
}

TEST_CASE("Cpu rejects zero threads", "[tensor]") {
    CHECK_THROWS_AS(Cpu(0), ArgumentError);
    Cpu cpu(1);
    cpu.set_threads(3);
    CHECK(cpu.threads() == 3);
}
