#pragma once
// What Jinja2 and Python do with values: attribute and item lookup, operators, comparisons,
// the string and dict methods templates call, Jinja2's filters and tests. Each follows the
// Python it stands for (Jinja2 3.1 under transformers' ImmutableSandboxedEnvironment), so a
// method that would change a list or dict is refused there and here. A name that is not here
// is refused by name: a template never renders differently in silence.
#include <algorithm>    // std::sort, std::stable_sort, std::reverse
#include <cmath>        // std::floor, std::fmod, std::pow, std::nearbyint
#include <cstdint>      // std::int64_t
#include <cstdlib>      // std::strtod
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/chat/jinja/value.hpp>

namespace tessera::chat::jinja {

[[noreturn]] inline void fail(int line, const std::string& what) {
    throw TemplateError("template line " + std::to_string(line) + ": " + what);
}

// The most bytes a string, or elements a list, that an operator builds may hold: a template
// from a downloaded file must not exhaust memory ('x' * 10**10, or a string doubled in a loop).
inline constexpr std::size_t max_built_size = std::size_t{1} << 26;


namespace detail {

inline char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }
inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

inline std::string upper(std::string s) {
    for (char& c : s) c = ascii_upper(c);
    return s;
}
inline std::string lower(std::string s) {
    for (char& c : s) c = ascii_lower(c);
    return s;
}

// str.strip / lstrip / rstrip: whitespace, or any of `chars`' code points.
inline std::string strip(std::string_view s, const Value* chars, bool left, bool right) {
    const auto cps = code_points(s);
    std::vector<std::string_view> set;
    const bool by_chars = chars && !chars->is_none() && !chars->is_undefined();
    if (by_chars) set = code_points(chars->as_string());
    const auto strips = [&](std::string_view cp) {
        return by_chars ? std::find(set.begin(), set.end(), cp) != set.end() : cp.size() == 1 && is_python_space(cp[0]);
    };
    std::size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strips(cps[b])) ++b;
    if (right)
        while (e > b && strips(cps[e - 1])) --e;
    std::string out;
    for (std::size_t i = b; i < e; ++i) out += cps[i];
    return out;
}

// str.split(sep=None, maxsplit=-1).
inline Value split(const std::string& s, const Value* sep, const Value* maxsplit, int line) {
    std::int64_t max = maxsplit && maxsplit->is_integer() ? maxsplit->as_integer() : -1;
    Array out;
    if (!sep || sep->is_none()) {
        std::size_t i = 0;
        while (true) {
            while (i < s.size() && is_python_space(s[i])) ++i;
            if (i >= s.size()) break;
            if (max == 0) {
                std::size_t e = s.size();
                while (e > i && is_python_space(s[e - 1])) --e;
                out.emplace_back(s.substr(i, e - i));
                break;
            }
            std::size_t j = i;
            while (j < s.size() && !is_python_space(s[j])) ++j;
            out.emplace_back(s.substr(i, j - i));
            --max;
            i = j;
        }
        return Value(std::move(out));
    }
    if (!sep->is_string()) fail(line, std::string("split: the separator must be a string, not ") + sep->type_name());
    const std::string& d = sep->as_string();
    if (d.empty()) fail(line, "split: empty separator");
    std::size_t i = 0;
    while (true) {
        const std::size_t j = max == 0 ? std::string::npos : s.find(d, i);
        if (j == std::string::npos) {
            out.emplace_back(s.substr(i));
            break;
        }
        out.emplace_back(s.substr(i, j - i));
        --max;
        i = j + d.size();
    }
    return Value(std::move(out));
}

