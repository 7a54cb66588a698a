// The safetensors reader: any bytes either open, with every tensor readable in bounds, or give
// a FormatError naming the problem.
#include <cstdint>
#include <vector>

#include <tessera/io/safetensors.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const tessera::fuzz::MemoryFile file;
    file.set(tessera::fuzz::as_text(data, size));
    try {
        const tessera::io::SafetensorsFile st(file.path());
        for (const auto& name : st.names()) {
            const auto& info = st.info(name);
            if (info.elements() > (std::size_t{1} << 20)) continue;
            std::vector<float> dst(info.elements());
            st.read_float(info, dst);
        }
    } catch (const tessera::Error&) {
    }
    return 0;
}
