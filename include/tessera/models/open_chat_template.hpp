#pragma once
// A model's chat template, from wherever the model keeps it: tokenizer.chat_template in a GGUF
// file (with the BOS / EOS tokens' text from tokenizer.ggml.*), or in a Hugging Face directory
// chat_template.jinja, else tokenizer_config.json's "chat_template" (a string, or a list of
// named templates of which "default" is used), with its bos_token / eos_token.
#include <filesystem>  // std::filesystem::path
#include <optional>    // std::optional
#include <string>      // std::string

#include <tessera/chat/chat_template.hpp>  // ChatTemplate
#include <tessera/core/error.hpp>          // FormatError
#include <tessera/io/gguf.hpp>             // GgufFile
#include <tessera/io/json.hpp>             // parse_json
#include <tessera/io/read_only_file.hpp>   // read_whole_file
#include <tessera/models/model_files.hpp>  // model_path_kind
#include <tessera/text/tokenizer.hpp>      // Tokenizer

namespace tessera {

namespace detail {

inline constexpr std::size_t max_chat_template_bytes = 1 << 20;  // real ones are under 20 KB

// A tokenizer_config.json token field: "text", {"content": "text", ...} or null.
inline std::string config_token(const io::JsonValue& config, const char* key, const std::string& where) {
    const io::JsonValue* v = config.find(key);
    if (!v || v->is_null()) return {};
    if (v->is_string()) return v->as_string();
    if (v->is_object())
        if (const io::JsonValue* c = v->find("content"); c && c->is_string()) return c->as_string();
    throw FormatError(where + ": " + key + " must be a string or an object with a string \"content\"");
}

// The text of the token `key` names by id, or "" when the file names none.
inline std::string gguf_token_text(const io::GgufFile& file, const char* key, const std::vector<std::string>& tokens) {
    if (!file.find(key)) return {};
    const std::uint64_t id = file.unsigned_value(key);
    if (id >= tokens.size())
        throw FormatError(file.path() + ": " + key + " " + std::to_string(id) + " is outside the vocabulary (" +
                          std::to_string(tokens.size()) + " tokens)");
    return tokens[id];
}

}  // namespace detail

// The chat template of the model at `path` (a GGUF file or a directory), or nullopt when it has
// none. A template that cannot be parsed is a jinja::TemplateError; a malformed entry a FormatError.
inline std::optional<chat::ChatTemplate> open_chat_template(const std::filesystem::path& path) {
    if (model_path_kind(path) == ModelPathKind::gguf_file) {
        const io::GgufFile file(path);
        if (!file.find("tokenizer.chat_template")) return std::nullopt;
        const std::string& source = file.string_value("tokenizer.chat_template");
        std::vector<std::string> tokens;
        if (file.find("tokenizer.ggml.tokens")) tokens = file.string_array("tokenizer.ggml.tokens");
        return chat::ChatTemplate(source, detail::gguf_token_text(file, "tokenizer.ggml.bos_token_id", tokens),
                                  detail::gguf_token_text(file, "tokenizer.ggml.eos_token_id", tokens));
    }
    const std::filesystem::path config_path = path / "tokenizer_config.json";
    std::optional<io::JsonValue> config;
    if (std::filesystem::exists(config_path)) {
        config = io::parse_json(io::read_whole_file(config_path, 64 << 20), config_path.string());
        if (!config->is_object()) throw FormatError(config_path.string() + " is not a JSON object");
    }
    const auto token = [&](const char* key) { return config ? detail::config_token(*config, key, config_path.string()) : std::string(); };
    const std::filesystem::path jinja_path = path / "chat_template.jinja";
    if (std::filesystem::exists(jinja_path))
        return chat::ChatTemplate(io::read_whole_file(jinja_path, detail::max_chat_template_bytes), token("bos_token"), token("eos_token"));
    const io::JsonValue* entry = config ? config->find("chat_template") : nullptr;
    if (!entry || entry->is_null()) return std::nullopt;
    if (entry->is_string()) return chat::ChatTemplate(entry->as_string(), token("bos_token"), token("eos_token"));
    if (entry->is_array()) {
        for (const io::JsonValue& named : entry->elements()) {
            const io::JsonValue* name = named.is_object() ? named.find("name") : nullptr;
            const io::JsonValue* text = named.is_object() ? named.find("template") : nullptr;
            if (!name || !name->is_string() || !text || !text->is_string())
                throw FormatError(config_path.string() + ": each chat_template entry needs a string \"name\" and \"template\"");
            if (name->as_string() == "default") return chat::ChatTemplate(text->as_string(), token("bos_token"), token("eos_token"));
        }
        throw FormatError(config_path.string() + ": chat_template lists no template named \"default\"");
    }
    throw FormatError(config_path.string() + ": chat_template must be a string or a list of named templates");
}

// The template in `template_file` when one is given (a user's override: --chat-template-file),
// with the model's BOS / EOS text, else the tokenizer's EOS; otherwise the model's own.
inline std::optional<chat::ChatTemplate> open_chat_template(const std::filesystem::path& model, const std::filesystem::path& template_file,
                                                            const Tokenizer& tokenizer) {
    std::optional<chat::ChatTemplate> own = open_chat_template(model);
    if (template_file.empty()) return own;
    const auto eos = tokenizer.eos_id();
    return chat::ChatTemplate(io::read_whole_file(template_file, detail::max_chat_template_bytes), own ? own->bos_token() : "",
                              own ? own->eos_token() : eos ? tokenizer.token_bytes(*eos) : "");
}

}  // namespace tessera
