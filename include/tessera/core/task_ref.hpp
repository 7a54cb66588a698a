#pragma once
// TaskRef: a non-owning reference to task(i), i in [0, n), for work a model may spread over
// its host threads (GPT2::run_host_tasks; LanguageModel passes it through a virtual call). No
// allocation and no copy of the callable, which must outlive the call that takes the TaskRef.
#include <cstddef>      // std::size_t
#include <memory>       // std::addressof
#include <type_traits>  // std::is_invocable_v, std::is_same_v, std::remove_cvref_t, std::remove_reference_t

namespace tessera {

class TaskRef {
public:
    template <class F>
        requires(std::is_invocable_v<F&, std::size_t> && !std::is_same_v<std::remove_cvref_t<F>, TaskRef>)
    TaskRef(F& task) noexcept  // NOLINT(google-explicit-constructor): a reference, as std::function_ref
        : task_(const_cast<void*>(static_cast<const void*>(std::addressof(task)))),
          call_([](void* t, std::size_t i) { (*static_cast<std::remove_reference_t<F>*>(t))(i); }) {}
    void operator()(std::size_t i) const { call_(task_, i); }

private:
    void* task_;
    void (*call_)(void*, std::size_t);
};

}  // namespace tessera
