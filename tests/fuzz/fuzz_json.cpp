// The JSON reader on any bytes: a tree or a FormatError, never a crash; and differential: what
// it accepts nlohmann/json accepts with the same value, and it refuses only what nlohmann
// accepts when it refuses on purpose (duplicate keys, numbers beyond a double).
#include <cstdint>
#include <string>

#include <tessera/io/json.hpp>

#include "../json_compare.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(tessera::fuzz::as_text(data, size));
    const bool theirs = nlohmann::json::accept(text);
    try {
        const tessera::io::JsonValue ours = tessera::io::parse_json(text, "input");
        if (!theirs || !tessera::testing::same_json(ours, nlohmann::json::parse(text))) __builtin_trap();
    } catch (const tessera::FormatError& e) {
        if (theirs && !tessera::testing::refused_on_purpose(e.what(), text)) __builtin_trap();
    }
    return 0;
}
