// ThreadPool: every index visited exactly once, ranges honour the grain, thread ids unique.
#include <catch2/catch.hpp>
#include <atomic>
#include <string>
#include <vector>

#include <tessera/backend/cpu/thread_pool.hpp>
#include <tessera/core/error.hpp>

#include "child_process.hpp"

using tessera::cpu::ThreadPool;

TEST_CASE("parallel_for covers [0, n) exactly once", "[thread_pool]") {
    const unsigned threads = GENERATE(1u, 2u, 3u, 5u);
    const std::size_t n = GENERATE(0u, 1u, 7u, 64u, 1000u, 4097u);
    const std::size_t grain = GENERATE(1u, 16u, 64u);
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(n);
    std::vector<std::atomic<int>> thread_ranges(threads);
    std::atomic<int> bad_ranges{0};  // Catch2 assertions are not thread-safe: count, check after
    pool.parallel_for(n, grain, [&](std::size_t begin, std::size_t end, unsigned t) {
        if (t >= threads || (end != n && (end - begin) % grain != 0)) {
            bad_ranges++;
            return;
        }
        thread_ranges[t]++;
        for (std::size_t i = begin; i < end; ++i) hits[i]++;
    });
    REQUIRE(bad_ranges == 0);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i] == 1);
    for (unsigned t = 0; t < threads; ++t) REQUIRE(thread_ranges[t] <= 1);
}

TEST_CASE("A pool runs many jobs back to back and shuts down cleanly", "[thread_pool]") {
    for (int round = 0; round < 20; ++round) {
        ThreadPool pool(3);
        std::atomic<long> sum{0};
        for (int job = 0; job < 200; ++job) {
            pool.run([&](unsigned t, unsigned threads) { sum += (threads == 3) ? t + 1 : 1000; });
        }
        REQUIRE(sum == 200 * (1 + 2 + 3));
    }
}

TEST_CASE("Thread counts beyond the machine's bound are refused by name", "[thread_pool]") {
    CHECK_THROWS_WITH(ThreadPool(0), Catch::Contains("threads must be between 1 and"));
    CHECK_THROWS_WITH(ThreadPool(ThreadPool::max_threads() + 1), Catch::Contains("threads must be between 1 and"));
    CHECK_THROWS_AS(ThreadPool(4294967295u), tessera::ArgumentError);
}

// When a worker cannot be created (here: the address space is capped so that thread stacks
// run out), the constructor throws and the workers already started are stopped and joined,
// instead of the process hanging in their joins.
TEST_CASE("A pool whose threads cannot all start throws instead of hanging", "[thread_pool]") {
    const int code = tessera::test::exit_code_with_address_space_headroom(12 << 20, 20, [] {  // about one 8 MB stack
        try {
            ThreadPool pool(ThreadPool::max_threads());
        } catch (const tessera::Error& e) {
            return std::string(e.what()).find("cannot start") != std::string::npos ? 0 : 2;
        }
        return 4;  // every thread started: the cap did not bite
    });
    CHECK(code == 0);  // -1: killed by the alarm (a hang) or a crash
}
