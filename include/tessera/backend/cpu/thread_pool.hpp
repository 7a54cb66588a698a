#pragma once
// A fixed set of worker threads that run one job at a time, the calling thread taking part.
// A job is split into a few tasks per thread (contiguous ranges). Each thread first takes the
// tasks of its own block, so it meets the same weight rows every call and keeps them warm in
// its cache; a thread that runs out steals the tasks another thread has not started. So a
// thread that the OS has descheduled (more threads than cores, another busy process) holds
// back only the task it is in, not the whole job. Dispatch allocates nothing. Between jobs,
// threads spin for at most ~50 µs before sleeping: a decode step is ~100 back-to-back jobs of
// ~50 µs, and a futex wake-up per job would cost a good part of that. One job at a time; not
// reentrant.
#include <algorithm>  // std::min, std::max
#include <exception>  // std::exception
#include <memory>     // std::unique_ptr
#include <string>     // std::to_string
#include <atomic>     // std::atomic
#include <chrono>     // std::chrono::steady_clock
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
            blocks_ = std::make_unique<Block[]>(threads);
            workers_.reserve(threads - 1);
            // Workers start from generation 0 whenever they get scheduled, so no job is missed.
            for (unsigned t = 1; t < threads; ++t) workers_.emplace_back([this, t] { worker(t); });
        } catch (const std::exception& e) {
            // The destructor will not run: stop the workers already started, so that their
            // joins (in workers_'s destructor) return, and say what failed.
            stop_workers();
            throw Error("cannot start " + std::to_string(threads) + " threads (" + std::to_string(workers_.size() + 1) +
                        " started): " + e.what());
        }
    }
    static unsigned max_threads() noexcept {
        return std::min(4 * std::max(1u, std::thread::hardware_concurrency()), max_tasks);  // a task per thread must fit a Block
    }
    ~ThreadPool() { stop_workers(); }
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned size() const noexcept { return threads_; }

    // Calls f(i, size()) once for every i in [0, size()), normally each on its own thread (a
    // stalled thread's call is taken over by another). f must not throw.
    template <class F>
    void run(F&& f) {
        if (threads_ == 1) return f(0u, 1u);
        const auto each = [&](unsigned i, unsigned) { f(i, threads_); };
        run(threads_, each);
    }

    // Calls f(begin, end) -- or f(begin, end, thread) -- on disjoint ranges covering [0, n);
    // each range but the last is a multiple of `grain` long, and `thread` (< size()) is the
    // thread running it: no two ranges run at once with the same `thread`, so it can index
    // per-thread scratch. Runs inline when n is too small to be worth splitting. f must not throw.
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
        // Up to tasks_per_thread tasks per thread, whole chunks each.
        const auto tasks = static_cast<unsigned>(std::min<std::size_t>({chunks, std::size_t{threads_} * tasks_per_thread, max_tasks}));
        const auto task = [&](unsigned i, unsigned thread) {
            const std::size_t begin = chunks * i / tasks * grain;
            const std::size_t end = std::min(n, chunks * (i + 1) / tasks * grain);
            if (begin < end) call(begin, end, thread);
        };
        run(tasks, task);
    }

private:
    static constexpr unsigned tasks_per_thread = 4;
    static constexpr unsigned max_tasks = 0xffff;  // a block's end and next task are 16 bits each

    // One word per thread: the job's generation (its low 32 bits) in the high half, then the
    // end of the thread's block of tasks and the next unclaimed task (16 bits each). A claim is
    // a compare-and-swap of the whole word, checked against the end in the same word: a thread
    // that wakes late for an old job can never claim a task of a newer one, nor take an old
    // claim against a newer job's end (with the end stored apart, a worker that had read the
    // old word and then the new end could run a task of the new job twice: a hang, the caller
    // waiting for an exact count).
    struct alignas(64) Block {
        std::atomic<std::uint64_t> next{0};
    };
    // Runs task(i, thread) for every i in [0, tasks) and returns when all have finished.
    template <class Task>
    void run(unsigned tasks, Task& task) {
        const std::uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
        job_ = const_cast<void*>(static_cast<const void*>(&task));  // back to Task* (const or not) in call_
        call_ = [](void* job, unsigned i, unsigned thread) { (*static_cast<Task*>(job))(i, thread); };
        tasks_ = tasks;
        done_.store(0, std::memory_order_relaxed);
        for (unsigned t = 0; t < threads_; ++t) {
            const std::uint64_t first = std::uint64_t{tasks} * t / threads_, end = std::uint64_t{tasks} * (t + 1) / threads_;
            blocks_[t].next.store(tag(generation) | end << 16 | first, std::memory_order_release);
        }
        generation_.store(generation, std::memory_order_release);
        generation_.notify_all();
        work(0, generation);
        spin_until([&] { return done_.load(std::memory_order_acquire) == tasks; });
        for (unsigned d = done_.load(); d != tasks; d = done_.load()) done_.wait(d);
    }

    static constexpr std::uint64_t low = 0xffffffffu;
    static std::uint64_t tag(std::uint64_t generation) noexcept { return generation << 32; }
    static bool claimable(std::uint64_t c, std::uint64_t generation) noexcept {
        return (c & ~low) == tag(generation) && (c & 0xffff) < ((c >> 16) & 0xffff);
    }

    // Claims and runs tasks of job `generation`: the thread's own block first, then the others'.
    void work(unsigned thread, std::uint64_t generation) {
        for (unsigned k = 0; k < threads_; ++k) {
            Block& block = blocks_[(thread + k) % threads_];
            for (std::uint64_t c = block.next.load(std::memory_order_acquire); claimable(c, generation);) {
                if (!block.next.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
                call_(job_, static_cast<unsigned>(c & 0xffff), thread);
                if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == tasks_) done_.notify_one();
                c = block.next.load(std::memory_order_acquire);
            }
        }
    }

    void stop_workers() noexcept {
        stop_.store(true);
        generation_.fetch_add(1);
        generation_.notify_all();
    }

    // Polls `done` for at most ~50 µs before the caller falls back to a blocking wait (which
    // leaves the core to a thread that has work, when there are more threads than cores).
    template <class Done>
    static void spin_until(Done done) {
        const auto start = std::chrono::steady_clock::now();
        for (unsigned i = 1; !done(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            if (i % 64 == 0 && std::chrono::steady_clock::now() - start > std::chrono::microseconds(50)) return;
        }
    }

    void worker(unsigned thread) {
        for (std::uint64_t seen = 0;;) {
            spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
            generation_.wait(seen);
            seen = generation_.load(std::memory_order_acquire);
            if (stop_.load()) return;
            work(thread, seen);
        }
    }

    unsigned threads_;
    void* job_ = nullptr;
    void (*call_)(void*, unsigned, unsigned) = nullptr;
    unsigned tasks_ = 0;
    std::unique_ptr<Block[]> blocks_;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<unsigned> done_{0};
    std::atomic<bool> stop_{false};
    std::vector<std::jthread> workers_;  // last member: joined before the atomics above die
};

}  // namespace tessera::cpu
