#pragma once
// The tokenizer that belongs to a model, from wherever the model keeps it: vocab.json and
// merges.txt in a Hugging Face directory, or the tokenizer.ggml.* metadata of a GGUF file (so
// that one .gguf file is all a user needs).
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <vector>      // std::vector

#include <tessera/core/error.hpp>          // FormatError
#include <tessera/io/gguf.hpp>             // GgufFile
#include <tessera/models/model_files.hpp>  // model_path_kind
#include <tessera/text/bpe_tokenizer.hpp>  // BpeTokenizer

namespace tessera {

// GPT-2's byte-level BPE from a GGUF file: tokenizer.ggml.model "gpt2", the pre-tokenizer
// (tokenizer.ggml.pre) GPT-2's own when named, tokens and merges; an end-of-text id
// (tokenizer.ggml.eos_token_id) must be the "<|endoftext|>" token. Anything else is a
// FormatError naming the key.
inline BpeTokenizer tokenizer_from_gguf(const io::GgufFile& file) {
    const auto fail = [&](const std::string& what) { throw FormatError(file.path() + ": " + what); };
    if (const std::string& model = file.string_value("tokenizer.ggml.model"); model != "gpt2") {
        fail("tokenizer.ggml.model is '" + model + "': only GPT-2's byte-level BPE (\"gpt2\") is supported");
    }
    if (file.find("tokenizer.ggml.pre")) {
        if (const std::string& pre = file.string_value("tokenizer.ggml.pre"); pre != "gpt-2" && pre != "default") {
            fail("tokenizer.ggml.pre is '" + pre + "': only GPT-2's pre-tokenizer (\"gpt-2\") is supported");
        }
    }
    BpeTokenizer tokenizer(file.string_array("tokenizer.ggml.tokens"), file.string_array("tokenizer.ggml.merges"), file.path());
    if (file.find("tokenizer.ggml.eos_token_id")) {
        const std::uint64_t eos = file.unsigned_value("tokenizer.ggml.eos_token_id");
        if (!tokenizer.eos_id() || eos != static_cast<std::uint64_t>(*tokenizer.eos_id())) {
            fail("tokenizer.ggml.eos_token_id " + std::to_string(eos) + " is not the id of \"" +
                 std::string(BpeTokenizer::end_of_text) + "\"");
        }
    }
    return tokenizer;
}

// A model's tokenizer: `path` is a Hugging Face directory or a GGUF file.
inline BpeTokenizer open_tokenizer(const std::filesystem::path& path) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) return tokenizer_from_gguf(io::GgufFile(path));
    return BpeTokenizer::from_directory(path);
}

}  // namespace tessera
