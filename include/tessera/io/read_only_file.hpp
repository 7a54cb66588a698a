#pragma once
// A file read by explicit positioned reads (POSIX pread), never mapped. Checkpoints are read
// through it: a file truncated or rewritten while it loads then gives a FormatError naming the
// file (a short read), where a memory map would kill the process with SIGBUS. Reading straight
// into the destination also keeps the page cache out of the process's resident memory.
#include <fcntl.h>     // open
#include <sys/stat.h>  // fstat, S_IS*
#include <unistd.h>    // pread, close

#include <cerrno>      // errno, EINTR
#include <cstddef>     // std::byte, std::size_t
#include <cstring>     // std::strerror
#include <filesystem>  // std::filesystem::path
#include <span>        // std::span
#include <string>      // std::string
#include <utility>     // std::exchange

#include <tessera/core/error.hpp>  // FormatError

namespace tessera::io {

// "a directory", "a FIFO", ... for a file that is not a regular one (stat's st_mode).
inline std::string file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

class ReadOnlyFile {
public:
    explicit ReadOnlyFile(const std::filesystem::path& path) : path_(path.string()) {
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) throw FormatError("cannot open " + path_ + ": " + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd_);
            throw FormatError("cannot read " + path_ + ": not a regular file");
        }
        size_ = static_cast<std::size_t>(st.st_size);
    }
    ReadOnlyFile(ReadOnlyFile&& o) noexcept
        : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)), size_(std::exchange(o.size_, 0)) {}
    ReadOnlyFile& operator=(ReadOnlyFile&&) = delete;
    ReadOnlyFile(const ReadOnlyFile&) = delete;
    ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
    ~ReadOnlyFile() {
        if (fd_ >= 0) ::close(fd_);
    }

    const std::string& path() const noexcept { return path_; }
    // The size when the file was opened.
    std::size_t size() const noexcept { return size_; }

    // Fills `dst` with the bytes at `offset`. Fewer bytes than that (the file shrank since it
    // was opened) or a read error is a FormatError naming the file.
    void read(std::size_t offset, std::span<std::byte> dst) const {
        std::size_t done = 0;
        while (done < dst.size()) {
            const ::ssize_t n = ::pread(fd_, dst.data() + done, dst.size() - done, static_cast<::off_t>(offset + done));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw FormatError("cannot read " + path_ + ": " + std::strerror(errno));
            if (n == 0) {
                throw FormatError(path_ + ": the file ends at byte " + std::to_string(offset + done) + " but " +
                                  std::to_string(offset + dst.size()) +
                                  " bytes were expected (truncated or changed while being read)");
            }
            done += static_cast<std::size_t>(n);
        }
    }

private:
    std::string path_;
    int fd_ = -1;
    std::size_t size_ = 0;
};

// The whole of a small file (config.json, vocab.json, merges.txt) as bytes. A directory, a
// device such as /dev/zero or a file over `max_bytes` is a FormatError naming it and `what`.
inline std::string read_whole_file(const std::filesystem::path& path, std::size_t max_bytes) {
    const ReadOnlyFile file(path);
    if (file.size() > max_bytes) {
        throw FormatError(path.string() + " is " + std::to_string(file.size()) + " bytes, more than the " +
                          std::to_string(max_bytes) + " such a file may have");
    }
    std::string text(file.size(), '\0');
    file.read(0, std::as_writable_bytes(std::span(text)));
    return text;
}

}  // namespace tessera::io
