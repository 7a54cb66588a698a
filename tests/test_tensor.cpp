// Tensor and TensorView: ownership, row-major indexing, conversions, transfers, concepts; the
// large-page heap under the CPU backend's buffers.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/tessera.hpp>

#include "skip.hpp"

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

namespace {

// The line of /proc/self/smaps that starts with `field` (e.g. "Rss:", "VmFlags:") in the entry
// of the mapping that holds `address`; empty if none.
std::string mapping_field(const void* address, const std::string& field) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t begin = 0, end = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) inside = begin <= at && at < end;
        else if (inside && line.rfind(field, 0) == 0) return line;
    }
    return {};
}

// Resident kilobytes of the mapping that holds `address` (smaps' "Rss:").
long resident_kb(const void* address) {
    const std::string line = mapping_field(address, "Rss:");
    return line.empty() ? -1 : std::stol(line.substr(4));
}

}  // namespace

TEST_CASE("LargePageHeap hands out aligned, disjoint blocks and merges them when freed", "[tensor]") {
    if (!cpu::large_pages_possible) return test::skip("large pages are not used in this build (AddressSanitizer, or not Linux)");
    cpu::LargePageHeap heap;
    constexpr std::size_t kb = 1024, mb = 1024 * kb, region = cpu::LargePageHeap::region;
    const auto at = [](void* p) { return reinterpret_cast<std::uintptr_t>(p); };  // (Catch prints a char* as a string)
    auto* a = static_cast<char*>(heap.allocate(100 * kb));
    auto* b = static_cast<char*>(heap.allocate(3 * mb + 1));
    auto* c = static_cast<char*>(heap.allocate(70 * kb));
    CHECK(heap.mapped_bytes() == region);  // all three in the first region
    for (char* p : {a, b, c}) CHECK(at(p) % 64 == 0);
    CHECK(at(a) % cpu::LargePageHeap::page == 0);  // a region's start
    CHECK(at(b) >= at(a) + 100 * kb);
    CHECK(at(c) >= at(b) + 3 * mb + 1);
    std::memset(a, 1, 100 * kb);
    std::memset(b, 2, 3 * mb + 1);
    std::memset(c, 3, 70 * kb);
    CHECK(a[100 * kb - 1] == 1);
    CHECK(c[0] == 3);
    heap.deallocate(b, 3 * mb + 1);
    CHECK(at(heap.allocate(mb)) == at(b));  // first fit: b's block, before c's
    auto* big = static_cast<char*>(heap.allocate(100 * mb));  // more than a region: one of its own
    CHECK(heap.mapped_bytes() == region + 2 * region);
    std::memset(big, 4, 100 * mb);
    CHECK(big[100 * mb - 1] == 4);
    const long touched = resident_kb(big);
    CHECK(touched >= 100 * 1024);
    heap.deallocate(a, 100 * kb);
    heap.deallocate(c, 70 * kb);
    heap.deallocate(b, mb);
    heap.allocate(region);  // the first region's blocks merged: a whole region's block needs no new one
    CHECK(heap.mapped_bytes() == 3 * region);
    heap.deallocate(big, 100 * mb);  // its pages go back to the system
    CHECK(resident_kb(big) < touched - 90 * 1024);
}

TEST_CASE("Buffers from 64 KB on are in memory marked for 2 MB pages", "[tensor]") {
    if (!cpu::large_pages_possible) return test::skip("large pages are not used in this build (AddressSanitizer, or not Linux)");
    if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) return test::skip("this kernel has no transparent huge pages");
    Tensor<float, Extents<dyn>, Cpu> weights(16 * 1024);  // 64 KB
    // VmFlags "hg": madvise(MADV_HUGEPAGE) was asked for (the kernel may still decline a page).
    const std::string flags = mapping_field(weights.data(), "VmFlags:");
    REQUIRE(!flags.empty());
    CHECK(flags.find(" hg") != std::string::npos);
}
