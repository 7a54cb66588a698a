#pragma once
// The values a Jinja template computes with, and how Python (which Jinja2 runs on) prints,
// compares and JSON-encodes them. Chat templates are written against Jinja2 as Hugging Face
// transformers runs it, so "the same prompt" means Python's str(), repr() and json.dumps()
// byte for byte: 1.0 prints as "1.0", None as "None", a list as "['a', 1]".
// Lists and dicts are shared by reference, as in Python: `namespace` objects are assigned
// through (`set ns.found = true`) and every reference sees the change.
#include <algorithm>    // std::stable_sort
#include <charconv>     // std::to_chars
#include <cmath>        // std::isnan, std::isinf
#include <cstdint>      // std::int64_t
#include <cstdio>       // std::snprintf
#include <cstdlib>      // std::strtol
#include <functional>   // std::function
#include <memory>       // std::shared_ptr
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move, std::pair
#include <vector>       // std::vector

#include <tessera/core/error.hpp>  // Error
#include <tessera/io/json.hpp>     // JsonValue
#include <tessera/text/utf8.hpp>   // utf8::decode_one

namespace tessera::chat::jinja {

// A template that cannot be parsed or run: the message names the construct and the line.
class TemplateError : public Error {
public:
    using Error::Error;
};

class Value;
using Array = std::vector<Value>;

// A dict: members in insertion order, as Python's dict keeps them.
struct Object {
    std::vector<std::pair<std::string, Value>> members;
    bool is_namespace = false;  // made by namespace(): the only object `set x.y = ...` may change

    const Value* find(std::string_view key) const;
    void set(std::string key, Value value);
};

// Arguments of a call: f(1, 2, name=3).
struct Arguments {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> named;

    // The argument at `index` or named `name`, or nullptr.
    const Value* get(std::size_t index, std::string_view name) const;
};

using Function = std::function<Value(const Arguments&)>;

class Value {
public:
    enum class Kind { undefined, none, boolean, integer, real, string, array, object, function };

    Value() = default;  // undefined
    static Value undefined(std::string name) {
        Value v;
        v.text_ = std::move(name);
        return v;
    }
    static Value none() { return Value(Kind::none); }
    Value(bool b) : kind_(Kind::boolean), integer_(b) {}
    Value(std::int64_t i) : kind_(Kind::integer), integer_(i) {}
    Value(int i) : Value(static_cast<std::int64_t>(i)) {}
    Value(double d) : kind_(Kind::real), real_(d) {}
    Value(std::string s) : kind_(Kind::string), text_(std::move(s)) {}
    Value(const char* s) : Value(std::string(s)) {}
    Value(Array a) : kind_(Kind::array), array_(std::make_shared<Array>(std::move(a))) {}
    // A tuple: a list that Python prints in parentheses, as dict.items() gives its pairs.
    static Value tuple(Array a) {
        Value v(std::move(a));
        v.tuple_ = true;
        return v;
    }
    Value(Object o) : kind_(Kind::object), object_(std::make_shared<Object>(std::move(o))) {}
    static Value function(std::string name, Function f) {
        Value v(Kind::function);
        v.text_ = std::move(name);
        v.function_ = std::make_shared<Function>(std::move(f));
        return v;
    }
    // A JSON document as Python's json.loads gives it: integers stay integers, 1.0 a float.
    static Value from_json(const io::JsonValue& json);

    Kind kind() const noexcept { return kind_; }
    bool is_undefined() const noexcept { return kind_ == Kind::undefined; }
    bool is_none() const noexcept { return kind_ == Kind::none; }
    bool is_bool() const noexcept { return kind_ == Kind::boolean; }
    bool is_integer() const noexcept { return kind_ == Kind::integer; }
    bool is_real() const noexcept { return kind_ == Kind::real; }
    bool is_number() const noexcept { return is_integer() || is_real() || is_bool(); }
    bool is_string() const noexcept { return kind_ == Kind::string; }
    bool is_array() const noexcept { return kind_ == Kind::array; }
    bool is_tuple() const noexcept { return tuple_; }
    bool is_object() const noexcept { return kind_ == Kind::object; }
    bool is_function() const noexcept { return kind_ == Kind::function; }

