// A whole checkpoint load: config.json and model.safetensors from the input
// ("<config.json>\0<model.safetensors>") in a directory; the model loads and runs a prefill and
// a decode, or the load is an Error. Shapes over ~4M parameters are skipped (memory, not bugs).
#include <unistd.h>  // getpid

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <tessera/backend/cpu.hpp>
#include <tessera/models/load_gpt2.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tessera;
    static const std::filesystem::path dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("tessera-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    const std::string_view input = fuzz::as_text(data, size);
    const std::size_t split = std::min(input.find('\0'), input.size());
    const std::string_view config = input.substr(0, split), weights = input.substr(std::min(split + 1, input.size()));
    try {
        const auto shape = HfGpt2Config::from_json(io::parse_json(config, "config.json"), "config.json").shape;
        if (shape.parameters() > 4e6 || shape.n_ctx > 4096) return 0;
    } catch (const std::exception&) {
        // not parseable here: the loader must say so too
    }
    std::ofstream(dir / "config.json", std::ios::binary) << config;
    std::ofstream(dir / "model.safetensors", std::ios::binary) << weights;
    try {
        Cpu cpu(1);
        load_gpt2(cpu, dir, [](auto& model) {
            const std::vector<TokenId> prompt = {0, static_cast<TokenId>(model.vocabulary_size() - 1)};
            (void)model.prefill(std::span<const TokenId>(prompt).first(std::min<std::size_t>(2, model.context_length())));
            if (model.position() < model.context_length()) (void)model.decode(0);
        });
    } catch (const Error&) {
    }
    return 0;
}
