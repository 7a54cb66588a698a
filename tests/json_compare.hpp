#pragma once
// Compares tessera's JSON reader with nlohmann/json (an independent parser): used by the unit
// test on generated documents and by the fuzz harness on arbitrary bytes.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include <tessera/io/json.hpp>

namespace tessera::testing {

// Whether our tree and nlohmann's hold the same value (numbers by their double value; integers
// exactly when nlohmann reads them as integers).
inline bool same_json(const io::JsonValue& a, const nlohmann::json& b) {
    using Kind = io::JsonValue::Kind;
    switch (a.kind()) {
        case Kind::null: return b.is_null();
        case Kind::boolean: return b.is_boolean() && b.get<bool>() == a.as_bool();
        case Kind::string: return b.is_string() && b.get<std::string>() == a.as_string();
        case Kind::number:
            if (!b.is_number()) return false;
            if (b.is_number_unsigned()) return a.as_unsigned() == b.get<std::uint64_t>();
            if (b.is_number_integer()) return a.as_signed() == b.get<std::int64_t>();
            return a.as_double() == b.get<double>();
        case Kind::array: {
            if (!b.is_array() || b.size() != a.elements().size()) return false;
            for (std::size_t i = 0; i < b.size(); ++i)
                if (!same_json(a.elements()[i], b[i])) return false;
            return true;
        }
        case Kind::object: {
            if (!b.is_object() || b.size() != a.members().size()) return false;
            for (const auto& [key, value] : a.members())
                if (!b.contains(key) || !same_json(value, b[key])) return false;
            return true;
        }
    }
    return false;
}

// What tessera refuses on purpose where nlohmann accepts: duplicate keys (nlohmann keeps the
// last), numbers beyond a double (nlohmann reads 1e999 as infinity, 1e-400 as 0), and bytes
// after the value when the text has a NUL byte (nlohmann 3.11 stops reading at a NUL).
inline bool refused_on_purpose(const std::string& message, const std::string& text) {
    return message.find("twice") != std::string::npos || message.find("out of the range of a double") != std::string::npos ||
           (message.find("after the value") != std::string::npos && text.find('\0') != std::string::npos);
}

}  // namespace tessera::testing
