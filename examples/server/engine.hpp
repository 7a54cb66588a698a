#pragma once
// Engine: the one thread that owns the model. HTTP threads submit a request's choices and read
// what happens to them from the request's Channel; the engine adds them to its BatchGenerator
// between steps and steps while anything runs, so the batch (not thread-safe) is touched by one
// thread only, and a slow client never slows the others (its events wait in its channel).
//
//   HTTP thread --submit(jobs)--> incoming --(engine thread)--> BatchGenerator::add, step ...
//   HTTP thread <--Channel::wait-- text pieces and completions (pushed from step's callbacks)
#include <algorithm>           // std::find_if
#include <atomic>              // std::atomic
#include <chrono>              // std::chrono::steady_clock
#include <condition_variable>  // std::condition_variable
#include <cstddef>             // std::size_t
#include <exception>           // std::exception
#include <memory>              // std::shared_ptr
#include <mutex>               // std::mutex, std::lock_guard, std::unique_lock
#include <optional>            // std::optional
#include <string>              // std::string
#include <string_view>         // std::string_view
#include <thread>              // std::thread
#include <utility>             // std::move
#include <vector>              // std::vector

#include <tessera/generation/batch_generator.hpp>  // BatchGenerator, BatchOptions
#include <tessera/models/language_model.hpp>       // LanguageModel
#include <tessera/sampling/sampler.hpp>            // SamplingParams, make_sampler

namespace tessera::server {

using Clock = std::chrono::steady_clock;

// Why a completion cancelled by --timeout ended (the server tells clients not to retry it).
inline constexpr std::string_view timed_out = "the completion ran past the server's time limit (--timeout)";

// What happens to one choice: a piece of its text, or its end (then `done` holds it).
struct Event {
    std::size_t choice = 0;
    std::string text;
    std::optional<Completion> done;
};

// One request's events, from the engine thread to the HTTP thread that serves it. The HTTP side
// cancels through it (a client gone); the engine ends those choices at its next step.
class Channel {
public:
    void push(Event e) {
        {
            std::lock_guard lock(mutex_);
            events_.push_back(std::move(e));
        }
        arrived_.notify_one();
    }
    // What arrived, waiting up to `timeout` when nothing has.
    std::vector<Event> wait(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        arrived_.wait_for(lock, timeout, [&] { return !events_.empty(); });
        return std::exchange(events_, {});
    }
    void cancel() noexcept { cancelled_ = true; }
    bool cancelled() const noexcept { return cancelled_; }

private:
    std::mutex mutex_;
    std::condition_variable arrived_;
    std::vector<Event> events_;
    std::atomic<bool> cancelled_ = false;
};

// One choice to generate.
struct Job {
    std::vector<TokenId> prompt;
    GenerationOptions options;
    SamplingParams sampling;
    std::size_t choice = 0;  // its index in the response
    std::shared_ptr<Channel> channel;
    Clock::time_point deadline = Clock::time_point::max();  // cancelled after this
};

class Engine {
public:
    // `capacity`: choices running or waiting at most (more are refused: the server is busy).
    Engine(LanguageModel& model, const Tokenizer& tokenizer, const BatchOptions& options, std::size_t capacity)
        : batch_(model, tokenizer, options), capacity_(capacity), thread_([this] { loop(); }) {}
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    ~Engine() {
        {
            std::lock_guard lock(mutex_);
            quit_ = true;
            draining_ = true;
            grace_end_ = Clock::now();
        }
        wake_.notify_one();
        thread_.join();
    }

    // Queues a request's choices, all or none: false when they do not fit in the capacity or
    // the engine is draining (the server answers 503).
    bool submit(std::vector<Job> jobs) {
        {
            std::lock_guard lock(mutex_);
            if (draining_ || outstanding_ + jobs.size() > capacity_) return false;
            outstanding_ += jobs.size();
            for (auto& j : jobs) incoming_.push_back(std::move(j));
        }
        wake_.notify_one();
        return true;
    }

