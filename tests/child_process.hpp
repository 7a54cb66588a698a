#pragma once
// Runs a test body in a forked child whose address space may grow by at most `headroom` bytes
// beyond what it has at the fork: a memory bound becomes a pass/fail check (an allocation past
// the cap throws std::bad_alloc in the child), and the cap never touches the test process.
// An alarm ends a child that hangs. Returns the child's exit code, or -1 if it did not exit.
#include <sys/resource.h>  // setrlimit, RLIMIT_AS
#include <sys/wait.h>      // waitpid
#include <unistd.h>        // fork, alarm, _exit

#include <cstddef>
#include <fstream>
#include <string>

namespace tessera::test {

template <class Body>
int exit_code_with_address_space_headroom(std::size_t headroom, unsigned timeout_seconds, Body&& body) {
    const pid_t child = ::fork();
    if (child < 0) return -1;
    if (child == 0) {
        ::alarm(timeout_seconds);
        std::ifstream status("/proc/self/status");
        std::size_t vm_kb = 0;
        for (std::string line; std::getline(status, line);)
            if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoul(line.substr(7));
        const rlimit cap{vm_kb * 1024 + headroom, vm_kb * 1024 + headroom};
        ::setrlimit(RLIMIT_AS, &cap);
        int code = 99;
        try {
            code = body();
        } catch (...) {
            code = 98;
        }
        ::_exit(code);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

}  // namespace tessera::test
