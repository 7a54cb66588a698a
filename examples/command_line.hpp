#pragma once
// What the example programs share about the command line: strict number flags with plain
// messages, inputs read whole with errors that name them, and outputs whose write errors stop
// the program (a full disk, a closed pipe) instead of passing silently and that never replace
// an input or anything but a regular file.
#include <CLI/CLI.hpp>

#include <fcntl.h>   // open
#include <unistd.h>  // read, close, STDIN_FILENO

#include <cerrno>       // errno
#include <charconv>     // std::from_chars
#include <cmath>        // std::isfinite, std::isinf, std::abs, INFINITY
#include <limits>       // std::numeric_limits
#include <concepts>     // std::integral, std::floating_point
#include <cstdio>       // std::FILE, std::fwrite, std::fflush, std::ferror
#include <cstring>      // std::strerror
#include <optional>     // std::optional
#include <string>       // std::string, std::to_string
#include <string_view>  // std::string_view
#include <filesystem>   // std::filesystem::path
#include <utility>      // std::in_place
#include <vector>       // std::vector

#include <tessera/core/error.hpp>           // Error
#include <tessera/core/kv_precision.hpp>    // KvPrecision, kv_precision_named
#include <tessera/core/weight_formats.hpp>  // WeightFormatId, weight_format_named
#include <tessera/io/output_file.hpp>       // io::OutputFile
#include <tessera/sampling/sampler.hpp>       // SamplingParams

namespace tessera::cli {

// `text` as a whole number in [lo, hi], written in decimal digits only: no sign for unsigned
// types, no fraction, no exponent, no wrap-around ("-1" is not SIZE_MAX, "4294967299" is not 3).
template <std::integral T>
std::optional<T> parse_whole_number(std::string_view text, T lo, T hi) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool digits_only = !text.empty() && text[0] != '+' && (std::is_signed_v<T> || text[0] != '-');
    if (!digits_only || ec != std::errc{} || end != text.data() + text.size() || value < lo || value > hi) return {};
    return value;
}

// A flag whose value must be parse_whole_number(value, lo, hi).
template <std::integral T>
CLI::Validator whole_number(T lo, T hi) {
    const std::string range = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
    return CLI::Validator(
        [lo, hi, range](std::string& text) -> std::string {
            return parse_whole_number(text, lo, hi) ? std::string{} : "must be " + range + ", got '" + text + "'";
        },
        range);
}


// How a bound of real_number() treats its end point.
enum class Bound { closed, open };

// A finite real number between lo and hi, each end closed or open; hi = infinity leaves it
// unbounded above. "nan", "inf", hexadecimal and trailing text are refused, and so is a number
// that the flag's type T cannot hold (1e39 for a float would become infinity).
template <std::floating_point T = double>
CLI::Validator real_number(double lo, Bound lo_bound, double hi = INFINITY, Bound hi_bound = Bound::open) {
    const auto fmt = [](double v) {
        std::string s = std::to_string(v);
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.') s.pop_back();
        return s;
    };
    const std::string range =
        std::isinf(hi) ? "a finite number " + std::string(lo_bound == Bound::closed ? ">= " : "> ") + fmt(lo)
                       : "a number in " + std::string(lo_bound == Bound::closed ? "[" : "(") + fmt(lo) + ", " + fmt(hi) +
                             (hi_bound == Bound::closed ? "]" : ")");
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
            const bool ok = !text.empty() && ec == std::errc{} && end == text.data() + text.size() && std::isfinite(value) &&
                            std::abs(value) <= static_cast<double>(std::numeric_limits<T>::max()) &&
                            (lo_bound == Bound::closed ? value >= lo : value > lo) &&
                            (hi_bound == Bound::closed ? value <= hi : value < hi);
            return ok ? std::string{} : "must be " + range + ", got '" + text + "'";
        },
        range);
}

// The whole of a file, or of standard input when `path` is "-". Pipes and process
// substitutions work; a directory, a read error or more than `max_bytes` is an Error naming
// the input.
// --weights f32|bf16|q8_0|q4_0: how the model stores its matrices (quantized when loaded);
// unset: as the file stores them.
inline CLI::Option* add_weights_option(CLI::App& app, std::optional<WeightFormatId>& weights) {
    static const std::string names = "f32, bf16, q8_0, q4_0";
    return app
        .add_option_function<std::string>(
            "--weights",
            [&weights](const std::string& name) {
                const auto id = weight_format_named(name);
                if (!id) throw CLI::ValidationError("--weights", "must be one of " + names + ", got '" + name + "'");
                weights = *id;
            },
            "how the weights are stored: " + names +
                " (quantized when loaded; default: as the file stores them, f32 for safetensors)")
        ->type_name("FORMAT");
}

