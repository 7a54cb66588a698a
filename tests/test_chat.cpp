// Chat templates (include/tessera/chat): rendered byte for byte as Jinja2 renders them under
// transformers' settings, over the templates in tests/data/chat/templates (written in the
// styles of the major families) and generated conversations; tools/make_chat_template_vectors.py
// writes what Jinja2 rendered, or the error it raised, to tests/data/chat/vectors.json.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <tessera/chat/chat_template.hpp>
#include <tessera/io/gguf_writer.hpp>
#include <tessera/models/open_chat_template.hpp>

#include <nlohmann/json.hpp>

#include "../examples/server/tool_calls.hpp"

using tessera::chat::ChatOptions;
using tessera::chat::ChatTemplate;
using tessera::chat::jinja::Object;
using tessera::chat::jinja::TemplateError;
using tessera::chat::jinja::Value;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const tessera::io::JsonValue& vectors() {
    static const tessera::io::JsonValue v =
        tessera::io::parse_json(read_file(TESSERA_TEST_DATA_DIR "/chat/vectors.json"), "vectors.json");
    return v;
}

// The moment the vectors' strftime_now formats: 2026-12-03 14:05:09, a Thursday.
std::tm vectors_now() {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 11;
    tm.tm_mday = 3;
    tm.tm_hour = 14;
    tm.tm_min = 5;
    tm.tm_sec = 9;
    tm.tm_wday = 4;
    tm.tm_yday = 336;
    return tm;
}

// Every case of one template: the same text as Jinja2, or an error where Jinja2 raised one
// (with raise_exception's message where that was the error).
void check_template(const std::string& name) {
    const ChatTemplate chat(read_file(TESSERA_TEST_DATA_DIR "/chat/templates/" + name + ".jinja"), "", "");
    int cases = 0;
    for (const auto& c : vectors().find("cases")->elements()) {
        if (c.find("template")->as_string() != name) continue;
        ++cases;
        INFO("template " << name << ", conversation " << c.find("conversation")->as_string());
        Object variables;
        for (const auto& m : c.find("variables")->members()) variables.set(m.key, Value::from_json(m.value));
        if (const auto* expected = c.find("expected")) {
            CHECK(chat.render(variables, vectors_now()) == expected->as_string());
        } else {
            const std::string error = c.find("error")->as_string();
            if (error.empty()) {
                CHECK_THROWS_AS(chat.render(variables, vectors_now()), TemplateError);
            } else {
                CHECK_THROWS_WITH(chat.render(variables, vectors_now()), error);
            }
        }
    }
    REQUIRE(cases >= 14);
}

std::string render(const std::string& source, Object variables = {}) {
    return ChatTemplate(source, "<s>", "</s>").render(std::move(variables));
}

// Parsing or rendering `source` is an error whose message contains `message`.
void check_refused(const std::string& source, const std::string& message) {
    INFO(source);
    CHECK_THROWS_WITH(render(source), Catch::Contains(message));
}

}  // namespace

TEST_CASE("Chat templates as Jinja2 renders them: ChatML (SmolLM2)", "[chat]") { check_template("chatml"); }
TEST_CASE("Chat templates as Jinja2 renders them: Qwen2.5 with tools", "[chat]") { check_template("qwen2_5"); }
TEST_CASE("Chat templates as Jinja2 renders them: Qwen3 with thinking", "[chat]") { check_template("qwen3"); }
TEST_CASE("Chat templates as Jinja2 renders them: Llama 3.1 with tools and dates", "[chat]") { check_template("llama3_1"); }
TEST_CASE("Chat templates as Jinja2 renders them: Mistral [INST]", "[chat]") { check_template("mistral_inst"); }
TEST_CASE("Chat templates as Jinja2 renders them: Gemma", "[chat]") { check_template("gemma"); }
TEST_CASE("Chat templates as Jinja2 renders them: Phi-3", "[chat]") { check_template("phi3"); }
TEST_CASE("Chat templates as Jinja2 renders them: DeepSeek-R1", "[chat]") { check_template("deepseek_r1"); }
TEST_CASE("Chat templates as Jinja2 renders them: Zephyr", "[chat]") { check_template("zephyr"); }
TEST_CASE("Chat templates as Jinja2 renders them: filters, tests, loops, macros, whitespace", "[chat]") {
    check_template("features");
}