    bool as_bool() const noexcept { return integer_ != 0; }
    std::int64_t as_integer() const noexcept { return kind_ == Kind::real ? static_cast<std::int64_t>(real_) : integer_; }
    double as_real() const noexcept { return kind_ == Kind::real ? real_ : static_cast<double>(integer_); }
    const std::string& as_string() const noexcept { return text_; }
    // An undefined value's name, for "'x' is undefined".
    const std::string& undefined_name() const noexcept { return text_; }
    Array& array() const noexcept { return *array_; }
    Object& object() const noexcept { return *object_; }
    const Function& call() const noexcept { return *function_; }
    const std::string& function_name() const noexcept { return text_; }

    // Python's truth value: empty strings, lists and dicts, 0 and None are false.
    bool truthy() const noexcept;
    // Python's type name, for error messages.
    const char* type_name() const noexcept;
    // str(x), as `{{ x }}` prints it (undefined prints nothing).
    std::string str() const;
    // repr(x), as str() of a list prints its elements.
    std::string repr() const;
    // json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=sort_keys), as transformers'
    // tojson filter calls it; indent < 0 means None (one line, ", " and ": ").
    std::string to_json(int indent = -1, bool sort_keys = false) const;

    friend bool operator==(const Value& a, const Value& b);

private:
    explicit Value(Kind k) : kind_(k) {}
    void write_json(std::string& out, int indent, int depth, bool sort_keys) const;

