// Chat templates on any bytes (they come inside downloaded model files): parsed and rendered over
// a conversation with tools, a TemplateError or a prompt, never a crash, an overflow or a hang
// (the engine bounds nesting, tag length, built values, output and loop iterations).
#include <cstdint>
#include <string>

#include <tessera/chat/chat_template.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const tessera::io::JsonValue messages = tessera::io::parse_json(
        R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi \u00e9 \ud83c\udf0d"},
            {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, true]}}}]},
            {"role": "tool", "content": "ok"}, {"role": "user", "content": [{"type": "text", "text": "parts"}]}])",
        "messages");
    static const tessera::io::JsonValue tools =
        tessera::io::parse_json(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])", "tools");
    std::tm now{};
    now.tm_year = 126;
    now.tm_mday = 3;
    try {
        const tessera::chat::ChatTemplate chat(std::string(tessera::fuzz::as_text(data, size)), "<s>", "</s>");
        tessera::chat::ChatOptions options;
        options.tools = &tools;
        options.now = now;
        (void)chat.apply(messages, options);
    } catch (const tessera::chat::jinja::TemplateError&) {
    }
    return 0;
}