TEST_CASE("Chat templates: apply() gives the template messages, tools and the generation prompt", "[chat]") {
    const ChatTemplate chat(read_file(TESSERA_TEST_DATA_DIR "/chat/templates/qwen2_5.jinja"), "", "<|im_end|>");
    for (const auto& c : vectors().find("cases")->elements()) {
        if (c.find("template")->as_string() != "qwen2_5" || c.find("conversation")->as_string() != "tool_use") continue;
        const auto& v = *c.find("variables");
        ChatOptions options;
        options.add_generation_prompt = v.find("add_generation_prompt")->as_bool();
        options.tools = v.find("tools");
        CHECK(chat.apply(*v.find("messages"), options) == c.find("expected")->as_string());
    }
    const auto bad = [&](const std::string& json) { return chat.apply(tessera::io::parse_json(json, "messages")); };
    CHECK_THROWS_WITH(bad(R"({"role": "user"})"), Catch::Contains("messages must be an array"));
    CHECK_THROWS_WITH(bad(R"([{"role": "user", "content": "a"}, {"content": "b"}])"),
                      Catch::Contains("messages[1] must be an object with a string \"role\""));
    CHECK_THROWS_WITH(bad(R"([{"role": 3}])"), Catch::Contains("messages[0]"));
}

TEST_CASE("Chat templates: Python's printing of numbers, as str() and json.dumps() write them", "[chat]") {
    using tessera::chat::jinja::python_float;
    CHECK(python_float(0.1) == "0.1");
    CHECK(python_float(1.0) == "1.0");
    CHECK(python_float(-0.0) == "-0.0");
    CHECK(python_float(100.0) == "100.0");
    CHECK(python_float(1e15) == "1000000000000000.0");
    CHECK(python_float(1e16) == "1e+16");
    CHECK(python_float(1.2345678901234568e17) == "1.2345678901234568e+17");
    CHECK(python_float(1e-4) == "0.0001");
    CHECK(python_float(1e-5) == "1e-05");
    CHECK(python_float(5e-324) == "5e-324");
    CHECK(python_float(0.30000000000000004) == "0.30000000000000004");
    CHECK(python_float(2.5e-300) == "2.5e-300");
    CHECK(render("{{ [1, 2.0, 'a\\'b', \"c\\\"d\", none] }}|{{ {'k': (1,)} }}") == "[1, 2.0, \"a'b\", 'c\"d', None]|{'k': (1,)}");
    CHECK(render("{{ x|tojson }}", [] {
              Object o;
              o.set("x", Value::from_json(tessera::io::parse_json(R"({"a": [1, 1.5, -0.0, 1e300, "\u0001\u00e9"]})", "x")));
              return o;
          }()) == "{\"a\": [1, 1.5, -0.0, 1e+300, \"\\u0001\xc3\xa9\"]}");
}

TEST_CASE("Chat templates: what the engine cannot run is refused by name, with its line", "[chat]") {
    check_refused("{% include 'other.jinja' %}", "the statement 'include' is not supported");
    check_refused("a\n{% extends 'base' %}", "template line 2: the statement 'extends' is not supported");
    check_refused("{% call m() %}x{% endcall %}", "the statement 'call' is not supported");
    check_refused("{% filter upper %}x{% endfilter %}", "the statement 'filter' is not supported");
    check_refused("{% raw %}x{% endraw %}", "the statement 'raw' is not supported");
    check_refused("{{ 'x'|no_such_filter }}", "no filter named 'no_such_filter'");
    check_refused("{{ 1 is no_such_test }}", "no test named 'no_such_test'");
    check_refused("{% for x in [1] recursive %}{% endfor %}", "recursive for loops are not supported");
    check_refused("{{ '%s'|format(1) }}", "no filter named 'format'");
    check_refused("{{ '%s' % 1 }}", "printf-style string formatting");
    check_refused("{{ x|tojson(ensure_ascii=true) }}", "tojson: the argument ensure_ascii is not supported");
    check_refused("{% set a, b = 1, 2 %}", "assigning to several names at once is not supported");
}

