// config.json: any bytes give a validated configuration or a FormatError naming the field.
#include <cstdint>

#include <tessera/models/load_gpt2.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const tessera::fuzz::MemoryFile file;
    file.set(tessera::fuzz::as_text(data, size));
    try {
        const auto config = tessera::HfGpt2Config::read(file.path());
        if (config.shape.n_head == 0 || config.shape.n_embd % config.shape.n_head != 0) __builtin_trap();
    } catch (const tessera::Error&) {
    }
    return 0;
}
