// Tool calls in a chat model's reply, as OpenAI's `tool_calls`.
//
// A model calls a tool by writing text in the syntax its chat template shows it (the template
// renders earlier calls that way, and its system prompt asks for it), so the syntax is found in
// the template: Hermes' and Qwen's `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
// blocks (any number), or Llama 3.x's reply that is one JSON object `{"name": ..., "parameters":
// {...}}`. What does not parse as a call stays text: a reply is never lost for looking like one.
// Streamed, the text that may begin a call is held back until it is known (ToolCallStream).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::server {

enum class ToolCallSyntax {
    none,         // the template shows no calls: replies are text
    tagged,       // <tool_call>{"name": ..., "arguments": ...}</tool_call>, one block per call
    json_object,  // the whole reply is {"name": ..., "parameters": ...} (Llama 3.x)
};

// The syntax a chat template renders an assistant's tool calls in.
inline ToolCallSyntax tool_call_syntax(std::string_view template_source) {
    if (template_source.find("<tool_call>") != std::string_view::npos) return ToolCallSyntax::tagged;
    if (template_source.find("tool_calls") != std::string_view::npos && template_source.find("\"parameters\": ") != std::string_view::npos)
        return ToolCallSyntax::json_object;
    return ToolCallSyntax::none;
}

struct ToolCall {
    std::string name;
    std::string arguments;  // a JSON object as text, as OpenAI sends it
};

struct SplitReply {
    std::string content;  // the text outside the calls (trailing whitespace dropped)
    std::vector<ToolCall> calls;
};

namespace detail {

inline constexpr std::string_view open_tag = "<tool_call>", close_tag = "</tool_call>";

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// A call from its JSON text: an object with a string "name" and an object (or JSON text)
// under `arguments` or `parameters`. False when it is not one.
inline bool parse_call(std::string_view text, ToolCall& call) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return false;
    const auto name = j.find("name");
    if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
    auto args = j.find("arguments");
    if (args == j.end()) args = j.find("parameters");
    call.name = name->get<std::string>();
    if (args == j.end()) call.arguments = "{}";
    else if (args->is_string()) call.arguments = args->get<std::string>();
    else if (args->is_object()) call.arguments = args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    else return false;
    return true;
}

}  // namespace detail

// The calls in a finished reply, and the text around them. All or nothing: if any block does not
// parse, the whole reply is text.
inline SplitReply split_tool_calls(std::string_view reply, ToolCallSyntax syntax) {
    using namespace detail;
    SplitReply split;
    const auto as_text = [&] { return SplitReply{std::string(reply.substr(0, trim(reply).empty() ? 0 : reply.size())), {}}; };
    if (syntax == ToolCallSyntax::json_object) {
        const std::string_view body = trim(reply);
        ToolCall call;
        if (body.empty() || body.front() != '{' || !parse_call(body, call)) return as_text();
        split.calls.push_back(std::move(call));
        return split;
    }
    if (syntax != ToolCallSyntax::tagged) return as_text();
    std::size_t at = 0;
    for (std::size_t open; (open = reply.find(open_tag, at)) != std::string_view::npos;) {
        split.content.append(reply.substr(at, open - at));
        const std::size_t start = open + open_tag.size();
        const std::size_t close = reply.find(close_tag, start);
        // A call cut off before its closing tag (the reply ended there) is read to the end.
        const std::size_t end = close == std::string_view::npos ? reply.size() : close;
        ToolCall call;
        if (!parse_call(trim(reply.substr(start, end - start)), call)) return as_text();
        split.calls.push_back(std::move(call));
        at = close == std::string_view::npos ? reply.size() : close + close_tag.size();
    }
    split.content.append(reply.substr(at));
    while (!split.content.empty() && is_space(split.content.back())) split.content.pop_back();
    if (split.calls.empty()) return as_text();
    return split;
}

// A streamed reply's text as it may go out while calls are possible: push() gives the content
// that can be sent now (holding back what may begin a call), finish() the calls and the content
// still owed, the same as split_tool_calls on the whole reply.
class ToolCallStream {
public:
    explicit ToolCallStream(ToolCallSyntax syntax) : syntax_(syntax) {}

    std::string push(std::string_view piece) {
        text_ += piece;
        if (holding_ || syntax_ == ToolCallSyntax::none) return release(holding_ ? sent_ : text_.size());
        std::size_t safe = text_.size();
        if (syntax_ == ToolCallSyntax::tagged) {
            // What was sent holds no beginning of the tag (that is held back), so the search starts there.
            if (const std::size_t open = text_.find(detail::open_tag, sent_); open != std::string::npos) {
                holding_ = true;
                safe = open;
            } else {  // the longest end that could begin the tag waits for the next piece
                for (std::size_t n = std::min(detail::open_tag.size() - 1, text_.size()); n > 0; --n) {
                    if (detail::open_tag.substr(0, n) == std::string_view(text_).substr(text_.size() - n)) {
                        safe = text_.size() - n;
                        break;
                    }
                }
            }
            // Spaces before a call are not content (split_tool_calls drops them): they wait to
            // see what follows.
            while (safe > sent_ && detail::is_space(text_[safe - 1])) --safe;
        } else {  // json_object: a reply that opens with '{' (after spaces) is held whole
            const std::size_t first = text_.find_first_not_of(" \t\r\n");
            if (first == std::string::npos || text_[first] == '{') safe = sent_;
            holding_ = first != std::string::npos && text_[first] == '{';
        }
        return release(std::max(safe, sent_));
    }

    struct End {
        std::string content;  // still to send
        std::vector<ToolCall> calls;
    };
    End finish() {
        SplitReply split = split_tool_calls(text_, syntax_);
        if (split.calls.empty()) return {text_.substr(sent_), {}};
        return {split.content.size() > sent_ ? split.content.substr(sent_) : std::string(), std::move(split.calls)};
    }

private:
    std::string release(std::size_t upto) {
        std::string out = text_.substr(sent_, upto - sent_);
        sent_ = upto;
        return out;
    }

    ToolCallSyntax syntax_;
    std::string text_;
    std::size_t sent_ = 0;
    bool holding_ = false;
};

// OpenAI's tool_calls array; `id_prefix` makes the calls' ids (id_prefix + "_" + index).
inline nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& id_prefix, bool with_index = false) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < calls.size(); ++i) {
        nlohmann::json call = {{"id", id_prefix + "_" + std::to_string(i)},
                               {"type", "function"},
                               {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (with_index) call["index"] = i;  // a stream's deltas number their calls
        out.push_back(std::move(call));
    }
    return out;
}

}  // namespace tessera::server