TEST_CASE("Chat templates: bad templates and bad runs are errors that name the problem", "[chat]") {
    check_refused("{{ x ", "a tag is not closed with }}");
    check_refused("{% if x %}", "the template ended where elif or else or endif was expected");
    check_refused("{# never closed", "a comment is not closed");
    check_refused("{{ 'abc }}", "a string is not closed");
    check_refused("{{ a ? b }}", "unexpected character '?'");
    check_refused("{{ nothing.attribute }}", "'nothing' is undefined");
    check_refused("{{ [1].append(2) }}", "access to attribute 'append' of 'list' object is unsafe");
    check_refused("{{ {}.update({}) }}", "access to attribute 'update' of 'dict' object is unsafe");
    check_refused("{% set d = {} %}{% set d.x = 1 %}", "cannot assign attribute on non-namespace object 'd'");
    check_refused("{{ 1 / 0 }}", "division by zero");
    check_refused("{{ 'a' + 1 }}", "unsupported operand type(s) for +: 'str' and 'int'");
    check_refused("{{ 1 < 'a' }}", "'<' not supported between instances of 'int' and 'str'");
    check_refused("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "macro 'm' called more than 64 deep");
    check_refused("{% for i in range(10000000) %}{% endfor %}", "range() of 10000000 elements");
    check_refused("{{ raise_exception('Roles must alternate') }}", "Roles must alternate");
    check_refused("{{ 99999999999999999999 }}", "integer 99999999999999999999 is too large");
    // A hostile template (chat templates come inside downloaded files) is refused, not run out of
    // stack, memory or time.
    check_refused("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}", "nested deeper than 100");
    check_refused("{{ " + std::string(1500, '-') + "1 }}", "nested deeper than 100");
    std::string deep_ifs;
    for (int i = 0; i < 500; ++i) deep_ifs += "{% if true %}";
    check_refused(deep_ifs, "nested deeper than 100");
    std::string long_sum = "{{ 1";
    for (int i = 0; i < 3000; ++i) long_sum += " + 1";
    check_refused(long_sum + " }}", "a tag of more than 2048 tokens");
    check_refused("{{ 'x' * 1000000000 }}", "repeating a value 1000000000 times");
    check_refused("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
          "bytes or elements: more than this engine builds");
    check_refused("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}",
          "more than 1000000 loop iterations and macro calls");
    check_refused("{% for i in range(100000) %}{{ 'a' * 1000 }}{% endfor %}", "the output passed");
    // Jinja2's whitespace rules around an unknown construct still report the right line.
    check_refused("line 1\n\n{%- if true %}\n{{ x.y.z }}{% endif %}", "template line 4: 'x' is undefined");
}

namespace {

// A fresh directory for one test, removed at its end.
struct ScratchDir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("tessera_chat_" + std::to_string(::getpid()));
    ScratchDir() {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~ScratchDir() { std::filesystem::remove_all(path); }
    void write(const std::string& name, const std::string& text) const { std::ofstream(path / name, std::ios::binary) << text; }
};

}  // namespace

TEST_CASE("Chat templates are found where models keep them: GGUF metadata, chat_template.jinja, tokenizer_config.json", "[chat]") {
    const ScratchDir dir;
    const std::string source = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}";
    const auto messages = tessera::io::parse_json(R"([{"role": "user", "content": "hi"}])", "messages");

    tessera::io::GgufWriter w;
    w.add_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.add_u32("tokenizer.ggml.bos_token_id", 1);
    w.add_u32("tokenizer.ggml.eos_token_id", 2);
    w.add_string("tokenizer.chat_template", source);
    w.write(dir.path / "model.gguf");
    const auto from_gguf = tessera::open_chat_template(dir.path / "model.gguf");
    REQUIRE(from_gguf);
    CHECK(from_gguf->source() == source);
    CHECK(from_gguf->apply(messages) == "<s>hi</s>");

    tessera::io::GgufWriter bad;
    bad.add_strings("tokenizer.ggml.tokens", {"<unk>"});
    bad.add_u32("tokenizer.ggml.eos_token_id", 7);
    bad.add_string("tokenizer.chat_template", source);
    bad.write(dir.path / "bad.gguf");
    CHECK_THROWS_WITH(tessera::open_chat_template(dir.path / "bad.gguf"),
                      Catch::Contains("tokenizer.ggml.eos_token_id 7 is outside the vocabulary (1 tokens)"));

    tessera::io::GgufWriter none;
    none.add_strings("tokenizer.ggml.tokens", {"a"});
    none.write(dir.path / "none.gguf");
    CHECK_FALSE(tessera::open_chat_template(dir.path / "none.gguf"));

    // A directory: tokenizer_config.json's string, its list's "default", chat_template.jinja first.
    const std::filesystem::path hf = dir.path / "hf";
    std::filesystem::create_directories(hf);
    CHECK_FALSE(tessera::open_chat_template(hf));
    std::ofstream(hf / "tokenizer_config.json") << R"({"bos_token": {"content": "<B>"}, "eos_token": "<E>", "chat_template": "{{ bos_token }}x{{ eos_token }}"})";
    CHECK(tessera::open_chat_template(hf)->apply(messages) == "<B>x<E>");
    std::ofstream(hf / "tokenizer_config.json") << R"({"eos_token": null, "chat_template": [{"name": "tool_use", "template": "t"}, {"name": "default", "template": "d{{ eos_token }}"}]})";
    CHECK(tessera::open_chat_template(hf)->apply(messages) == "d");
    std::ofstream(hf / "chat_template.jinja") << "from the file";
    CHECK(tessera::open_chat_template(hf)->apply(messages) == "from the file");
    std::filesystem::remove(hf / "chat_template.jinja");
    std::ofstream(hf / "tokenizer_config.json") << R"({"chat_template": [{"name": "tool_use", "template": "t"}]})";
    CHECK_THROWS_WITH(tessera::open_chat_template(hf), Catch::Contains("chat_template lists no template named \"default\""));
    std::ofstream(hf / "tokenizer_config.json") << R"({"chat_template": 3})";
    CHECK_THROWS_WITH(tessera::open_chat_template(hf), Catch::Contains("chat_template must be a string or a list"));
    std::ofstream(hf / "tokenizer_config.json") << R"({"chat_template": "{% if %}"})";
    CHECK_THROWS_AS(tessera::open_chat_template(hf), TemplateError);
}

