#pragma once
// OutputFile: a file that is replaced whole or not at all, and never by mistake. Before
// anything is written, the target is checked: its path is not empty, it is none of the inputs
// (the same file by device and inode, however links and directories lead to it), and it either
// does not exist or is a regular file (a device node, a FIFO or a directory is refused, never
// replaced). The bytes go to a new temporary file beside the target; commit() flushes it to
// disk and renames it over the target. Until then, and whenever anything fails, the target is
// as it was and the temporary file is removed.
#include <fcntl.h>     // open, O_CREAT, O_EXCL
#include <sys/stat.h>  // stat, lstat, fstat, fchmod, S_IS*
#include <unistd.h>    // close, fsync, unlink, getpid

#include <cerrno>       // errno
#include <cstddef>      // std::byte, std::size_t
#include <cstdio>       // std::FILE, fdopen, std::fwrite, std::fflush, std::fclose, std::rename
#include <cstring>      // std::strerror
#include <filesystem>   // std::filesystem::path, weakly_canonical
#include <optional>     // std::optional
#include <atomic>       // std::atomic
#include <chrono>       // std::chrono::steady_clock
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::exchange
#include <vector>       // std::vector

#include <tessera/core/error.hpp>         // Error, ArgumentError
#include <tessera/io/read_only_file.hpp>  // file_kind

namespace tessera::io {

// Which file a path names: device and inode, the same through any link or directory.
struct FileIdentity {
    dev_t device = 0;
    ino_t inode = 0;
    bool operator==(const FileIdentity&) const = default;
};

// The identity of the file `path` names (links followed); none when it does not exist.
inline std::optional<FileIdentity> identity_of(const std::filesystem::path& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileIdentity{st.st_dev, st.st_ino};
}

// Whether two paths name the same file: the same identity when both exist, else the same path
// once `.`, `..` and the links of their existing parts are resolved.
inline bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
    const auto ia = identity_of(a), ib = identity_of(b);
    if (ia && ib) return *ia == *ib;
    if (ia || ib) return false;
    const auto resolved = [](const std::filesystem::path& p) -> std::optional<std::filesystem::path> {
        std::error_code e1, e2;
        auto r = std::filesystem::weakly_canonical(std::filesystem::absolute(p, e1), e2);
        if (e1 || e2) return std::nullopt;
        return r;
    };
    const auto ra = resolved(a), rb = resolved(b);
    return ra && rb && *ra == *rb;
}

class OutputFile {
public:
    // Checks `target` against the rules above and the files in `inputs` (paths that do not
    // exist are skipped), then creates the temporary file. An ArgumentError names the target
    // and why; a failure to create the temporary file is an Error with the system's reason.
    explicit OutputFile(const std::filesystem::path& target, const std::vector<std::filesystem::path>& inputs = {})
        : name_(target.string()) {
        if (target.empty()) throw ArgumentError("the output file's name is empty");
        std::filesystem::path resolved = target;
        struct stat link {};
        if (::lstat(target.c_str(), &link) == 0) {
            struct stat st {};
            if (::stat(target.c_str(), &st) != 0) {
                refuse("is a symbolic link to a file that does not exist (" + std::string(std::strerror(errno)) + ")");
            }
            if (!S_ISREG(st.st_mode)) refuse("exists and is " + file_kind(st.st_mode) + ", not a regular file");
            for (const std::filesystem::path& input : inputs) {
                if (identity_of(input) == FileIdentity{st.st_dev, st.st_ino}) {
                    refuse("is an input (" + input.string() + ")");
                }
            }
            mode_ = st.st_mode & 07777;
            if (S_ISLNK(link.st_mode)) {  // written through the link: the link stays, its file is replaced
                std::error_code ec;
                resolved = std::filesystem::canonical(target, ec);
                if (ec) refuse("is a symbolic link that cannot be resolved (" + ec.message() + ")");
            }
        } else if (errno != ENOENT) {
            refuse(std::string("cannot be examined: ") + std::strerror(errno));
        }
        target_ = resolved;
        create_temporary();
    }
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;
    ~OutputFile() { discard(); }