    Kind kind_ = Kind::undefined;
    bool tuple_ = false;
    std::int64_t integer_ = 0;  // also a boolean's 0 / 1
    double real_ = 0.0;
    std::string text_;  // a string, an undefined value's name, a function's name
    std::shared_ptr<Array> array_;
    std::shared_ptr<Object> object_;
    std::shared_ptr<Function> function_;
};

// Python's whitespace among the ASCII characters (str.isspace, str.strip, re's \s): space, \t to
// \r, and the separators \x1c to \x1f.
inline bool is_python_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

// The code points of a UTF-8 string, each as its bytes: Python indexes, slices and counts
// strings by code point.
inline std::vector<std::string_view> code_points(std::string_view s) {
    std::vector<std::string_view> out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const auto d = utf8::decode_one(s, i);
        const std::size_t n = d.length == 0 ? 1 : d.length;
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

// Python's repr() of a float: the shortest digits that read back the same double, fixed
// notation for exponents -4 to 15 ("0.0001", "1e+16", "1e-05"), a ".0" on whole numbers.
inline std::string python_float(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string s(buf, end);  // "-1.2345e+02": shortest round-trip digits
    std::string sign;
    if (s[0] == '-') {
        sign = "-";
        s.erase(0, 1);
    }
    const std::size_t e = s.find('e');
    const int exponent = static_cast<int>(std::strtol(s.c_str() + e + 1, nullptr, 10));
    std::string digits = s.substr(0, e);
    if (digits.size() > 1) digits.erase(1, 1);  // drop the point
    const int n = static_cast<int>(digits.size());
    std::string out;
    if (exponent >= -4 && exponent < 16) {
        if (exponent < 0) {
            out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
        } else if (exponent + 1 >= n) {
            out = digits + std::string(static_cast<std::size_t>(exponent + 1 - n), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<std::size_t>(exponent + 1)) + "." +
                  digits.substr(static_cast<std::size_t>(exponent + 1));
        }
    } else {
        out = digits.substr(0, 1);
        if (n > 1) out += "." + digits.substr(1);
        char exp[16];
        std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
        out += exp;
    }
    return sign + out;
}

inline const Value* Object::find(std::string_view key) const {
    for (const auto& [k, v] : members)
        if (k == key) return &v;
    return nullptr;
}

inline void Object::set(std::string key, Value value) {
    for (auto& [k, v] : members)
        if (k == key) {
            v = std::move(value);
            return;
        }
    members.emplace_back(std::move(key), std::move(value));
}

inline const Value* Arguments::get(std::size_t index, std::string_view name) const {
    if (index < positional.size()) return &positional[index];
    for (const auto& [k, v] : named)
        if (k == name) return &v;
    return nullptr;
}

inline Value Value::from_json(const io::JsonValue& json) {
    switch (json.kind()) {
        case io::JsonValue::Kind::null: return none();
        case io::JsonValue::Kind::boolean: return Value(json.as_bool());
        case io::JsonValue::Kind::number:
            if (const auto i = json.as_signed()) return Value(*i);
            return Value(json.as_double());
        case io::JsonValue::Kind::string: return Value(json.as_string());
        case io::JsonValue::Kind::array: {
            Array a;
            for (const auto& e : json.elements()) a.push_back(from_json(e));
            return Value(std::move(a));
        }
        case io::JsonValue::Kind::object: {
            Object o;
            for (const auto& m : json.members()) o.members.emplace_back(m.key, from_json(m.value));
            return Value(std::move(o));
        }
    }
    return {};
}

inline bool Value::truthy() const noexcept {
    switch (kind_) {
        case Kind::undefined:
        case Kind::none: return false;
        case Kind::boolean:
        case Kind::integer: return integer_ != 0;
        case Kind::real: return real_ != 0.0;
        case Kind::string: return !text_.empty();
        case Kind::array: return !array_->empty();
        case Kind::object: return !object_->members.empty();
        case Kind::function: return true;
    }
    return false;
}

inline const char* Value::type_name() const noexcept {
    switch (kind_) {
        case Kind::undefined: return "Undefined";
        case Kind::none: return "NoneType";
        case Kind::boolean: return "bool";
        case Kind::integer: return "int";
        case Kind::real: return "float";
        case Kind::string: return "str";
        case Kind::array: return "list";
        case Kind::object: return object_->is_namespace ? "Namespace" : "dict";
        case Kind::function: return "function";
    }
    return "?";
}

inline std::string Value::str() const {
    switch (kind_) {
        case Kind::undefined: return "";
        case Kind::string: return text_;
        default: return repr();
    }
}

inline std::string Value::repr() const {
    switch (kind_) {
        case Kind::undefined: return "";
        case Kind::none: return "None";
        case Kind::boolean: return integer_ ? "True" : "False";
        case Kind::integer: return std::to_string(integer_);
        case Kind::real: return python_float(real_);
        case Kind::string: {
            // Python quotes with ' unless the text holds ' and no ".
            const bool dq = text_.find('\'') != std::string::npos && text_.find('"') == std::string::npos;
            const char q = dq ? '"' : '\'';
            std::string out(1, q);
            for (const char c : text_) {
                const auto b = static_cast<unsigned char>(c);
                if (c == '\\') out += "\\\\";
                else if (c == q) (out += '\\') += c;
                else if (c == '\n') out += "\\n";
                else if (c == '\r') out += "\\r";
                else if (c == '\t') out += "\\t";
                else if (b < 0x20 || b == 0x7f) {
                    char hex[5];
                    std::snprintf(hex, sizeof hex, "\\x%02x", b);
                    out += hex;
                } else out += c;
            }
            return out + q;
        }
        case Kind::array: {
            std::string out = tuple_ ? "(" : "[";
            for (std::size_t i = 0; i < array_->size(); ++i) out += (i ? ", " : "") + (*array_)[i].repr();
            if (tuple_) return out + (array_->size() == 1 ? ",)" : ")");
            return out + "]";
        }
        case Kind::object: {
            if (object_->is_namespace) return "<Namespace>";
            std::string out = "{";
            for (std::size_t i = 0; i < object_->members.size(); ++i)
                out += (i ? ", " : "") + Value(object_->members[i].first).repr() + ": " + object_->members[i].second.repr();
            return out + "}";
        }
        case Kind::function: return "<function " + text_ + ">";
    }
    return "";
}

inline std::string Value::to_json(int indent, bool sort_keys) const {
    std::string out;
    write_json(out, indent, 0, sort_keys);
    return out;
}

inline void Value::write_json(std::string& out, int indent, int depth, bool sort_keys) const {
    const auto newline = [&](int d) {
        out += '\n';
        out.append(static_cast<std::size_t>(indent * d), ' ');
    };
    switch (kind_) {
        case Kind::undefined: throw TemplateError("tojson: '" + text_ + "' is undefined");
        case Kind::function: throw TemplateError("tojson: a function (" + text_ + ") is not JSON serializable");
        case Kind::none: out += "null"; return;
        case Kind::boolean: out += integer_ ? "true" : "false"; return;
        case Kind::integer: out += std::to_string(integer_); return;
        case Kind::real:
            if (std::isnan(real_)) out += "NaN";
            else if (std::isinf(real_)) out += real_ < 0 ? "-Infinity" : "Infinity";
            else out += python_float(real_);
            return;
        case Kind::string: {
            out += '"';
            for (const char c : text_) {
                const auto b = static_cast<unsigned char>(c);
                switch (c) {
                    case '"': out += "\\\""; break;
                    case '\\': out += "\\\\"; break;
                    case '\n': out += "\\n"; break;
                    case '\r': out += "\\r"; break;
                    case '\t': out += "\\t"; break;
                    case '\b': out += "\\b"; break;
                    case '\f': out += "\\f"; break;
                    default:
                        if (b < 0x20) {
                            char hex[7];
                            std::snprintf(hex, sizeof hex, "\\u%04x", b);
                            out += hex;
                        } else {
                            out += c;  // ensure_ascii=False: non-ASCII as it is
                        }
                }
            }
            out += '"';
            return;
        }
        case Kind::array: {
            if (array_->empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (std::size_t i = 0; i < array_->size(); ++i) {
                if (i) out += indent < 0 ? ", " : ",";
                if (indent >= 0) newline(depth + 1);
                (*array_)[i].write_json(out, indent, depth + 1, sort_keys);
            }
            if (indent >= 0) newline(depth);
            out += ']';
            return;
        }
        case Kind::object: {
            if (object_->members.empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<std::string, Value>*> members;
            for (const auto& m : object_->members) members.push_back(&m);
            if (sort_keys)
                std::stable_sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->first < b->first; });
            out += '{';
            for (std::size_t i = 0; i < members.size(); ++i) {
                if (i) out += indent < 0 ? ", " : ",";
                if (indent >= 0) newline(depth + 1);
                Value(members[i]->first).write_json(out, indent, depth + 1, sort_keys);
                out += ": ";
                members[i]->second.write_json(out, indent, depth + 1, sort_keys);
            }
            if (indent >= 0) newline(depth);
            out += '}';
            return;
        }
    }
}

inline bool operator==(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_real() || b.is_real()) return a.as_real() == b.as_real();
        return a.as_integer() == b.as_integer();
    }
    if (a.kind_ != b.kind_) return false;
    switch (a.kind_) {
        case Value::Kind::undefined:
        case Value::Kind::none: return true;
        case Value::Kind::string: return a.text_ == b.text_;
        case Value::Kind::array: return *a.array_ == *b.array_;
        case Value::Kind::object: {
            if (a.object_ == b.object_) return true;
            if (a.object_->members.size() != b.object_->members.size()) return false;
            for (const auto& [k, v] : a.object_->members) {
                const Value* w = b.object_->find(k);
                if (!w || !(v == *w)) return false;
            }
            return true;
        }
        case Value::Kind::function: return a.function_ == b.function_;
        default: return false;
    }
}

}  // namespace tessera::chat::jinja
