#pragma once
// A model's chat template: a list of messages to the prompt text, rendered as Hugging Face
// transformers' apply_chat_template renders it (Jinja with trim_blocks and lstrip_blocks,
// loop controls, tojson as json.dumps without ASCII escapes, raise_exception, strftime_now,
// bos_token / eos_token), byte for byte: tests/test_chat.cpp compares it with Jinja2 itself.
// Not part of tessera.hpp: a program that does not chat does not compile the template engine.
#include <ctime>     // std::tm, std::time, std::strftime, localtime_r
#include <optional>  // std::optional
#include <string>    // std::string
#include <utility>   // std::move

#include <tessera/chat/jinja/template.hpp>
#include <tessera/core/error.hpp>  // ArgumentError
#include <tessera/io/json.hpp>     // JsonValue

namespace tessera::chat {

struct ChatOptions {
    bool add_generation_prompt = true;       // end with the header of the assistant's turn
    const io::JsonValue* tools = nullptr;    // a JSON array of tool definitions, or none
    const io::JsonValue* variables = nullptr;  // a JSON object of more variables (enable_thinking, ...)
    std::optional<std::tm> now;              // what strftime_now formats; the local time when unset
};

class ChatTemplate {
public:
    // Parses the template; throws jinja::TemplateError naming the line and the construct it
    // cannot run (a template is refused whole, never rendered differently).
    ChatTemplate(std::string source, std::string bos_token, std::string eos_token)
        : source_(std::move(source)), bos_(std::move(bos_token)), eos_(std::move(eos_token)), template_(source_) {}

    // The prompt for `messages`, a JSON array of objects with a string "role" and a "content"
    // (a string, a list of parts, or null), as the chat completions API sends them. Throws
    // ArgumentError for messages that are not that shape, and jinja::TemplateError for what
    // the template itself refuses (raise_exception's message, as the template words it).
    std::string apply(const io::JsonValue& messages, const ChatOptions& options = {}) const {
        if (!messages.is_array()) throw ArgumentError("messages must be an array, not " + messages.describe());
        for (std::size_t i = 0; i < messages.elements().size(); ++i) {
            const io::JsonValue& m = messages.elements()[i];
            const io::JsonValue* role = m.is_object() ? m.find("role") : nullptr;
            if (!role || !role->is_string())
                throw ArgumentError("messages[" + std::to_string(i) + "] must be an object with a string \"role\"");
        }
        jinja::Object variables;
        if (options.variables) {
            if (!options.variables->is_object()) throw ArgumentError("chat template variables must be a JSON object");
            for (const auto& m : options.variables->members()) variables.set(m.key, jinja::Value::from_json(m.value));
        }
        variables.set("messages", jinja::Value::from_json(messages));
        variables.set("add_generation_prompt", jinja::Value(options.add_generation_prompt));
        if (options.tools && !options.tools->is_null()) {
            if (!options.tools->is_array()) throw ArgumentError("tools must be an array, not " + options.tools->describe());
            variables.set("tools", jinja::Value::from_json(*options.tools));
        }
        return render(std::move(variables), options.now);
    }

    // The template over `variables` as they are, with transformers' globals added
    // (raise_exception, strftime_now, and bos_token / eos_token unless given).
    std::string render(jinja::Object variables, std::optional<std::tm> now = std::nullopt) const {
        if (!variables.find("bos_token")) variables.set("bos_token", jinja::Value(bos_));
        if (!variables.find("eos_token")) variables.set("eos_token", jinja::Value(eos_));
        variables.set("raise_exception", jinja::Value::function("raise_exception", [](const jinja::Arguments& a) -> jinja::Value {
                          throw jinja::TemplateError(a.positional.empty() ? std::string() : a.positional[0].str());
                      }));
        variables.set("strftime_now", jinja::Value::function("strftime_now", [now](const jinja::Arguments& a) {
                          if (a.positional.empty() || !a.positional[0].is_string())
                              throw jinja::TemplateError("strftime_now() takes a format string");
                          return jinja::Value(format_time(a.positional[0].as_string(), now));
                      }));
        return template_.render(variables);
    }

    const std::string& source() const noexcept { return source_; }
    const std::string& bos_token() const noexcept { return bos_; }
    const std::string& eos_token() const noexcept { return eos_; }

private:
    static std::string format_time(const std::string& format, std::optional<std::tm> now) {
        std::tm tm{};
        if (now) {
            tm = *now;
        } else {
            const std::time_t t = std::time(nullptr);
            localtime_r(&t, &tm);
        }
        // strftime's 0 means "did not fit" and "empty": a trailing mark tells them apart.
        const std::string f = format + "|";
        for (std::size_t size = 64; size <= (1u << 16); size *= 4) {
            std::string out(size, '\0');
            const std::size_t n = std::strftime(out.data(), out.size(), f.c_str(), &tm);
            if (n > 0) {
                out.resize(n - 1);
                return out;
            }
        }
        throw jinja::TemplateError("strftime_now(): the formatted time is too long");
    }

    std::string source_, bos_, eos_;
    jinja::Template template_;
};

}  // namespace tessera::chat
