#pragma once
// What a model path is, and which files it consists of: a GGUF file, or a Hugging Face
// directory whose config.json, model.safetensors and tokenizer files tessera reads.
// Anything else (an empty path, a name that does not exist, a dangling link, a FIFO, a device)
// is an error that says so, instead of a confusing one about a missing config.json. The list of
// files is also what a program that writes must never overwrite (io/output_file.hpp).
#include <sys/stat.h>  // stat, lstat

#include <array>       // std::array
#include <cerrno>      // errno
#include <cstring>     // std::strerror
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <string_view>  // std::string_view
#include <vector>      // std::vector

#include <tessera/core/error.hpp>         // ArgumentError, FormatError
#include <tessera/io/read_only_file.hpp>  // file_kind
#include <tessera/io/safetensors_shards.hpp>  // safetensors_files: one file or an index's shards

namespace tessera {

enum class ModelPathKind { gguf_file, directory };

// The files of a Hugging Face model directory that tessera reads.
inline constexpr std::array<const char*, 8> hf_model_files = {"config.json",    "model.safetensors",     "vocab.json",      "merges.txt",
                                                              "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "chat_template.jinja"};

// A regular file (a GGUF file) or a directory, links followed; anything else is an error naming
// the path and what it is.
inline ModelPathKind model_path_kind(const std::filesystem::path& model) {
    if (model.empty()) throw ArgumentError("the model path is empty (give a GGUF file or a model directory)");
    struct stat st {};
    if (::stat(model.c_str(), &st) != 0) {
        const int error = errno;
        struct stat link {};
        if (::lstat(model.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
            throw FormatError("model " + model.string() + " is a symbolic link to a file that does not exist");
        }
        throw FormatError("model " + model.string() + ": " + std::strerror(error));
    }
    if (S_ISREG(st.st_mode)) return ModelPathKind::gguf_file;
    if (S_ISDIR(st.st_mode)) return ModelPathKind::directory;
    throw FormatError("model " + model.string() + " is " + io::file_kind(st.st_mode) +
                      ", not a GGUF file or a model directory");
}

// Every file the model at `model` consists of: the GGUF file itself, or the directory's files
// above, with a sharded checkpoint's index and shards in place of model.safetensors.
inline std::vector<std::filesystem::path> model_files(const std::filesystem::path& model) {
    if (model_path_kind(model) == ModelPathKind::gguf_file) return {model};
    std::vector<std::filesystem::path> files;
    for (const char* name : hf_model_files) {
        if (std::string_view(name) == io::safetensors_single) {
            for (std::filesystem::path& f : io::safetensors_files(model)) files.push_back(std::move(f));
        } else {
            files.push_back(model / name);
        }
    }
    return files;
}

}  // namespace tessera