inline std::string replace(const std::string& s, const std::string& from, const std::string& to, std::int64_t count) {
    std::string out;
    std::size_t i = 0;
    if (from.empty()) {  // Python inserts `to` between code points and at both ends
        const auto cps = code_points(s);
        for (std::size_t k = 0; k <= cps.size(); ++k) {
            if (count < 0 || static_cast<std::int64_t>(k) < count) out += to;
            if (k < cps.size()) out += cps[k];
        }
        return out;
    }
    for (std::int64_t n = 0; count < 0 || n < count; ++n) {
        const std::size_t j = s.find(from, i);
        if (j == std::string::npos) break;
        out.append(s, i, j - i);
        out += to;
        i = j + from.size();
    }
    out.append(s, i, std::string::npos);
    return out;
}

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

}  // namespace detail

// Python's len().
inline std::int64_t length_of(const Value& v, int line) {
    if (v.is_string()) return static_cast<std::int64_t>(code_points(v.as_string()).size());
    if (v.is_array()) return static_cast<std::int64_t>(v.array().size());
    if (v.is_object()) return static_cast<std::int64_t>(v.object().members.size());
    if (v.is_undefined()) return 0;
    fail(line, std::string("object of type '") + v.type_name() + "' has no len()");
}

// The elements a for loop visits: a list's, a dict's keys, a string's characters.
inline Array iterate(const Value& v, int line) {
    if (v.is_array()) return v.array();
    if (v.is_undefined()) return {};
    Array out;
    if (v.is_object()) {
        for (const auto& [k, x] : v.object().members) out.emplace_back(k);
        return out;
    }
    if (v.is_string()) {
        for (const auto cp : code_points(v.as_string())) out.emplace_back(std::string(cp));
        return out;
    }
    fail(line, std::string("'") + v.type_name() + "' object is not iterable");
}

Value call_method(const Value& object, const std::string& name, const Arguments& args, int line);

// obj.name: a dict's method, else its member; a string's method.
inline Value attribute(const Value& object, const std::string& name, int line) {
    static constexpr std::string_view dict_methods[] = {"items", "keys", "values", "get"};
    static constexpr std::string_view string_methods[] = {
        "strip", "lstrip", "rstrip", "split", "startswith", "endswith", "upper", "lower", "title", "capitalize",
        "replace", "find", "count", "join", "isdigit", "isspace", "isalpha", "isalnum", "isupper", "islower"};
    static constexpr std::string_view mutating[] = {"append", "pop", "update", "extend", "insert", "remove",
                                                    "clear", "setdefault", "popitem", "sort", "reverse"};
    const auto in = [&](const auto& names) { return std::find(std::begin(names), std::end(names), name) != std::end(names); };
    const auto bound = [&] {
        return Value::function(name, [object, name, line](const Arguments& a) { return call_method(object, name, a, line); });
    };
    if (object.is_undefined()) fail(line, "'" + object.undefined_name() + "' is undefined");
    if ((object.is_array() || (object.is_object() && !object.object().is_namespace)) && in(mutating))
        fail(line, "access to attribute '" + name + "' of '" + object.type_name() +
                       "' object is unsafe (templates may not change their inputs)");
    if (object.is_object()) {
        if (!object.object().is_namespace && in(dict_methods)) return bound();
        if (const Value* v = object.object().find(name)) return *v;
        return Value::undefined(name);
    }
    if (object.is_string() && in(string_methods)) return bound();
    return Value::undefined(name);
}

