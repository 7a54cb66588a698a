#pragma once
// Counts heap allocations (every operator new, aligned ones included) while counting is on:
// tests/allocation_counter.cpp replaces the global allocation functions of the test program.
#include <atomic>

namespace tessera::test {
inline std::atomic<bool> counting_allocations{false};
inline std::atomic<long> allocations{0};
}  // namespace tessera::test
