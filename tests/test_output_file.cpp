// io::OutputFile: a file replaced whole or not at all, never an input, never anything but a
// regular file; and io::same_file.
#include <catch2/catch.hpp>

#include <sys/stat.h>  // mkfifo, chmod, umask
#include <unistd.h>    // getpid

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <tessera/core/error.hpp>
#include <tessera/io/output_file.hpp>

using namespace tessera;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test case (ctest runs each case in its own process; the pid keeps the
// plain and the sanitizer build apart).
struct Scratch {
    fs::path dir;
    explicit Scratch(const std::string& name)
        : dir(fs::temp_directory_path() / ("tessera_output_" + std::to_string(::getpid()) + "_" + name)) {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~Scratch() { fs::remove_all(dir); }
    fs::path operator/(const std::string& name) const { return dir / name; }
    // The names in the folder, sorted.
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }
};

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }
mode_t mode_of(const fs::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("OutputFile: the target changes only on commit, and no temporary file is left", "[output_file]") {
    Scratch s("commit");
    write(s / "out.bin", "old");
    {
        io::OutputFile out(s / "out.bin");
        out.append(std::string_view("new "));
        out.append(std::string_view("bytes"));
        CHECK(read(s / "out.bin") == "old");  // not yet
        CHECK(s.names().size() == 2);         // the target and the temporary file beside it
        out.commit();
    }
    CHECK(read(s / "out.bin") == "new bytes");
    CHECK(s.names() == std::vector<std::string>{"out.bin"});
    {
        io::OutputFile out(s / "out.bin");
        out.append(std::string_view("abandoned"));
    }  // destroyed without commit: a failure part way
    CHECK(read(s / "out.bin") == "new bytes");
    CHECK(s.names() == std::vector<std::string>{"out.bin"});
    {
        io::OutputFile out(s / "out.bin");
        out.commit();
        CHECK_THROWS_WITH(out.commit(), Catch::Contains("already closed"));
    }
    CHECK(read(s / "out.bin").empty());
}

TEST_CASE("OutputFile: a new file gets 0666 less the umask, a replaced one keeps its permissions", "[output_file]") {
    Scratch s("modes");
    const mode_t mask = ::umask(022);
    {
        io::OutputFile out(s / "new.bin");
        out.commit();
    }
    CHECK(mode_of(s / "new.bin") == 0644);
    write(s / "kept.bin", "x");
    REQUIRE(::chmod((s / "kept.bin").c_str(), 0640) == 0);
    {
        io::OutputFile out(s / "kept.bin");
        out.append(std::string_view("y"));
        out.commit();
    }
    CHECK(mode_of(s / "kept.bin") == 0640);
    CHECK(read(s / "kept.bin") == "y");
    ::umask(mask);
}

TEST_CASE("OutputFile: an input, through any name, is refused before anything is written", "[output_file]") {
    Scratch s("inputs");
    fs::create_directories(s / "model");
    write(s / "model/weights.bin", "weights");
    const std::vector<fs::path> inputs{s / "model/weights.bin", s / "missing.bin"};  // a missing input is no file to protect
    fs::create_hard_link(s / "model/weights.bin", s / "hard.bin");
    fs::create_symlink(s / "model/weights.bin", s / "soft.bin");
    fs::create_directory_symlink(s / "model", s / "alias");
    for (const fs::path& target : {s / "model/weights.bin", s / "hard.bin", s / "soft.bin", s / "alias/weights.bin",
                                  s / "model/../model/./weights.bin"}) {
        INFO(target);
        CHECK_THROWS_AS(io::OutputFile(target, inputs), ArgumentError);
        CHECK_THROWS_WITH(io::OutputFile(target, inputs),
                          Catch::Contains("refusing to write " + target.string() + ": it is an input (" + (s / "model/weights.bin").string()));
    }
    CHECK(read(s / "model/weights.bin") == "weights");
    CHECK(s.names() == std::vector<std::string>{"alias", "hard.bin", "model", "soft.bin"});
    CHECK_NOTHROW(io::OutputFile(s / "other.bin", inputs));
}

TEST_CASE("OutputFile: only a regular file is ever replaced", "[output_file]") {
    Scratch s("kinds");
    fs::create_directories(s / "folder");
    REQUIRE(::mkfifo((s / "fifo").c_str(), 0600) == 0);
    fs::create_symlink(s / "nowhere/x", s / "dangling");
    CHECK_THROWS_WITH(io::OutputFile(s / "folder"), Catch::EndsWith("it exists and is a directory, not a regular file"));
    CHECK_THROWS_WITH(io::OutputFile(s / "fifo"), Catch::EndsWith("it exists and is a FIFO, not a regular file"));
    CHECK_THROWS_WITH(io::OutputFile("/dev/null"), Catch::EndsWith("it exists and is a character device, not a regular file"));
    CHECK_THROWS_WITH(io::OutputFile(s / "dangling"), Catch::Contains("it is a symbolic link to a file that does not exist"));
    CHECK_THROWS_WITH(io::OutputFile(""), Catch::Equals("the output file's name is empty"));
    CHECK_THROWS_WITH(io::OutputFile(s / "nowhere/x.bin"),
                      Catch::Contains("cannot create a file in " + (s / "nowhere").string() + ": No such file or directory"));
    CHECK(fs::is_fifo(s / "fifo"));
    CHECK(fs::is_symlink(s / "dangling"));
    CHECK(s.names() == std::vector<std::string>{"dangling", "fifo", "folder"});
}

TEST_CASE("OutputFile: through a link to a regular file, the file is replaced and the link stays", "[output_file]") {
    Scratch s("link");
    write(s / "real.bin", "old");
    fs::create_symlink("real.bin", s / "link.bin");
    {
        io::OutputFile out(s / "link.bin");
        out.append(std::string_view("new"));
        out.commit();
    }
    CHECK(fs::is_symlink(s / "link.bin"));
    CHECK(read(s / "real.bin") == "new");
    CHECK(s.names() == std::vector<std::string>{"link.bin", "real.bin"});
}

TEST_CASE("same_file: one file by identity when it exists, by resolved path when it does not", "[output_file]") {
    Scratch s("same");
    write(s / "a.bin", "a");
    fs::create_hard_link(s / "a.bin", s / "b.bin");
    CHECK(io::same_file(s / "a.bin", s / "b.bin"));
    CHECK(io::same_file(s / "x.bin", s / "./x.bin"));
    CHECK(io::same_file(s / "x.bin", s / "sub/../x.bin"));
    CHECK_FALSE(io::same_file(s / "a.bin", s / "x.bin"));
    CHECK_FALSE(io::same_file(s / "x.bin", s / "y.bin"));
}

TEST_CASE("Error messages show control bytes escaped: a NUL does not end what()", "[output_file]") {
    constexpr char raw[] = "name 'a\0b\x1b' ends here";
    const Error e(std::string(raw, sizeof raw - 1));
    CHECK(std::string(e.what()) == "name 'a\\x00b\\x1b' ends here");
    CHECK(std::string(FormatError("line 1\n\tline 2").what()) == "line 1\n\tline 2");
}
