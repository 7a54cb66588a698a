#pragma once
// JSON as the example programs write it: dump(), a value as text (bytes that are not UTF-8, a
// token cut inside a character, become U+FFFD), and json_excerpt(), a value as an error message
// quotes it: short and bounded. Arrays and objects are shown to a few levels of nesting
// ("[[[[…]]]]") and at most about `max_bytes` long, so that a value nested 100,000 levels deep
// (well within a request's size) neither overflows the stack while its message is written nor
// fills the message.
#include <nlohmann/json.hpp>

#include <cstddef>  // std::size_t
#include <string>   // std::string

namespace tessera::cli {

inline std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

namespace detail {
inline void append_json_excerpt(std::string& out, const nlohmann::json& v, std::size_t depth, std::size_t max_bytes) {
    constexpr std::size_t max_depth = 4;
    if (out.size() >= max_bytes) return;
    if (!v.is_structured()) {
        const std::string text = dump(v);
        out += text.size() <= max_bytes ? text : text.substr(0, max_bytes) + "…";
        return;
    }
    const bool array = v.is_array();
    out += array ? '[' : '{';
    if (depth >= max_depth && !v.empty()) {
        out += "…";
    } else {
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (out.size() >= max_bytes) {
                out += ",…";
                break;
            }
            if (!first) out += ',';
            first = false;
            if (!array) out += dump(nlohmann::json(it.key())) + ':';
            append_json_excerpt(out, *it, depth + 1, max_bytes);
        }
    }
    out += array ? ']' : '}';
}
}  // namespace detail

inline std::string json_excerpt(const nlohmann::json& v, std::size_t max_bytes = 80) {
    std::string out;
    detail::append_json_excerpt(out, v, 0, max_bytes);
    return out;
}

}  // namespace tessera::cli
