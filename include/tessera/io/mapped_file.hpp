#pragma once
// A read-only memory map of a whole file (POSIX). Checkpoints are read through it, so loading
// copies each tensor once, straight from the page cache; release() hands pages already copied
// back to the kernel, so the mapping does not add the file's size to the peak memory.
#include <fcntl.h>     // open
#include <sys/mman.h>  // mmap, munmap, madvise
#include <sys/stat.h>  // fstat
#include <unistd.h>    // close

#include <cerrno>        // errno
#include <cstddef>       // std::byte, std::size_t
#include <cstring>       // std::strerror
#include <filesystem>    // std::filesystem::path
#include <span>          // std::span
#include <string>        // std::string
#include <utility>       // std::exchange

#include <tessera/core/error.hpp>  // FormatError

namespace tessera::io {

class MappedFile {
public:
    explicit MappedFile(const std::filesystem::path& path) : path_(path.string()) {
        const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw FormatError("cannot open " + path_ + ": " + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            throw FormatError("cannot read " + path_ + ": not a regular file");
        }
        size_ = static_cast<std::size_t>(st.st_size);
        if (size_ > 0) {
            void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                const int err = errno;
                ::close(fd);
                throw FormatError("cannot map " + path_ + ": " + std::strerror(err));
            }
            data_ = static_cast<const std::byte*>(p);
        }
        ::close(fd);  // the mapping keeps the file
    }
    MappedFile(MappedFile&& o) noexcept
        : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    MappedFile& operator=(MappedFile&&) = delete;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile() {
        if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
    }

    const std::string& path() const noexcept { return path_; }
    std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
    std::size_t size() const noexcept { return size_; }

    // Drops the pages of [offset, offset + length) from this process's memory (they are re-read
    // from the file if touched again). Whole pages inside the range only.
    void release(std::size_t offset, std::size_t length) const noexcept {
        const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        const std::size_t begin = (offset + page - 1) / page * page;
        const std::size_t end = (offset + length) / page * page;
        if (data_ != nullptr && end > begin) ::madvise(const_cast<std::byte*>(data_) + begin, end - begin, MADV_DONTNEED);
    }

private:
    std::string path_;
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace tessera::io