// Tool calls: the template, verified against Jinja2 above, is the reference for the syntax a
// model calls tools in. An assistant message with calls rendered by it must split back into the
// same calls, whole or streamed in any pieces, with no piece of a call sent as text.
TEST_CASE("tool calls rendered by a template split back into the same calls, whole or streamed in pieces") {
    using namespace tessera::server;
    const auto calls_json = [](bool two) {
        std::string calls = R"([{"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}})";
        if (two) calls += R"(, {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}})";
        return calls + "]";
    };
    struct Case {
        std::string name;
        ToolCallSyntax syntax;
        bool two_calls;
        std::string content;  // the assistant's text beside its calls ("null": none)
    };
    for (const Case& k : {Case{"qwen2_5", ToolCallSyntax::tagged, true, "\"Let me check.\""}, Case{"qwen2_5", ToolCallSyntax::tagged, false, "null"},
                          Case{"qwen3", ToolCallSyntax::tagged, true, "\"Checking both.\""}, Case{"llama3_1", ToolCallSyntax::json_object, false, "null"}}) {
        INFO(k.name << (k.two_calls ? ", two calls" : ", one call"));
        const std::string source = read_file(TESSERA_TEST_DATA_DIR "/chat/templates/" + k.name + ".jinja");
        REQUIRE(tool_call_syntax(source) == k.syntax);
        const ChatTemplate chat(source, "", "");
        const auto messages = [&](bool reply) {
            std::string m = R"([{"role": "user", "content": "Weather and time in Tokyo?"})";
            if (reply) m += R"(, {"role": "assistant", "content": )" + k.content + R"(, "tool_calls": )" + calls_json(k.two_calls) + "}";
            return tessera::io::parse_json(m + "]", "messages");
        };
        ChatOptions prompt_only;
        prompt_only.add_generation_prompt = true;
        const std::string prompt = chat.apply(messages(false), prompt_only);
        const std::string whole = chat.apply(messages(true));
        REQUIRE(whole.substr(0, prompt.size()) == prompt);
        std::string reply = whole.substr(prompt.size());
        reply = reply.substr(0, std::min(reply.find("<|im_end|>"), reply.find("<|eot_id|>")));  // what the model writes before its end of turn

        const SplitReply split = split_tool_calls(reply, k.syntax);
        REQUIRE(split.calls.size() == (k.two_calls ? 2U : 1U));
        const nlohmann::json expected = nlohmann::json::parse(calls_json(k.two_calls));
        for (std::size_t i = 0; i < split.calls.size(); ++i) {
            CHECK(split.calls[i].name == expected[i]["function"]["name"]);
            CHECK(nlohmann::json::parse(split.calls[i].arguments) == expected[i]["function"]["arguments"]);
        }
        // (Qwen3's template writes an empty thinking block before the content, as its models do.)
        const std::string content = k.content == "null" ? "" : nlohmann::json::parse(k.content).get<std::string>();
        CHECK(split.content.size() >= content.size());
        CHECK(split.content.substr(split.content.size() - content.size()) == content);
        CHECK(split_tool_calls(reply, ToolCallSyntax::none).content == reply);  // without tools, a reply is text

        for (const std::size_t step : {1, 2, 3, 7, 1000}) {
            ToolCallStream stream(k.syntax);
            std::string sent;
            for (std::size_t at = 0; at < reply.size(); at += step) sent += stream.push(reply.substr(at, step));
            CHECK(sent.find('{') == std::string::npos);  // no piece of a call went out as text
            ToolCallStream::End end = stream.finish();
            CHECK(sent + end.content == split.content);
            REQUIRE(end.calls.size() == split.calls.size());
            for (std::size_t i = 0; i < end.calls.size(); ++i) CHECK(end.calls[i].arguments == split.calls[i].arguments);
        }
    }
    for (const char* other : {"chatml", "gemma", "mistral_inst", "phi3", "zephyr"})
        CHECK(tool_call_syntax(read_file(TESSERA_TEST_DATA_DIR "/chat/templates/" + std::string(other) + ".jinja")) == ToolCallSyntax::none);
}

