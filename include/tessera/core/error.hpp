#pragma once
// The exception hierarchy. Every message names the thing that was wrong: the file, the tensor,
// the byte offset or the parameter, so the caller never has to guess. Messages quote names and
// text from files; a control byte among them is shown escaped ("\x00"), so that what() is the
// whole message (a NUL would end it) and a terminal shows it as it is.
#include <cstdio>     // std::snprintf
#include <stdexcept>  // std::runtime_error
#include <string>     // std::string

namespace tessera {

namespace detail {
// `message` with each control byte but newline and tab written as \xNN.
inline std::string printable_message(const std::string& message) {
    std::string out;
    out.reserve(message.size());
    for (const char c : message) {
        const auto b = static_cast<unsigned char>(c);
        if ((b < 0x20 && c != '\n' && c != '\t') || b == 0x7f) {
            char escaped[5];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", b);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out;
}
}  // namespace detail

// Base of every error tessera throws.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(detail::printable_message(message)) {}
    explicit Error(const char* message) : Error(std::string(message)) {}
};

// A file (checkpoint, vocabulary, config) that is truncated, corrupt or inconsistent.
class FormatError : public Error {
public:
    using Error::Error;
};

// Tensor extents that disagree at run time (static disagreements fail to compile instead).
class ShapeError : public Error {
public:
    using Error::Error;
};

// Text that cannot be tokenized, or ids that the vocabulary does not contain.
class TokenizerError : public Error {
public:
    using Error::Error;
};

// A parameter outside its valid range (thread count, sampling parameter, ...).
class ArgumentError : public Error {
public:
    using Error::Error;
};

// A backend that cannot do what was asked (no CUDA device, a failed library call).
class BackendError : public Error {
public:
    using Error::Error;
};

}  // namespace tessera
