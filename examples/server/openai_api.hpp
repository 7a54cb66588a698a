#pragma once
// OpenAI's completions and chat completions APIs as the server speaks them: a request body
// checked field by field into a CompletionRequest (an ApiError naming the parameter otherwise),
// a chat's messages rendered by the model's chat template, and the JSON of responses, stream
// chunks and errors. No HTTP here, so that all of it can be read (and tested) alone.
#include <nlohmann/json.hpp>

#include <cmath>        // std::isfinite
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t
#include <cstdio>       // std::snprintf
#include <limits>       // std::numeric_limits
#include <optional>     // std::optional
#include <stdexcept>    // std::runtime_error
#include <string>       // std::string, std::to_string
#include <string_view>  // std::string_view
#include <utility>      // std::move, std::cmp_less_equal
#include <vector>       // std::vector

#include "../command_line.hpp"  // parse_whole_number
#include "../json_excerpt.hpp"  // dump, json_excerpt

#include <tessera/chat/chat_template.hpp>           // ChatTemplate
#include <tessera/core/error.hpp>                   // ArgumentError
#include <tessera/io/json.hpp>                      // parse_json: the messages as the template reads them
#include <tessera/generation/completion.hpp>        // Completion, StopReason
#include <tessera/generation/completion_state.hpp>  // GenerationOptions
#include <tessera/generation/stop_strings.hpp>      // StopStrings
#include <tessera/sampling/sampler.hpp>             // SamplingParams, make_sampler
#include <tessera/text/tokenizer.hpp>               // Tokenizer

namespace tessera::server {

using nlohmann::json;

// An error a client gets as OpenAI's error object with an HTTP status.
struct ApiError : std::runtime_error {
    ApiError(int status_, std::string message, std::string param_ = {}, std::string type_ = "invalid_request_error")
        : std::runtime_error(std::move(message)), status(status_), param(std::move(param_)), type(std::move(type_)) {}
    int status;
    std::string param;  // the request field at fault ("" when none)
    std::string type;
};

inline json error_body(std::string_view message, std::string_view type, std::string_view param = {}) {
    return {{"error",
             {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}, {"code", nullptr}}}};
}

using cli::dump;  // JSON as text, bytes that are not UTF-8 as U+FFFD

// What the server allows beyond the model's own limits.
struct RequestLimits {
    std::size_t max_choices = 16;     // prompts x n in one request
    std::size_t max_stop = 16;        // stop strings
    std::size_t max_logprobs = 20;    // alternatives per token
    std::size_t max_tokens = 1 << 20; // max_tokens
};

struct CompletionRequest {
    std::vector<std::vector<TokenId>> prompts;  // each prompt's ids
    std::vector<std::string> prompt_texts;      // each prompt as text (for echo)
    std::size_t n = 1;                          // choices per prompt
    bool stream = false, include_usage = false, echo = false;
    bool chat = false;  // /v1/chat/completions: messages in, an assistant message out
    bool tools = false;  // chat with tools (and tool_choice not "none"): calls in the reply become tool_calls
    GenerationOptions generation;
    SamplingParams sampling;  // the seed of choice i of a prompt is seed + i
    std::string user;
    std::size_t choices() const noexcept { return prompts.size() * n; }
};

