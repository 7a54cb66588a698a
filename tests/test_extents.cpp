// Extents: static and dynamic dimensions, storage, compatibility and checked conversion.
#include <catch2/catch.hpp>
#include <type_traits>

#include <tessera/core/extents.hpp>

using tessera::dyn;
using tessera::Extents;

TEST_CASE("Extents count ranks and store only dynamic sizes", "[extents]") {
    STATIC_REQUIRE(Extents<768, dyn>::rank() == 2);
    STATIC_REQUIRE(Extents<768, dyn>::rank_dynamic() == 1);
    STATIC_REQUIRE(Extents<3, 4>::is_static());
    STATIC_REQUIRE(std::is_empty_v<Extents<3, 4>>);
    STATIC_REQUIRE(sizeof(Extents<dyn, 768, dyn>) == 2 * sizeof(std::size_t));
    STATIC_REQUIRE(Extents<3, 4>{}.size() == 12);
    STATIC_REQUIRE(Extents<>{}.size() == 1);

    const Extents<dyn, 768, dyn> e(5, 2);
    CHECK(e.extent(0) == 5);
    CHECK(e.extent(1) == 768);
    CHECK(e.extent(2) == 2);
    CHECK(e.size() == 5 * 768 * 2);
    CHECK(Extents<dyn, 768, dyn>::static_extent(0) == dyn);
    CHECK(Extents<dyn, 768, dyn>::static_extent(1) == 768);
    CHECK(Extents<dyn>{}.extent(0) == 0);  // dynamic sizes default to 0, as std::extents
}

TEST_CASE("Static extents convert implicitly to dynamic ones", "[extents]") {
    STATIC_REQUIRE(std::is_convertible_v<Extents<3, 4>, Extents<dyn, dyn>>);
    STATIC_REQUIRE(std::is_convertible_v<Extents<3, 4>, Extents<3, dyn>>);
    const Extents<dyn, dyn> d = Extents<3, 4>{};
    CHECK(d.extent(0) == 3);
    CHECK(d.extent(1) == 4);
}

TEST_CASE("Dynamic to static conversion is explicit and checked", "[extents]") {
    STATIC_REQUIRE(!std::is_convertible_v<Extents<dyn, 4>, Extents<3, 4>>);
    STATIC_REQUIRE(std::is_constructible_v<Extents<3, 4>, Extents<dyn, 4>>);
    STATIC_REQUIRE(!std::is_constructible_v<Extents<3, 4>, Extents<dyn, dyn, dyn>>);  // rank differs
    CHECK(Extents<3, 4>(Extents<dyn, 4>(3)).size() == 12);
    CHECK_THROWS_AS((Extents<3, 4>(Extents<dyn, 4>(5))), tessera::ShapeError);
    CHECK_THROWS_WITH((Extents<3, 4>(Extents<dyn, 4>(5))),
                      Catch::Contains("dimension 0 is 5") && Catch::Contains("fixes it at 3"));
}

TEST_CASE("Compatibility of extents at compile time", "[extents]") {
    using tessera::dims_may_match;
    using tessera::extents_may_match;
    STATIC_REQUIRE(dims_may_match<Extents<dyn, 768>, 1, Extents<3072, 768>, 1>);
    STATIC_REQUIRE(dims_may_match<Extents<dyn, dyn>, 1, Extents<3072, 768>, 0>);
    STATIC_REQUIRE(!dims_may_match<Extents<dyn, 768>, 1, Extents<3072, 512>, 1>);
    STATIC_REQUIRE(extents_may_match<Extents<dyn, 768>, Extents<4, dyn>>);
    STATIC_REQUIRE(!extents_may_match<Extents<dyn, 768>, Extents<4, 769>>);
    STATIC_REQUIRE(!extents_may_match<Extents<dyn, 768>, Extents<dyn>>);
}

TEST_CASE("Extents compare by their sizes", "[extents]") {
    CHECK(Extents<3, 4>{} == Extents<dyn, dyn>(3, 4));
    CHECK_FALSE(Extents<3, 4>{} == Extents<dyn, dyn>(4, 3));
    CHECK_FALSE(Extents<3, 4>{} == Extents<12>{});
    CHECK(Extents<dyn, dyn>::from_sizes({7, 9}).extent(1) == 9);
}

TEST_CASE("check_dim names the operation and both operands", "[extents]") {
    CHECK_NOTHROW(tessera::check_dim(3, 3, "op", "x", "y"));
    CHECK_THROWS_WITH(tessera::check_dim(3, 4, "gemm", "a's column count", "w's column count"),
                      "gemm: a's column count is 3 but w's column count is 4");
}