TEST_CASE("text that only looks like a tool call stays text, and streams whole") {
    using namespace tessera::server;
    for (const auto& [syntax, reply] : std::vector<std::pair<ToolCallSyntax, std::string>>{
             {ToolCallSyntax::tagged, "Use <tool_call> tags: <tool_call>{\"name\": 1}</tool_call>"},
             {ToolCallSyntax::tagged, "<tool_call>not json</tool_call> and more"},
             {ToolCallSyntax::tagged, "a < b, and <tool_ca"},
             {ToolCallSyntax::json_object, "{\"temperature\": 3}"},
             {ToolCallSyntax::json_object, "  {unfinished"},
             {ToolCallSyntax::json_object, "Sure: {\"name\": \"f\", \"parameters\": {}}"}}) {
        INFO(reply);
        CHECK(split_tool_calls(reply, syntax).calls.empty());
        CHECK(split_tool_calls(reply, syntax).content == reply);
        ToolCallStream stream(syntax);
        std::string sent;
        for (const char c : reply) sent += stream.push(std::string(1, c));
        CHECK(sent + stream.finish().content == reply);
    }
    // A call cut off by the token limit (no closing tag) is still read, if its JSON is whole.
    const SplitReply cut = split_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n", ToolCallSyntax::tagged);
    REQUIRE(cut.calls.size() == 1);
    CHECK(cut.calls[0].arguments == R"({"x":1})");
    CHECK(cut.content.empty());
    // Arguments sent as JSON text stay that text; "parameters" is read as "arguments".
    CHECK(split_tool_calls(R"({"name": "f", "parameters": {"a": [1, 2]}})", ToolCallSyntax::json_object).calls.at(0).arguments == R"({"a":[1,2]})");
    CHECK(split_tool_calls(R"(<tool_call>{"name": "f", "arguments": "{\"a\": 1}"}</tool_call>)", ToolCallSyntax::tagged).calls.at(0).arguments == R"({"a": 1})");
}