namespace detail {

inline const json* field(const json& body, const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

inline ApiError invalid(const std::string& param, const std::string& message) {
    return ApiError(400, "'" + param + "' " + message, param);
}

template <class T>
T integer(const json& v, const std::string& param, T lo, T hi) {
    // Whole numbers only (16.0 and "16" are not max_tokens); out-of-range values are named,
    // never wrapped or clamped. nlohmann keeps non-negative integers unsigned, negative signed.
    if (!v.is_number_integer()) throw invalid(param, "must be an integer, got " + cli::json_excerpt(v));
    const auto in = [&](auto x) { return std::cmp_greater_equal(x, lo) && std::cmp_less_equal(x, hi); };
    if (v.is_number_unsigned() ? !in(v.get<std::uint64_t>()) : !in(v.get<std::int64_t>())) {
        throw invalid(param, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + cli::json_excerpt(v));
    }
    return v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>()) : static_cast<T>(v.get<std::int64_t>());
}

inline double number(const json& v, const std::string& param, double lo, bool lo_open, double hi) {
    if (!v.is_number()) throw invalid(param, "must be a number, got " + cli::json_excerpt(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || (lo_open ? x <= lo : x < lo) || x > hi) {
        throw invalid(param, "must be in " + std::string(lo_open ? "(" : "[") + dump(json(lo)) + ", " +
                                 (std::isfinite(hi) ? dump(json(hi)) + "]" : "infinity)") + ", got " + cli::json_excerpt(v));
    }
    return x;
}

inline bool boolean(const json& v, const std::string& param) {
    if (!v.is_boolean()) throw invalid(param, "must be true or false, got " + cli::json_excerpt(v));
    return v.get<bool>();
}

inline std::string text(const json& v, const std::string& param) {
    if (!v.is_string()) throw invalid(param, "must be a string, got " + cli::json_excerpt(v));
    return v.get<std::string>();
}

inline std::vector<TokenId> token_ids(const json& v, const std::string& param, std::size_t vocab) {
    std::vector<TokenId> ids;
    for (std::size_t i = 0; i < v.size(); ++i) {
        ids.push_back(integer<TokenId>(v[i], param + "[" + std::to_string(i) + "]", 0, static_cast<TokenId>(vocab - 1)));
    }
    return ids;
}

}  // namespace detail

inline void parse_shared_fields(const json& body, CompletionRequest& r, std::size_t vocab, std::size_t context,
                                const RequestLimits& limits);

// The request body of POST /v1/completions, checked against the tokenizer (token ids, logit_bias
// keys) and the sequence context (prompt length). Unknown fields are ignored, as OpenAI's
// compatible servers do; fields this server cannot honour are refused, never ignored.
inline CompletionRequest parse_completion_request(const json& body, const Tokenizer& tokenizer, std::size_t context,
                                                  const RequestLimits& limits) {
    using namespace detail;
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    CompletionRequest r;
    const std::size_t vocab = tokenizer.vocab_size();

    // prompt: a string, an array of strings, an array of token ids, or an array of those.
    const json* prompt = field(body, "prompt");
    if (!prompt) throw invalid("prompt", "is required");
    const auto add_text = [&](const json& p, const std::string& param) {
        r.prompt_texts.push_back(text(p, param));
        r.prompts.push_back(tokenizer.encode_prompt(r.prompt_texts.back()));
    };
    const auto add_ids = [&](const json& p, const std::string& param) {
        r.prompts.push_back(token_ids(p, param, vocab));
        r.prompt_texts.push_back(tokenizer.decode(r.prompts.back()));
    };
    if (prompt->is_string()) {
        add_text(*prompt, "prompt");
    } else if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number()) {
        add_ids(*prompt, "prompt");
    } else if (prompt->is_array() && !prompt->empty()) {
        for (std::size_t i = 0; i < prompt->size(); ++i) {
            const json& p = (*prompt)[i];
            const std::string param = "prompt[" + std::to_string(i) + "]";
            if (p.is_string()) {
                add_text(p, param);
            } else if (p.is_array()) {
                add_ids(p, param);
            } else {
                throw invalid(param, "must be a string or an array of token ids, got " + cli::json_excerpt(p));
            }
        }
    } else {
        throw invalid("prompt", "must be a string, an array of strings or token ids, or an array of token id arrays (not empty)");
    }

    r.generation.max_new_tokens = 16;  // OpenAI's default
    if (const json* v = field(body, "max_tokens")) r.generation.max_new_tokens = integer<std::size_t>(*v, "max_tokens", 0, limits.max_tokens);
    if (const json* v = field(body, "echo")) r.echo = boolean(*v, "echo");
    if (const json* v = field(body, "logprobs")) {
        r.generation.logprobs = integer<std::size_t>(*v, "logprobs", 0, limits.max_logprobs);
        if (r.echo) throw invalid("logprobs", "with echo is not supported (log-probabilities of prompt tokens)");
    }
    if (const json* v = field(body, "suffix")) throw invalid("suffix", "is not supported (GPT-2 only continues text), got " + cli::json_excerpt(*v));
    parse_shared_fields(body, r, vocab, context, limits);
    if (const json* v = field(body, "best_of"); v && integer<std::size_t>(*v, "best_of", 1, limits.max_choices) != r.n) {
        throw invalid("best_of", "other than n is not supported");
    }
    return r;
}