// The sampling flags (--temperature, --top-k, --top-p, --min-p, the penalties, --no-repeat-ngram,
// --seed), each checked for its range; make_sampler(sampling) then checks them together.
inline void add_sampling_options(CLI::App& app, SamplingParams& sampling) {
    constexpr long most = 1'000'000'000;  // counts beyond this are typing errors, not requests
    app.add_option("--temperature", sampling.temperature, "0 = greedy")->check(real_number<float>(0, Bound::closed));
    app.add_option("--top-k", sampling.top_k, "keep the k most likely tokens (0 = off)")->check(whole_number(0L, most));
    app.add_option("--top-p", sampling.top_p, "nucleus: smallest set with probability >= p (1 = off)")
        ->check(real_number(0, Bound::open, 1, Bound::closed));
    app.add_option("--min-p", sampling.min_p, "keep tokens with p >= min_p * p_max (0 = off)")
        ->check(real_number(0, Bound::closed, 1, Bound::closed));
    app.add_option("--repetition-penalty", sampling.repetition_penalty, "CTRL rule, > 0 (1 = off)")
        ->check(real_number<float>(0, Bound::open));
    app.add_option("--repeat-last-n", sampling.repeat_last_n, "tokens the penalties look back over")
        ->check(whole_number<std::size_t>(0, most));
    app.add_option("--presence-penalty", sampling.presence_penalty, "OpenAI rule, [-2, 2]")
        ->check(real_number(-2, Bound::closed, 2, Bound::closed));
    app.add_option("--frequency-penalty", sampling.frequency_penalty, "OpenAI rule, [-2, 2]")
        ->check(real_number(-2, Bound::closed, 2, Bound::closed));
    app.add_option("--no-repeat-ngram", sampling.no_repeat_ngram, "ban repeating n-grams of this size (0 = off)")
        ->check(whole_number(0L, most));
    app.add_option("--seed", sampling.seed, "random seed (default: random, reported)")
        ->check(whole_number<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max()));
}

// --kv-cache f32|bf16|q8_0: how the KV cache stores keys and values (bf16: half the memory,
// q8_0: 0.27 of it).
inline CLI::Option* add_kv_cache_option(CLI::App& app, KvPrecision& kv) {
    return app
        .add_option_function<std::string>(
            "--kv-cache",
            [&kv](const std::string& name) {
                const auto p = kv_precision_named(name);
                if (!p) throw CLI::ValidationError("--kv-cache", "must be f32, bf16 or q8_0, got '" + name + "'");
                kv = *p;
            },
            "how the KV cache stores keys and values: f32 (default), bf16 (half the memory) or q8_0 (0.27 of it; "
            "head_dim a multiple of 32); bf16 and q8_0 on the cpu backend")
        ->type_name("PRECISION");
}

inline std::string read_input(const std::string& path, std::size_t max_bytes = std::size_t{1} << 30) {
    const bool is_stdin = path == "-";
    const std::string name = is_stdin ? "standard input" : path;
    const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open " + name + ": " + std::strerror(errno));
    struct Closer {
        int fd;
        bool owned;
        ~Closer() {
            if (owned) ::close(fd);
        }
    } closer{fd, !is_stdin};
    std::string text;
    char buffer[1 << 16];
    for (;;) {
        const ::ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error("cannot read " + name + ": " + std::strerror(errno));
        if (n == 0) return text;
        if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
            throw Error(name + " is longer than the " + std::to_string(max_bytes) + " bytes an input may have");
        }
        text.append(buffer, static_cast<std::size_t>(n));
    }
}

// An output whose failures are errors naming it: standard output (a full disk, a closed or
// broken pipe, with SIGPIPE ignored: a generator writing through it stops at the first failed
// piece), or a file written as io::OutputFile writes it: checked against the program's inputs
// before anything is written, replaced only by finish(), left as it was on any failure.
class Output {
public:
    // Standard output, named so in errors.
    Output() = default;
    // A file: `path` must not be any of `inputs` and may only replace a regular file.
    Output(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs) : file_(std::in_place, path, inputs) {}
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;

    // Writes and flushes, so that the reader sees each piece as it comes.
    void write(std::string_view bytes) {
        append(bytes);
        flush();
    }
    void flush() {
        if (!file_ && (std::fflush(stdout) != 0 || std::ferror(stdout))) fail();
    }
    // Writes without flushing (bulk data); finish() reports a failure that happened here.
    void append(std::string_view bytes) {
        if (file_) return file_->append(bytes);
        if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) fail();
    }
    // Flushes standard output, or puts the file in place: the last bytes' failure is an error.
    void finish() {
        if (file_) return file_->commit();
        flush();
    }

private:
    [[noreturn]] static void fail() {
        throw Error("cannot write to standard output" + (errno ? std::string(": ") + std::strerror(errno) : std::string{}));
    }

    std::optional<io::OutputFile> file_;
};

}  // namespace tessera::cli