    // The target as it was named (for messages).
    const std::string& name() const noexcept { return name_; }

    void append(std::span<const std::byte> bytes) {
        if (file_ == nullptr) throw Error("cannot write " + name_ + ": it is already closed");
        if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) fail_write();
    }
    void append(std::string_view bytes) { append(std::as_bytes(std::span(bytes.data(), bytes.size()))); }

    // Everything written reaches the disk, then replaces the target. After a failure the target
    // is untouched and the temporary file gone.
    void commit() {
        if (file_ == nullptr) throw Error("cannot write " + name_ + ": it is already closed");
        if (std::fflush(file_) != 0 || std::ferror(file_)) fail_write();
        const int fd = ::fileno(file_);
        if (mode_ && ::fchmod(fd, *mode_) != 0) fail_write();
        if (::fsync(fd) != 0) fail_write();
        if (std::fclose(std::exchange(file_, nullptr)) != 0) fail_write();
        // The target may have changed since the constructor looked: still only a regular file
        // (or nothing) is ever replaced.
        struct stat st {};
        if (::lstat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
            discard();
            refuse("became " + file_kind(st.st_mode) + " while it was written; it was left as it is");
        }
        if (std::rename(temporary_.c_str(), target_.c_str()) != 0) {
            const int error = errno;
            discard();
            throw Error("cannot write " + name_ + ": " + std::strerror(error));
        }
        temporary_.clear();
    }

private:
    [[noreturn]] void refuse(const std::string& why) const {
        throw ArgumentError("refusing to write " + name_ + ": it " + why);
    }
    [[noreturn]] void fail_write() {
        const int error = errno;
        discard();
        throw Error("cannot write " + name_ + (error ? std::string(": ") + std::strerror(error) : std::string{}));
    }

    // A new file (O_EXCL: never one that exists) named after the target with a suffix from the
    // process id, a counter and the clock, in the target's directory so that the rename stays
    // within one file system. Created with mode 0666 less the umask, as the target would be.
    void create_temporary() {
        static std::atomic<unsigned> counter{0};
        const std::filesystem::path directory = target_.has_parent_path() ? target_.parent_path() : ".";
        for (int attempt = 0; attempt < 64; ++attempt) {
            const auto now = static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count());
            const unsigned mixed = static_cast<unsigned>((now ^ (now >> 32)) * 2654435761u) ^
                                   static_cast<unsigned>(::getpid()) * 40503u ^ counter++ * 2246822519u;
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, ".%08x.tmp", mixed);
            std::string name(".");  // (built in steps: GCC 12 warns falsely on "." + std::string)
            name += target_.filename().string();
            name += suffix;
            const std::filesystem::path candidate = directory / name;
            const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd < 0 && errno == EEXIST) continue;
            if (fd < 0) {
                throw Error("cannot write " + name_ + ": cannot create a file in " + directory.string() + ": " +
                            std::strerror(errno));
            }
            file_ = ::fdopen(fd, "wb");
            if (file_ == nullptr) {
                const int error = errno;
                ::close(fd);
                ::unlink(candidate.c_str());
                throw Error("cannot write " + name_ + ": " + std::strerror(error));
            }
            temporary_ = candidate;
            return;
        }
        throw Error("cannot write " + name_ + ": no free name for a temporary file in " + directory.string());
    }

    void discard() noexcept {
        if (file_ != nullptr) std::fclose(std::exchange(file_, nullptr));
        if (!temporary_.empty()) ::unlink(temporary_.c_str());
        temporary_.clear();
    }

    std::string name_;                  // as given
    std::filesystem::path target_;      // links resolved
    std::filesystem::path temporary_;   // empty once renamed or removed
    std::optional<mode_t> mode_;        // the replaced file's permissions
    std::FILE* file_ = nullptr;
};

}  // namespace tessera::io
