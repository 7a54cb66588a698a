#pragma once
// A Jinja template, parsed once and rendered many times. The globals every template has are
// Jinja2's range, namespace and dict; the caller adds its own variables (messages, ...) and
// functions (raise_exception, ...). Rendering is bounded: ranges over a million elements and
// macros nested deeper than 64 calls are refused, so a hostile template from a downloaded file
// cannot hang or exhaust the stack.
#include <string>       // std::string
#include <string_view>  // std::string_view

#include <tessera/chat/jinja/ast.hpp>
#include <tessera/chat/jinja/lexer.hpp>
#include <tessera/chat/jinja/parser.hpp>
#include <tessera/chat/jinja/value.hpp>

namespace tessera::chat::jinja {

class Template {
public:
    // Parses `source`; throws TemplateError naming the line and construct it cannot parse.
    explicit Template(std::string_view source) : body_(Parser(lex(source)).parse()) {}

    // The text, with `variables` (a dict) as the template's globals.
    std::string render(const Object& variables) const {
        Scope globals;
        globals.set("range", Value::function("range", range));
        globals.set("namespace", Value::function("namespace", [](const Arguments& a) { return make_object(a, true); }));
        globals.set("dict", Value::function("dict", [](const Arguments& a) { return make_object(a, false); }));
        for (const auto& [k, v] : variables.members) globals.set(k, v);
        Scope top{{}, &globals};
        Context ctx;
        ctx.scope = &top;
        ctx.top = &top;
        std::string out;
        run_body(body_, ctx, out);
        return out;
    }

private:
    static constexpr std::int64_t max_range = 1'000'000;

    static Value range(const Arguments& a) {
        std::int64_t start = 0, stop = 0, step = 1;
        for (const Value& v : a.positional)
            if (!v.is_integer() && !v.is_bool()) throw TemplateError(std::string("range(): '") + v.type_name() + "' is not an integer");
        if (a.positional.size() == 1) stop = a.positional[0].as_integer();
        else if (a.positional.size() == 2 || a.positional.size() == 3) {
            start = a.positional[0].as_integer();
            stop = a.positional[1].as_integer();
            if (a.positional.size() == 3) step = a.positional[2].as_integer();
        } else throw TemplateError("range() takes 1 to 3 arguments");
        if (step == 0) throw TemplateError("range() arg 3 must not be zero");
        const std::int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                        : (start > stop ? (start - stop - step - 1) / -step : 0);
        if (n > max_range) throw TemplateError("range() of " + std::to_string(n) + " elements: more than this engine allows");
        Array out;
        out.reserve(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) out.emplace_back(start + i * step);
        return Value(std::move(out));
    }

    static Value make_object(const Arguments& a, bool is_namespace) {
        Object o;
        o.is_namespace = is_namespace;
        for (const Value& p : a.positional) {  // namespace(a_dict) / dict(a_dict)
            if (!p.is_object()) throw TemplateError("namespace() / dict(): a positional argument must be a dict");
            for (const auto& [k, v] : p.object().members) o.set(k, v);
        }
        for (const auto& [k, v] : a.named) o.set(k, v);
        return Value(std::move(o));
    }

    Body body_;
};

}  // namespace tessera::chat::jinja
