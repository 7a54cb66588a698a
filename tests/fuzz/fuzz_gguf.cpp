// The GGUF reader: any bytes either open, with every tensor readable in bounds and every
// metadata value reachable, or give a FormatError naming the problem.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <tessera/io/gguf.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const tessera::fuzz::MemoryFile file;
    file.set(tessera::fuzz::as_text(data, size));
    try {
        const tessera::io::GgufFile gguf(file.path());
        for (const auto& t : gguf.tensors()) {
            if (t.bytes > (std::size_t{1} << 22)) continue;
            std::vector<std::byte> dst(t.bytes);
            gguf.read(t, dst);
        }
        for (const auto& [key, value] : gguf.metadata()) {
            if (value.type == tessera::io::GgufValue::Type::array && value.elements.size() > (std::size_t{1} << 24)) __builtin_trap();
        }
    } catch (const tessera::Error&) {
    }
    return 0;
}