// obj[key]: a dict's member, a list's or string's element (negative from the end).
inline Value item(const Value& object, const Value& key, int line) {
    if (object.is_undefined()) fail(line, "'" + object.undefined_name() + "' is undefined");
    if (object.is_object()) {
        if (key.is_string())
            if (const Value* v = object.object().find(key.as_string())) return *v;
        return Value::undefined(key.str());
    }
    if ((object.is_array() || object.is_string()) && (key.is_integer() || key.is_bool())) {
        std::int64_t i = key.as_integer();
        if (object.is_array()) {
            const auto n = static_cast<std::int64_t>(object.array().size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) return Value::undefined(key.str());
            return object.array()[static_cast<std::size_t>(i)];
        }
        const auto cps = code_points(object.as_string());
        const auto n = static_cast<std::int64_t>(cps.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined(key.str());
        return Value(std::string(cps[static_cast<std::size_t>(i)]));
    }
    if (key.is_string()) return attribute(object, key.as_string(), line);
    return Value::undefined(key.str());
}

// obj[start:stop:step], Python's rules for missing and negative bounds.
inline Value slice(const Value& object, const Value& start, const Value& stop, const Value& step, int line) {
    const auto bound = [&](const Value& v) -> std::optional<std::int64_t> {
        if (v.is_undefined() || v.is_none()) return std::nullopt;
        if (!v.is_integer()) fail(line, "slice indices must be integers");
        return v.as_integer();
    };
    const std::int64_t st = bound(step).value_or(1);
    if (st == 0) fail(line, "slice step cannot be zero");
    std::vector<std::string_view> cps;
    std::int64_t n = 0;
    if (object.is_array()) n = static_cast<std::int64_t>(object.array().size());
    else if (object.is_string()) {
        cps = code_points(object.as_string());
        n = static_cast<std::int64_t>(cps.size());
    } else fail(line, std::string("'") + object.type_name() + "' object is not subscriptable");
    const auto clamp = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
        if (!v) return dflt;
        std::int64_t i = *v < 0 ? *v + n : *v;
        if (st > 0) return std::clamp<std::int64_t>(i, 0, n);
        return std::clamp<std::int64_t>(i, -1, n - 1);
    };
    const std::int64_t b = clamp(bound(start), st > 0 ? 0 : n - 1);
    const std::int64_t e = clamp(bound(stop), st > 0 ? n : -1);
    Array elems;
    std::string text;
    for (std::int64_t i = b; st > 0 ? i < e : i > e; i += st) {
        if (object.is_array()) elems.push_back(object.array()[static_cast<std::size_t>(i)]);
        else text += cps[static_cast<std::size_t>(i)];
    }
    return object.is_array() ? Value(std::move(elems)) : Value(std::move(text));
}

