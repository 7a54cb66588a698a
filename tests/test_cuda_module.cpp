// tessera::cuda as programs link it for a --backend flag: nothing of CUDA (the runtime, cuBLAS,
// the backend's module) is in the process until the CUDA backend is asked for; then the module
// loads and its errors reach the caller as tessera's own exception types. Without a GPU the
// module still loads and says "no CUDA device". TESSERA_TEST_CUDA_MODULE is 1 in a CUDA build
// (a loader and its module), 0 where tessera::cuda is the stub that says CUDA was not built.
// The module loads once per process: each case needs its own (as ctest runs them).
#include <catch2/catch.hpp>

#include <stdlib.h>  // ::setenv (POSIX)
#include <fstream>
#include <iterator>
#include <string>

#include <tessera/core/error.hpp>
#include <tessera/models/open_gpt2_cuda.hpp>

#include "skip.hpp"

namespace {

constexpr bool cuda_module_built = TESSERA_TEST_CUDA_MODULE;

std::string mapped_files() {
    std::ifstream maps("/proc/self/maps");
    return {std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>()};
}
bool mapped(const std::string& name) { return mapped_files().find(name) != std::string::npos; }

}  // namespace

TEST_CASE("linking tessera::cuda maps no CUDA library until the CUDA backend is asked for", "[cuda-module]") {
    REQUIRE_FALSE(mapped("libcublas"));
    REQUIRE_FALSE(mapped("libcudart"));
    REQUIRE_FALSE(mapped("libtessera_cuda_gpt2"));
    const int devices = tessera::cuda_devices();
    CHECK(devices >= 0);
    CHECK(mapped("libtessera_cuda_gpt2") == cuda_module_built);
    CHECK(mapped("libcudart") == cuda_module_built);
}

TEST_CASE("open_gpt2_cuda's errors cross the module as tessera's exception types", "[cuda-module]") {
    if (tessera::cuda_devices() > 0) {  // a GPU: the checkpoint is read, and is missing
        REQUIRE_THROWS_AS(tessera::open_gpt2_cuda("/nonexistent/model"), tessera::FormatError);
        return;
    }
    REQUIRE_THROWS_AS(tessera::open_gpt2_cuda("/nonexistent/model"), tessera::BackendError);
    REQUIRE_THROWS_WITH(tessera::open_gpt2_cuda("/nonexistent/model"), Catch::Contains("no CUDA device"));
}

TEST_CASE("a CUDA module that cannot be loaded is a BackendError naming it", "[cuda-module]") {
    if (!cuda_module_built) {
        tessera::test::skip("built without CUDA: the stub loads nothing");
        return;
    }
    ::setenv("TESSERA_CUDA_MODULE", "/nonexistent/libtessera_cuda_gpt2.so", 1);
    REQUIRE_THROWS_AS(tessera::open_gpt2_cuda("/nonexistent/model"), tessera::BackendError);
    REQUIRE_THROWS_WITH(tessera::open_gpt2_cuda("/nonexistent/model"),
                        Catch::Contains("could not be loaded") && Catch::Contains("/nonexistent/libtessera_cuda_gpt2.so"));
    CHECK(tessera::cuda_devices() == 0);
}

TEST_CASE("a shared library that is not tessera's CUDA module is refused", "[cuda-module]") {
    if (!cuda_module_built) {
        tessera::test::skip("built without CUDA: the stub loads nothing");
        return;
    }
    ::setenv("TESSERA_CUDA_MODULE", "libm.so.6", 1);  // loads, but has none of the entry points
    REQUIRE_THROWS_WITH(tessera::open_gpt2_cuda("/nonexistent/model"),
                        Catch::Contains("libm.so.6") && Catch::Contains("lacks its entry points"));
    CHECK(tessera::cuda_devices() == 0);
}
