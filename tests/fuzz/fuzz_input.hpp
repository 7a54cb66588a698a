#pragma once
// Shared by the libFuzzer harnesses: the input as a file (the loaders read paths), written to
// an in-memory file so that fuzzing never touches the disk.
#include <sys/mman.h>  // memfd_create
#include <unistd.h>    // write, ftruncate, lseek

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::fuzz {

// A named in-memory file whose contents are replaced by each set(); path() opens it.
class MemoryFile {
public:
    MemoryFile() : fd_(::memfd_create("tessera-fuzz", 0)) {}
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
    void set(std::string_view bytes) const {
        if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) != 0) __builtin_trap();
        for (std::size_t done = 0; done < bytes.size();) {
            const ::ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
            if (n <= 0) __builtin_trap();
            done += static_cast<std::size_t>(n);
        }
    }

private:
    int fd_;
};

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace tessera::fuzz