// Python's ordering for <, >, sort, min and max: numbers, strings (by code point) and lists.
inline int compare(const Value& a, const Value& b, int line) {
    if (a.is_number() && b.is_number()) {
        if (a.is_real() || b.is_real()) return a.as_real() < b.as_real() ? -1 : a.as_real() > b.as_real() ? 1 : 0;
        return a.as_integer() < b.as_integer() ? -1 : a.as_integer() > b.as_integer() ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
    if (a.is_array() && b.is_array()) {
        const auto &x = a.array(), &y = b.array();
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!(x[i] == y[i])) return compare(x[i], y[i], line);
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    fail(line, std::string("'<' not supported between instances of '") + a.type_name() + "' and '" + b.type_name() + "'");
}

// `x in container`.
inline bool contains(const Value& container, const Value& x, int line) {
    if (container.is_string()) {
        if (!x.is_string()) fail(line, std::string("'in <string>' requires string as left operand, not ") + x.type_name());
        return container.as_string().find(x.as_string()) != std::string::npos;
    }
    if (container.is_array()) return std::find(container.array().begin(), container.array().end(), x) != container.array().end();
    if (container.is_object()) return x.is_string() && container.object().find(x.as_string()) != nullptr;
    if (container.is_undefined()) return false;
    fail(line, std::string("argument of type '") + container.type_name() + "' is not iterable");
}

// a op b for + - * / // % ** ~.
inline Value binary(std::string_view op, const Value& a, const Value& b, int line) {
    const auto size_of = [](const Value& v) { return v.is_string() ? v.as_string().size() : v.is_array() ? v.array().size() : 0; };
    if ((op == "~" || op == "+") && size_of(a) + size_of(b) > max_built_size)
        fail(line, "a value of " + std::to_string(size_of(a) + size_of(b)) + " bytes or elements: more than this engine builds");
    if (op == "*" && (a.is_string() || a.is_array() || b.is_string() || b.is_array())) {
        const Value& seq = a.is_string() || a.is_array() ? a : b;
        const Value& times = &seq == &a ? b : a;
        if (times.is_number() && times.as_integer() > 0 &&
            size_of(seq) > 0 && static_cast<std::uint64_t>(times.as_integer()) > max_built_size / size_of(seq))
            fail(line, "repeating a value " + std::to_string(times.as_integer()) + " times: more than this engine builds");
    }
    if (op == "~") return Value(a.str() + b.str());
    const auto type_error = [&]() -> Value {
        if (a.is_undefined()) fail(line, "'" + a.undefined_name() + "' is undefined");
        if (b.is_undefined()) fail(line, "'" + b.undefined_name() + "' is undefined");
        fail(line, "unsupported operand type(s) for " + std::string(op) + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
    };
    if (a.is_number() && b.is_number()) {
        const bool real = a.is_real() || b.is_real();
        const std::int64_t x = a.as_integer(), y = b.as_integer();
        const double p = a.as_real(), q = b.as_real();
        if (op == "+") return real ? Value(p + q) : Value(x + y);
        if (op == "-") return real ? Value(p - q) : Value(x - y);
        if (op == "*") return real ? Value(p * q) : Value(x * y);
        if (op == "/") {
            if (q == 0.0) fail(line, "division by zero");
            return Value(p / q);
        }
        if (op == "//" || op == "%") {
            if (q == 0.0) fail(line, op == "%" ? "modulo by zero" : "integer division or modulo by zero");
            if (!real) return op == "//" ? Value(detail::floor_div(x, y)) : Value(x - detail::floor_div(x, y) * y);
            if (op == "//") return Value(std::floor(p / q));
            double m = std::fmod(p, q);
            if (m != 0.0 && ((m < 0) != (q < 0))) m += q;
            return Value(m);
        }
        if (op == "**") {
            if (!real && y >= 0) {
                std::int64_t r = 1;
                for (std::int64_t i = 0; i < y; ++i) r *= x;
                return Value(r);
            }
            return Value(std::pow(p, q));
        }
    }
    if (op == "+" && a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (op == "+" && a.is_array() && b.is_array()) {
        Array out = a.array();
        out.insert(out.end(), b.array().begin(), b.array().end());
        return Value(std::move(out));
    }
    if (op == "*" && (a.is_string() || a.is_array()) && (b.is_integer() || b.is_bool())) {
        if (a.is_string()) {
            std::string out;
            for (std::int64_t i = 0; i < b.as_integer(); ++i) out += a.as_string();
            return Value(std::move(out));
        }
        Array out;
        for (std::int64_t i = 0; i < b.as_integer(); ++i) out.insert(out.end(), a.array().begin(), a.array().end());
        return Value(std::move(out));
    }
    if (op == "*" && (b.is_string() || b.is_array()) && (a.is_integer() || a.is_bool())) return binary(op, b, a, line);
    if (op == "%" && a.is_string()) fail(line, "printf-style string formatting ('%') is not supported");
    return type_error();
}

inline Value call_method(const Value& object, const std::string& name, const Arguments& args, int line) {
    const Value* a0 = args.get(0, "");
    const Value* a1 = args.get(1, "");
    const auto need_string = [&](const Value* v, const char* what) -> const std::string& {
        if (!v || !v->is_string()) fail(line, name + "(): " + what + " must be a string");
        return v->as_string();
    };
    if (object.is_object()) {
        const Object& o = object.object();
        if (name == "get") {
            if (!a0) fail(line, "get() takes at least one argument");
            if (a0->is_string())
                if (const Value* v = o.find(a0->as_string())) return *v;
            return a1 ? *a1 : Value::none();
        }
        Array out;
        for (const auto& [k, v] : o.members) {
            if (name == "keys") out.emplace_back(k);
            else if (name == "values") out.push_back(v);
            else out.push_back(Value::tuple(Array{Value(k), v}));
        }
        return Value(std::move(out));
    }
    const std::string& s = object.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return Value(detail::strip(s, a0, name != "rstrip", name != "lstrip"));
    if (name == "split") return detail::split(s, args.get(0, "sep"), args.get(1, "maxsplit"), line);
    if (name == "startswith" || name == "endswith") {
        if (!a0) fail(line, name + "() takes at least one argument");
        Array options = a0->is_array() ? a0->array() : Array{*a0};
        for (const Value& p : options) {
            const std::string& x = need_string(&p, "the prefix");
            if (name == "startswith" ? s.compare(0, x.size(), x) == 0
                                     : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
                return Value(true);
        }
        return Value(false);
    }
    if (name == "upper") return Value(detail::upper(s));
    if (name == "lower") return Value(detail::lower(s));
    if (name == "capitalize") return Value(s.empty() ? s : std::string(1, detail::ascii_upper(s[0])) + detail::lower(s.substr(1)));
    if (name == "title") {
        std::string out = s;
        bool prev_cased = false;
        for (char& c : out) {
            const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            c = letter ? (prev_cased ? detail::ascii_lower(c) : detail::ascii_upper(c)) : c;
            prev_cased = letter;
        }
        return Value(std::move(out));
    }
    if (name == "replace") {
        const Value* count = args.get(2, "count");
        return Value(detail::replace(s, need_string(a0, "old"), need_string(a1, "new"), count ? count->as_integer() : -1));
    }
    if (name == "find" || name == "count") {
        const std::string& x = need_string(a0, "the substring");
        if (name == "find") {
            const std::size_t at = s.find(x);
            return at == std::string::npos ? Value(-1) : Value(static_cast<std::int64_t>(code_points(s.substr(0, at)).size()));
        }
        if (x.empty()) return Value(static_cast<std::int64_t>(code_points(s).size() + 1));
        std::int64_t n = 0;
        for (std::size_t at = s.find(x); at != std::string::npos; at = s.find(x, at + x.size())) ++n;
        return Value(n);
    }
    if (name == "join") {
        if (!a0) fail(line, "join() takes one argument");
        std::string out;
        const Array parts = iterate(*a0, line);
        for (std::size_t i = 0; i < parts.size(); ++i) {
            if (!parts[i].is_string()) fail(line, "join(): sequence item " + std::to_string(i) + ": expected str instance");
            out += (i ? s : "") + parts[i].as_string();
        }
        return Value(std::move(out));
    }
    // isdigit, isspace, isalpha, isalnum, isupper, islower (ASCII)
    bool any_cased = false, all = !s.empty();
    for (const char c : s) {
        const bool d = c >= '0' && c <= '9', up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z';
        any_cased |= up || lo;
        if (name == "isdigit") all &= d;
        else if (name == "isspace") all &= is_python_space(c);
        else if (name == "isalpha") all &= up || lo;
        else if (name == "isalnum") all &= up || lo || d;
        else if (name == "isupper") all &= !lo;
        else if (name == "islower") all &= !up;
    }
    if (name == "isupper" || name == "islower") return Value(all && any_cased);
    return Value(all);
}

// Jinja2's tests: `x is name(args)`.
inline bool apply_test(const std::string& name, const Value& v, const Arguments& args, int line) {
    const Value* a = args.get(0, "");
    const auto arg = [&]() -> const Value& {
        if (!a) fail(line, "test '" + name + "' takes an argument");
        return *a;
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "integer") return v.is_integer();
    if (name == "float") return v.is_real();
    if (name == "number") return v.is_number();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_object() && !v.object().is_namespace;
    if (name == "iterable" || name == "sequence") return v.is_string() || v.is_array() || (v.is_object() && !v.object().is_namespace);
    if (name == "callable") return v.is_function();
    if (name == "odd" || name == "even") {
        if (!v.is_integer() && !v.is_bool()) fail(line, "test '" + name + "' needs an integer");
        return (v.as_integer() % 2 != 0) == (name == "odd");
    }
    if (name == "divisibleby") {
        if (arg().as_integer() == 0) fail(line, "divisibleby(0)");
        return v.as_integer() % arg().as_integer() == 0;
    }
    if (name == "lower") return v.is_string() && detail::lower(v.as_string()) == v.as_string();
    if (name == "upper") return v.is_string() && detail::upper(v.as_string()) == v.as_string();
    if (name == "eq" || name == "equalto" || name == "==") return v == arg();
    if (name == "ne" || name == "!=") return !(v == arg());
    if (name == "lt" || name == "lessthan" || name == "<") return compare(v, arg(), line) < 0;
    if (name == "le" || name == "<=") return compare(v, arg(), line) <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, arg(), line) > 0;
    if (name == "ge" || name == ">=") return compare(v, arg(), line) >= 0;
    if (name == "in") return contains(arg(), v, line);
    if (name == "sameas") return v == arg() && (v.is_none() || v.is_bool() || v.kind() == arg().kind());
    fail(line, "no test named '" + name + "'");
}

Value apply_filter(const std::string& name, const Value& v, const Arguments& args, int line);

namespace detail {

// The attribute a filter's `attribute=` names, dotted paths included ("a.b").
inline Value attribute_path(const Value& v, const std::string& path, int line) {
    Value out = v;
    std::size_t i = 0;
    while (true) {
        const std::size_t dot = path.find('.', i);
        const std::string part = path.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
        const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        out = numeric ? item(out, Value(static_cast<std::int64_t>(std::stoll(part))), line) : item(out, Value(part), line);
        if (dot == std::string::npos) return out;
        if (out.is_undefined()) return out;
        i = dot + 1;
    }
}

// select / reject / selectattr / rejectattr: elements for which the test (or truth) holds.
inline Value select(const Value& v, const Arguments& args, bool by_attribute, bool keep, int line) {
    std::size_t at = 0;
    std::string attr;
    if (by_attribute) {
        const Value* a = args.get(0, "");
        if (!a || !a->is_string()) fail(line, "selectattr/rejectattr need an attribute name");
        attr = a->as_string();
        at = 1;
    }
    const Value* test = args.get(at, "");
    Arguments test_args;
    for (std::size_t i = at + 1; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
    Array out;
    if (!v.truthy()) return Value(std::move(out));  // Jinja2 checks `if value:` first: none selects nothing
    for (const Value& e : iterate(v, line)) {
        const Value x = by_attribute ? attribute_path(e, attr, line) : e;
        const bool ok = test ? apply_test(test->str(), x, test_args, line) : x.truthy();
        if (ok == keep) out.push_back(e);
    }
    return Value(std::move(out));
}

inline Array sorted(Array items, bool reverse, bool case_sensitive, const std::string& attr, int line) {
    const auto key = [&](const Value& e) {
        Value k = attr.empty() ? e : attribute_path(e, attr, line);
        return !case_sensitive && k.is_string() ? Value(lower(k.as_string())) : k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        const int c = compare(key(x), key(y), line);
        return reverse ? c > 0 : c < 0;
    });
    return items;
}

inline std::string html_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace detail

inline Value apply_filter(const std::string& name, const Value& v, const Arguments& args, int line) {
    const Value* a0 = args.get(0, "");
    const auto named = [&](std::size_t i, std::string_view n) { return args.get(i, n); };
    const auto need_string = [&]() -> const std::string& {
        if (v.is_undefined()) fail(line, "'" + v.undefined_name() + "' is undefined");
        if (!v.is_string()) fail(line, "filter '" + name + "' needs a string, not " + v.type_name());
        return v.as_string();
    };
    if (name == "safe") return v;
    if (name == "string") return Value(v.str());
    if (name == "default" || name == "d") {
        const Value* b = named(1, "boolean");
        const bool use_default = v.is_undefined() || (b && b->truthy() && !v.truthy());
        if (!use_default) return v;
        const Value* d = named(0, "default_value");
        return d ? *d : Value("");
    }
    if (name == "length" || name == "count") return Value(length_of(v, line));
    if (name == "tojson") {  // transformers' json.dumps(x, ensure_ascii=False, indent=, sort_keys=)
        for (const char* unsupported : {"ensure_ascii", "separators"})
            if (const Value* u = args.get(99, unsupported); u && u->truthy())
                fail(line, std::string("tojson: the argument ") + unsupported + " is not supported");
        const Value* indent = named(0, "indent");
        const Value* sort = args.get(99, "sort_keys");
        return Value(v.to_json(indent && indent->is_integer() ? static_cast<int>(indent->as_integer()) : -1, sort && sort->truthy()));
    }
    if (name == "trim") return Value(detail::strip(v.str(), named(0, "chars"), true, true));
    if (name == "upper") return Value(detail::upper(v.str()));
    if (name == "lower") return Value(detail::lower(v.str()));
    if (name == "capitalize") return call_method(Value(v.str()), "capitalize", {}, line);
    if (name == "title") {  // Jinja2's own: words begin after runs of -, whitespace, (, {, [ or <
        std::string out = v.str();
        bool start = true;
        for (char& c : out) {
            const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_python_space(c);
            c = sep ? c : start ? detail::ascii_upper(c) : detail::ascii_lower(c);
            start = sep;
        }
        return Value(std::move(out));
    }
    if (name == "replace") {
        const Value* count = named(2, "count");
        const Value* old = named(0, "old");
        const Value* neu = named(1, "new");
        if (!old || !neu) fail(line, "replace takes two arguments");
        return Value(detail::replace(v.str(), old->str(), neu->str(), count && !count->is_none() ? count->as_integer() : -1));
    }
    if (name == "first" || name == "last") {
        const Array items = iterate(v, line);
        if (items.empty()) return Value::undefined(name);
        return name == "first" ? items.front() : items.back();
    }
    if (name == "join") {
        const Value* sep = named(0, "d");
        const Value* attr = named(1, "attribute");
        std::string out;
        const Array items = iterate(v, line);
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i && sep) out += sep->str();
            out += (attr ? detail::attribute_path(items[i], attr->str(), line) : items[i]).str();
        }
        return Value(std::move(out));
    }
    if (name == "list") return Value(iterate(v, line));
    if (name == "items") {
        if (v.is_undefined()) return Value(Array{});
        if (!v.is_object()) fail(line, "filter 'items' needs a mapping");
        return call_method(v, "items", {}, line);
    }
    if (name == "dictsort") {
        if (!v.is_object()) fail(line, "filter 'dictsort' needs a mapping");
        const Value* cs = named(0, "case_sensitive");
        const Value* by = named(1, "by");
        const Value* rev = named(2, "reverse");
        const std::string attr = by && by->str() == "value" ? "1" : "0";
        return Value(detail::sorted(call_method(v, "items", {}, line).array(), rev && rev->truthy(), cs && cs->truthy(), attr, line));
    }
    if (name == "select" || name == "reject") return detail::select(v, args, false, name == "select", line);
    if (name == "selectattr" || name == "rejectattr") return detail::select(v, args, true, name == "selectattr", line);
    if (name == "map") {
        Array out;
        if (!v.truthy()) return Value(std::move(out));  // as select: none maps to nothing
        const Value* attr = args.get(99, "attribute");
        if (attr) {
            const Value* dflt = args.get(99, "default");
            for (const Value& e : iterate(v, line)) {
                Value x = detail::attribute_path(e, attr->str(), line);
                out.push_back(x.is_undefined() && dflt ? *dflt : x);
            }
            return Value(std::move(out));
        }
        if (!a0) fail(line, "map needs a filter name or attribute=");
        Arguments rest;
        for (std::size_t i = 1; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
        rest.named = args.named;
        for (const Value& e : iterate(v, line)) out.push_back(apply_filter(a0->str(), e, rest, line));
        return Value(std::move(out));
    }
    if (name == "reverse") {
        if (v.is_string()) {
            auto cps = code_points(v.as_string());
            std::string out;
            for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
            return Value(std::move(out));
        }
        Array items = iterate(v, line);
        std::reverse(items.begin(), items.end());
        return Value(std::move(items));
    }
    if (name == "sort") {
        const Value* rev = named(0, "reverse");
        const Value* cs = named(1, "case_sensitive");
        const Value* attr = named(2, "attribute");
        return Value(detail::sorted(iterate(v, line), rev && rev->truthy(), cs && cs->truthy(), attr ? attr->str() : "", line));
    }
    if (name == "unique") {
        Array out;
        for (const Value& e : iterate(v, line)) {
            const Value k = e.is_string() ? Value(detail::lower(e.as_string())) : e;
            bool seen = false;
            for (const Value& o : out) seen |= (o.is_string() ? Value(detail::lower(o.as_string())) : o) == k;
            if (!seen) out.push_back(e);
        }
        return Value(std::move(out));
    }
    if (name == "min" || name == "max") {
        const Array items = detail::sorted(iterate(v, line), false, false, "", line);
        if (items.empty()) return Value::undefined(name);
        return name == "min" ? items.front() : items.back();
    }
    if (name == "sum") {
        const Value* attr = named(0, "attribute");
        const Value* start = named(1, "start");
        Value total = start ? *start : Value(0);
        for (const Value& e : iterate(v, line)) total = binary("+", total, attr ? detail::attribute_path(e, attr->str(), line) : e, line);
        return total;
    }
    if (name == "abs") {
        if (v.is_real()) return Value(std::fabs(v.as_real()));
        if (v.is_number()) return Value(v.as_integer() < 0 ? -v.as_integer() : v.as_integer());
        fail(line, std::string("bad operand type for abs(): '") + v.type_name() + "'");
    }
    if (name == "round") {
        const Value* precision = named(0, "precision");
        const Value* method = named(1, "method");
        const double scale = std::pow(10.0, precision ? static_cast<double>(precision->as_integer()) : 0.0);
        const std::string m = method ? method->str() : "common";
        const double x = v.as_real() * scale;
        const double r = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::nearbyint(x);
        return Value(r / scale);
    }
    if (name == "int" || name == "float") {
        const Value* dflt = named(0, "default");
        const Value fallback = dflt ? *dflt : name == "int" ? Value(0) : Value(0.0);
        double d = 0.0;
        if (v.is_number()) d = v.as_real();
        else if (v.is_string()) {
            const std::string s = detail::strip(v.as_string(), nullptr, true, true);
            char* end = nullptr;
            d = std::strtod(s.c_str(), &end);
            if (s.empty() || end != s.c_str() + s.size()) return fallback;
        } else return fallback;
        if (name == "float") return Value(d);
        if (v.is_integer() || v.is_bool()) return Value(v.as_integer());
        return Value(static_cast<std::int64_t>(d));
    }
    if (name == "indent") {
        const Value* width = named(0, "width");
        const Value* first = named(1, "first");
        const Value* blank = named(2, "blank");
        const std::string pad = width && width->is_string() ? width->as_string()
                                                            : std::string(static_cast<std::size_t>(width ? width->as_integer() : 4), ' ');
        // Jinja2 appends a newline and splits the lines, so a final newline is kept unindented.
        std::vector<std::string> lines;
        const std::string s = v.str() + "\n";
        for (std::size_t i = 0, nl; (nl = s.find('\n', i)) != std::string::npos; i = nl + 1) lines.push_back(s.substr(i, nl - i));
        std::string out = lines.empty() ? "" : lines[0];
        for (std::size_t i = 1; i < lines.size(); ++i)
            out += "\n" + ((blank && blank->truthy()) || !lines[i].empty() ? pad : "") + lines[i];
        if (first && first->truthy()) out = pad + out;
        return Value(std::move(out));
    }
    if (name == "escape" || name == "e") return Value(detail::html_escape(v.str()));
    if (name == "wordcount") return Value(static_cast<std::int64_t>(detail::split(need_string(), nullptr, nullptr, line).array().size()));
    fail(line, "no filter named '" + name + "'");
}

}  // namespace tessera::chat::jinja