// The fields both APIs share (model, user, n, stream, stop, sampling, seed, logit_bias), and the
// prompts' length against the sequence context.
inline void parse_shared_fields(const json& body, CompletionRequest& r, std::size_t vocab, std::size_t context,
                                const RequestLimits& limits) {
    using namespace detail;
    if (const json* v = field(body, "model")) (void)text(*v, "model");  // any name: one model is served
    if (const json* v = field(body, "user")) r.user = text(*v, "user");
    if (const json* v = field(body, "n")) r.n = integer<std::size_t>(*v, "n", 1, limits.max_choices);
    if (r.choices() > limits.max_choices) {
        throw invalid("n", "times the number of prompts is " + std::to_string(r.choices()) + "; this server takes at most " +
                               std::to_string(limits.max_choices) + " choices per request");
    }
    if (const json* v = field(body, "stream")) r.stream = boolean(*v, "stream");
    if (const json* v = field(body, "cache_prompt")) r.generation.reuse_cached_prompt = boolean(*v, "cache_prompt");
    if (const json* v = field(body, "stream_options")) {
        if (!v->is_object()) throw invalid("stream_options", "must be an object");
        if (const json* u = field(*v, "include_usage")) r.include_usage = boolean(*u, "stream_options.include_usage");
    }
    if (const json* v = field(body, "stop")) {
        if (v->is_string()) {
            r.generation.stop.push_back(v->get<std::string>());
        } else if (v->is_array() && v->size() <= limits.max_stop) {
            for (std::size_t i = 0; i < v->size(); ++i) r.generation.stop.push_back(text((*v)[i], "stop[" + std::to_string(i) + "]"));
        } else {
            throw invalid("stop", "must be a string or an array of at most " + std::to_string(limits.max_stop) + " strings");
        }
        try {
            (void)StopStrings(r.generation.stop);
        } catch (const ArgumentError& e) {
            throw invalid("stop", e.what());
        }
    }

    SamplingParams& s = r.sampling;
    if (const json* v = field(body, "temperature")) s.temperature = static_cast<float>(number(*v, "temperature", 0, false, 2));
    if (const json* v = field(body, "top_p")) s.top_p = number(*v, "top_p", 0, true, 1);
    if (const json* v = field(body, "top_k")) s.top_k = integer<long>(*v, "top_k", 0, static_cast<long>(vocab));
    if (const json* v = field(body, "min_p")) s.min_p = number(*v, "min_p", 0, false, 1);
    if (const json* v = field(body, "presence_penalty")) s.presence_penalty = static_cast<float>(number(*v, "presence_penalty", -2, false, 2));
    if (const json* v = field(body, "frequency_penalty")) s.frequency_penalty = static_cast<float>(number(*v, "frequency_penalty", -2, false, 2));
    if (const json* v = field(body, "repetition_penalty")) {
        s.repetition_penalty = static_cast<float>(number(*v, "repetition_penalty", 0, true, std::numeric_limits<float>::max()));
    }
    if (const json* v = field(body, "seed")) s.seed = integer<std::uint64_t>(*v, "seed", 0, std::numeric_limits<std::uint64_t>::max());
    if (const json* v = field(body, "logit_bias")) {
        if (!v->is_object()) throw invalid("logit_bias", "must be an object mapping token ids to biases");
        for (const auto& [key, bias] : v->items()) {
            const std::string param = "logit_bias." + key;
            const auto id = cli::parse_whole_number<TokenId>(key, 0, static_cast<TokenId>(vocab - 1));
            if (!id) throw invalid(param, "names no token: keys are token ids from 0 to " + std::to_string(vocab - 1));
            s.logit_bias.emplace_back(*id, static_cast<float>(number(bias, param, -100, false, 100)));
        }
    }
    try {
        (void)make_sampler(s);  // the sampler's own checks, as the command line runs them
    } catch (const ArgumentError& e) {
        throw ApiError(400, e.what());
    }
    for (std::size_t i = 0; i < r.prompts.size(); ++i) {
        if (r.prompts[i].size() >= context) {
            throw invalid(r.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(i) + "]",
                          "has " + std::to_string(r.prompts[i].size()) + " tokens but a sequence holds " + std::to_string(context) +
                              " (one must be left for the answer)");
        }
    }
}

