#pragma once
// The exception hierarchy. Every message names the thing that was wrong: the file, the tensor,
// the byte offset or the parameter, so the caller never has to guess.
#include <stdexcept>  // std::runtime_error
#include <string>     // std::string

namespace tessera {

// Base of every error tessera throws.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
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
