// ThreadPool: every index visited exactly once, ranges honour the grain, thread ids unique.
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <tessera/backend/cpu/thread_pool.hpp>
#include <tessera/core/error.hpp>

#include "child_process.hpp"

using tessera::cpu::ThreadPool;

TEST_CASE("parallel_for covers 0..n-1 exactly once", "[thread_pool]") {
    const unsigned threads = GENERATE(1u, 2u, 3u, 5u);
    const std::size_t n = GENERATE(0u, 1u, 7u, 64u, 1000u, 4097u);
    const std::size_t grain = GENERATE(1u, 16u, 64u);
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(n);
    std::vector<std::atomic<bool>> busy(threads);  // a thread id is never in two ranges at once
    std::atomic<int> bad_ranges{0};  // Catch2 assertions are not thread-safe: count, check after
    pool.parallel_for(n, grain, [&](std::size_t begin, std::size_t end, unsigned t) {
        if (t >= threads || (end != n && (end - begin) % grain != 0) || busy[t].exchange(true)) {
            bad_ranges++;
            return;
        }
        for (std::size_t i = begin; i < end; ++i) hits[i]++;
        busy[t] = false;
    });
    REQUIRE(bad_ranges == 0);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i] == 1);
}

// A thread that stalls (descheduled by the OS, here: asleep) holds back only the range it is
// in: the others take over the ranges it has not started.
TEST_CASE("A stalled thread's unstarted ranges are taken over by the others", "[thread_pool]") {
    ThreadPool pool(2);
    std::atomic<int> by_caller{0}, ranges{0};
    std::atomic<bool> slept{false};
    pool.parallel_for(8, 1, [&](std::size_t, std::size_t, unsigned t) {
        ranges++;
        if (t == 0) {
            by_caller++;
        } else if (!slept.exchange(true)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    });
    CHECK(ranges == 8);
    CHECK(by_caller >= 7);  // a static split would leave the worker its 4 ranges
}

TEST_CASE("A pool runs many jobs back to back and shuts down cleanly", "[thread_pool]") {
    for (int round = 0; round < 20; ++round) {
        ThreadPool pool(3);
        std::atomic<long> sum{0};
        for (int job = 0; job < 200; ++job) {
            pool.parallel_for(300, 1, [&](std::size_t begin, std::size_t end) { sum += static_cast<long>(end - begin); });
        }
        REQUIRE(sum == 200 * 300);
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

// A worker that finishes the last task of a job keeps scanning the other threads' blocks while
// the caller already publishes the next job. Jobs of alternately 2 and 20 tasks give that
// worker a stale claim that the next job's larger block would accept, and more threads than
// cores let the caller be descheduled in the middle of publishing: each task must still run
// exactly once per job (a task run twice counted one too many, and the caller, waiting for the
// exact count, hung: seen in a batched benchmark). In a child with an alarm, so that a hang
// fails instead of blocking the suite.
TEST_CASE("Back-to-back jobs of different sizes run each task exactly once", "[thread_pool]") {
    const int code = tessera::test::exit_code_with_address_space_headroom(std::size_t{1} << 30, 60, [] {
        ThreadPool pool(5);
        std::vector<std::atomic<int>> hits(20);
        for (int job = 0; job < 200000; ++job) {
            const std::size_t n = job % 2 ? 20 : 2;
            for (std::size_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
            pool.parallel_for(n, 1, [&](std::size_t begin, std::size_t end) {
                for (std::size_t i = begin; i < end; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
            });
            for (std::size_t i = 0; i < n; ++i) {
                if (hits[i].load() != 1) return 1;
            }
        }
        return 0;
    });
    CHECK(code == 0);  // 1: a task ran twice or not at all; -1: hung (the alarm ended it)
}