// A JSON value as the chat template reads it (the template engine takes the library's JSON).
inline io::JsonValue template_json(const json& v, const char* where) { return io::parse_json(dump(v), where); }

// The messages of a chat request as the template gets them: each an object with a string
// "role"; a "content" that is a string, null, or a list of text parts (joined into one string,
// as most templates expect a string); the other fields (tool_calls, name, ...) as sent.
inline json chat_messages(const json& body) {
    using namespace detail;
    const json* messages = field(body, "messages");
    if (!messages || !messages->is_array() || messages->empty()) throw invalid("messages", "must be a non-empty array of messages");
    json out = json::array();
    for (std::size_t i = 0; i < messages->size(); ++i) {
        const json& m = (*messages)[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw invalid(param, "must be an object, got " + cli::json_excerpt(m));
        const json* role = field(m, "role");
        if (!role || !role->is_string()) throw invalid(param + ".role", "must be a string");
        json message = m;
        if (const json* content = field(m, "content"); content && content->is_array()) {
            std::string joined;
            for (std::size_t k = 0; k < content->size(); ++k) {
                const json& part = (*content)[k];
                const std::string part_param = param + ".content[" + std::to_string(k) + "]";
                const json* type = part.is_object() ? field(part, "type") : nullptr;
                if (!type || !type->is_string() || type->get<std::string>() != "text")
                    throw invalid(part_param, "must be a text part ({\"type\": \"text\", \"text\": ...}): other parts are not supported");
                const json* t = field(part, "text");
                if (!t || !t->is_string()) throw invalid(part_param + ".text", "must be a string");
                joined += t->get<std::string>();
            }
            message["content"] = joined;
        } else if (content && !content->is_string()) {
            throw invalid(param + ".content", "must be a string, an array of text parts or null, got " + cli::json_excerpt(*content));
        }
        // OpenAI sends a call's arguments as JSON text; templates render them as an object
        // (`arguments | tojson`), as transformers documents: text that is an object becomes one.
        if (auto calls = message.find("tool_calls"); calls != message.end() && calls->is_array()) {
            for (json& call : *calls) {
                json* arguments = call.is_object() && call.contains("function") && call["function"].is_object() &&
                                          call["function"].contains("arguments")
                                      ? &call["function"]["arguments"]
                                      : nullptr;
                if (!arguments || !arguments->is_string()) continue;
                json parsed = json::parse(arguments->get<std::string>(), nullptr, false);
                if (parsed.is_object()) *arguments = std::move(parsed);
            }
        }
        out.push_back(std::move(message));
    }
    return out;
}

// The prompt text a chat request's messages make through `chat_template` (the body's tools,
// add_generation_prompt (default true) and chat_template_kwargs, as llama.cpp's server takes
// them). What the template refuses (roles that do not alternate, ...) is a 400 with its words.
inline std::string chat_prompt(const json& body, const chat::ChatTemplate& chat_template) {
    using namespace detail;
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    const io::JsonValue messages = template_json(chat_messages(body), "messages");
    chat::ChatOptions options;
    if (const json* v = field(body, "add_generation_prompt")) options.add_generation_prompt = boolean(*v, "add_generation_prompt");
    std::optional<io::JsonValue> tools, kwargs;
    if (const json* v = field(body, "tools")) {
        if (!v->is_array()) throw invalid("tools", "must be an array of tools");
        if (!v->empty()) options.tools = &tools.emplace(template_json(*v, "tools"));
    }
    if (const json* v = field(body, "tool_choice");
        v && !(v->is_string() && (v->get<std::string>() == "auto" || v->get<std::string>() == "none")))
        throw invalid("tool_choice", "other than \"auto\" or \"none\" is not supported");
    if (const json* v = field(body, "chat_template_kwargs")) {
        if (!v->is_object()) throw invalid("chat_template_kwargs", "must be an object");
        options.variables = &kwargs.emplace(template_json(*v, "chat_template_kwargs"));
    }
    try {
        return chat_template.apply(messages, options);
    } catch (const chat::jinja::TemplateError& e) {
        throw ApiError(400, std::string("the model's chat template refused the messages: ") + e.what(), "messages");
    }
}

// The request body of POST /v1/chat/completions: the messages through the chat template, then
// tokenized with the special tokens the template writes recognised (and no BOS added: templates
// that want one write it), and the fields completions take, with chat's spellings
// (max_completion_tokens, logprobs as a flag with top_logprobs). max_tokens defaults to what
// the context leaves.
inline CompletionRequest parse_chat_request(const json& body, const Tokenizer& tokenizer, const chat::ChatTemplate& chat_template,
                                            std::size_t context, const RequestLimits& limits) {
    using namespace detail;
    CompletionRequest r;
    r.chat = true;
    r.prompt_texts.push_back(chat_prompt(body, chat_template));
    const json* tools = field(body, "tools");
    const json* choice = field(body, "tool_choice");
    r.tools = tools && tools->is_array() && !tools->empty() && !(choice && *choice == "none");
    r.prompts.push_back(tokenizer.encode(r.prompt_texts.back(), SpecialTokens::allowed));
    r.generation.max_new_tokens = limits.max_tokens;
    for (const char* name : {"max_tokens", "max_completion_tokens"})
        if (const json* v = field(body, name)) r.generation.max_new_tokens = integer<std::size_t>(*v, name, 0, limits.max_tokens);
    const json* top = field(body, "top_logprobs");
    if (const json* v = field(body, "logprobs"); v && boolean(*v, "logprobs")) {
        r.generation.logprobs = top ? integer<std::size_t>(*top, "top_logprobs", 0, limits.max_logprobs) : 0;
    } else if (top) {
        throw invalid("top_logprobs", "needs \"logprobs\": true");
    }
    for (const char* name : {"prompt", "echo", "suffix", "best_of"})
        if (field(body, name)) throw invalid(name, "is a completions field; chat completions take messages");
    parse_shared_fields(body, r, tokenizer.vocab_size(), context, limits);
    return r;
}

// OpenAI's finish_reason: "stop" for the end-of-text token or a stop string, "length" for the
// token budget or a full context.
inline const char* finish_reason(StopReason why) {
    return why == StopReason::eos || why == StopReason::stop_string ? "stop" : "length";
}

// A token as the completions logprobs name it: its text when that is whole UTF-8, else as OpenAI
// names a piece of a character, "bytes:" and each byte as \xNN, so that no two tokens share a
// name (replacing the invalid bytes made the pieces of different characters one key).
inline std::string token_name(std::string_view bytes) {
    if (utf8::first_invalid(bytes) == bytes.size()) return std::string(bytes);
    std::string name = "bytes:";
    for (const char b : bytes) {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(b));
        name += hex;
    }
    return name;
}

