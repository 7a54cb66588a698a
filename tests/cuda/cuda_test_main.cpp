// Catch2's runner for the CUDA test executables, compiled once by the host compiler: under nvcc,
// Catch2's implementation cost each .cu unit about as much as its tests. Without a device every
// test of the executable is skipped: exit code 77, which ctest reports as skipped, never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>

int main(int argc, char** argv) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no CUDA device: skipping the tests of %s\n", argc > 0 ? argv[0] : "this executable");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