    // Takes no more work; what runs may finish until `grace` has passed, then it is cancelled.
    void drain(std::chrono::milliseconds grace) {
        {
            std::lock_guard lock(mutex_);
            draining_ = true;
            grace_end_ = Clock::now() + grace;
        }
        wake_.notify_one();
    }

    std::size_t outstanding() const {
        std::lock_guard lock(mutex_);
        return outstanding_;
    }
    std::size_t capacity() const noexcept { return capacity_; }
    const BatchOptions& options() const noexcept { return batch_.options(); }
    // As of the engine's last step: choices decoding or reading their prompt, and choices
    // waiting for a sequence (for /metrics).
    std::size_t running() const noexcept { return running_; }
    std::size_t waiting() const noexcept { return waiting_; }

private:
    struct Active {
        BatchGenerator<LanguageModel>::RequestId id;
        std::shared_ptr<Channel> channel;
        std::size_t choice;
        Clock::time_point deadline;
        std::string why;  // set once cancelled
    };

    void loop() {
        std::vector<Job> incoming;
        for (;;) {
            Clock::time_point grace_end;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return quit_ || !incoming_.empty() || !batch_.idle(); });
                if (quit_ && incoming_.empty() && batch_.idle()) return;
                incoming.swap(incoming_);
                grace_end = draining_ ? grace_end_ : Clock::time_point::max();
            }
            for (Job& job : incoming) start(std::move(job));
            incoming.clear();
            const auto now = Clock::now();
            for (Active& a : active_) {
                if (!a.why.empty()) continue;
                a.why = a.channel->cancelled() ? "the client went away"
                        : now > a.deadline     ? std::string(timed_out)
                        : now > grace_end      ? "the server is shutting down"
                                               : "";
                if (!a.why.empty()) batch_.cancel(a.id);
            }
            try {
                batch_.step();
            } catch (const std::exception& e) {  // the model failed: every running choice ends with it
                fail_all(e.what());
            }
            running_ = batch_.running();
            waiting_ = batch_.waiting();
        }
    }

    void start(Job job) {
        auto channel = job.channel;
        const std::size_t choice = job.choice;
        try {
            const auto id = batch_.add(
                std::move(job.prompt), job.options, make_sampler(job.sampling),
                [channel, choice](std::string_view piece) { channel->push({choice, std::string(piece), {}}); },
                [this, channel, choice](Completion&& c) { finish(*channel, choice, std::move(c)); });
            active_.push_back({id, std::move(channel), choice, job.deadline, {}});
        } catch (const std::exception& e) {  // the request was checked, but nothing may be lost
            Completion c;
            c.stop_reason = StopReason::error;
            c.error = e.what();
            finish(*channel, choice, std::move(c));
        }
    }

    void finish(Channel& channel, std::size_t choice, Completion&& c) {
        const auto it = std::find_if(active_.begin(), active_.end(),
                                     [&](const Active& a) { return a.channel.get() == &channel && a.choice == choice; });
        if (it != active_.end()) {
            if (c.stop_reason == StopReason::cancelled) c.error = it->why;
            active_.erase(it);
        }
        channel.push({choice, {}, std::move(c)});
        std::lock_guard lock(mutex_);
        --outstanding_;
    }

    // A step that threw (the model failed) leaves its requests where they were: all are
    // cancelled with the error, which the next step reports.
    void fail_all(const std::string& message) {
        for (Active& a : active_) {
            if (a.why.empty()) batch_.cancel(a.id);
            a.why = "the model failed: " + message;
        }
    }

    BatchGenerator<LanguageModel> batch_;
    std::size_t capacity_;
    std::vector<Active> active_;  // engine thread only
    std::atomic<std::size_t> running_{0}, waiting_{0};

    mutable std::mutex mutex_;  // guards what follows
    std::condition_variable wake_;
    std::vector<Job> incoming_;
    std::size_t outstanding_ = 0;
    bool draining_ = false, quit_ = false;
    Clock::time_point grace_end_ = Clock::time_point::max();

    std::thread thread_;  // last: starts when everything above exists
};

}  // namespace tessera::server
