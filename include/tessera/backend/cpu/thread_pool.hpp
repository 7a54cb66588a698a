#pragma once
// A fixed set of worker threads that run one job at a time, the calling thread taking part.
// Jobs are split statically (one contiguous range per thread): the kernels it serves are
// uniform, and a static split keeps each thread on the same weight rows every call, which
// keeps those rows warm in that core's cache. Dispatch allocates nothing. Between jobs, threads
// spin briefly before sleeping: a decode step is ~100 back-to-back jobs of ~50 µs, and a
// futex wake-up per job would cost a good part of that. One job at a time; not reentrant.
#include <algorithm>  // std::min, std::max
#include <exception>  // std::exception
#include <string>     // std::to_string
#include <atomic>     // std::atomic
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint64_t
#include <thread>     // std::jthread
#include <type_traits>  // std::is_invocable_v
#include <vector>     // std::vector

#include <tessera/core/error.hpp>  // ArgumentError, Error

namespace tessera::cpu {

class ThreadPool {
public:
    // `threads` counts the calling thread: ThreadPool(1) runs everything inline.
    // More than max_threads() (4 per hardware thread) is refused: past the cores, spinning
    // workers only take turns, and thousands of threads exhaust memory.
    explicit ThreadPool(unsigned threads) : threads_(threads) {
        if (threads == 0 || threads > max_threads()) {
            throw ArgumentError("threads must be between 1 and " + std::to_string(max_threads()) + " (4 per hardware thread), got " +
                                std::to_string(threads));
        }
        try {
            workers_.reserve(threads - 1);
            // Workers start from generation 0 whenever they get scheduled, so no job is missed.
            for (unsigned t = 1; t < threads; ++t) workers_.emplace_back([this, t] { work(t, 0); });
        } catch (const std::exception& e) {
            // The destructor will not run: stop the workers already started, so that their
            // joins (in workers_'s destructor) return, and say what failed.
            stop_workers();
            throw Error("cannot start " + std::to_string(threads) + " threads (" + std::to_string(workers_.size() + 1) +
                        " started): " + e.what());
        }
    }
    static unsigned max_threads() noexcept { return 4 * std::max(1u, std::thread::hardware_concurrency()); }
    ~ThreadPool() { stop_workers(); }
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned size() const noexcept { return threads_; }

    // Calls f(thread, threads) once on every thread and returns when all have finished.
    // f must not throw.
    template <class F>
    void run(F&& f) {
        if (threads_ == 1) {
            f(0u, 1u);
            return;
        }
        job_ = &f;
        call_ = [](void* job, unsigned t, unsigned n) { (*static_cast<F*>(job))(t, n); };
        pending_.store(threads_ - 1);
        generation_.fetch_add(1);
        generation_.notify_all();
        f(0u, threads_);
        spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
        for (unsigned left = pending_.load(); left != 0; left = pending_.load()) pending_.wait(left);
    }

    // Calls f(begin, end) -- or f(begin, end, thread) -- on disjoint ranges covering [0, n);
    // each range but the last is a multiple of `grain` long, and `thread` (< size()) is unique
    // per range, for per-thread scratch. Runs inline when n is too small to be worth splitting.
    template <class F>
    void parallel_for(std::size_t n, std::size_t grain, F&& f) {
        const auto call = [&f](std::size_t begin, std::size_t end, unsigned t) {
            if constexpr (std::is_invocable_v<F&, std::size_t, std::size_t, unsigned>) {
                f(begin, end, t);
            } else {
                f(begin, end);
            }
        };
        const std::size_t chunks = (n + grain - 1) / grain;
        if (threads_ == 1 || chunks < 2) {
            if (n != 0) call(0, n, 0u);
            return;
        }
        run([&](unsigned t, unsigned threads) {
            const std::size_t used = std::min<std::size_t>(threads, chunks);
            if (t >= used) return;
            const std::size_t begin = chunks * t / used * grain;
            const std::size_t end = std::min(n, chunks * (t + 1) / used * grain);
            if (begin < end) call(begin, end, t);
        });
    }

private:
    void stop_workers() noexcept {
        stop_.store(true);
        generation_.fetch_add(1);
        generation_.notify_all();
    }

    // Polls `done` for a while (about 50 µs) before the caller falls back to a blocking wait.
    template <class Done>
    static void spin_until(Done done) {
        for (int i = 0; i < 20000 && !done(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }

    void work(unsigned t, std::uint64_t seen) {
        for (;;) {
            spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
            generation_.wait(seen);
            seen = generation_.load();
            if (stop_.load()) return;
            call_(job_, t, threads_);
            if (pending_.fetch_sub(1) == 1) pending_.notify_one();
        }
    }

    unsigned threads_;
    void* job_ = nullptr;
    void (*call_)(void*, unsigned, unsigned) = nullptr;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<unsigned> pending_{0};
    std::atomic<bool> stop_{false};
    std::vector<std::jthread> workers_;  // last member: joined before the atomics above die
};

}  // namespace tessera::cpu