// OpenAI's logprobs object for the tokens [from, to) of a completion whose text starts at
// byte `offset` of the choice's text.
inline json logprobs_json(const Completion& c, std::size_t from, std::size_t to, std::size_t offset, const Tokenizer& tokenizer) {
    json tokens = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
    for (std::size_t i = from; i < to && i < c.logprobs.size(); ++i) {
        const TokenLogprob& t = c.logprobs[i];
        const std::string& bytes = tokenizer.token_bytes(t.token);
        tokens.push_back(token_name(bytes));
        logprobs.push_back(t.logprob);
        json alternatives = json::object();
        for (const auto& [id, lp] : t.top) alternatives[token_name(tokenizer.token_bytes(id))] = lp;
        top.push_back(std::move(alternatives));
        offsets.push_back(offset);
        offset += bytes.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

// Chat's logprobs object: per token its text (invalid UTF-8 replaced), log-probability and
// exact bytes, and as many alternatives, each the same, as asked.
inline json chat_logprobs_json(const Completion& c, const Tokenizer& tokenizer) {
    const auto entry = [&](TokenId id, float logprob) {
        const std::string& b = tokenizer.token_bytes(id);
        json bytes = json::array();
        for (const char ch : b) bytes.push_back(static_cast<unsigned char>(ch));
        return json{{"token", utf8::sanitize(b)}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
    };
    json content = json::array();
    for (const TokenLogprob& t : c.logprobs) {
        json e = entry(t.token, t.logprob);
        json top = json::array();
        for (const auto& [id, lp] : t.top) top.push_back(entry(id, lp));
        e["top_logprobs"] = std::move(top);
        content.push_back(std::move(e));
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
}

}  // namespace tessera::server
