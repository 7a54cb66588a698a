// The GGUF reader, and a GPT-2 from it: any bytes either open, with every tensor readable in
// bounds (as stored and as float), every metadata value reachable, the gpt2.* metadata and the
// tokenizer read or refused, and a model that loads running a prefill and a decode (shapes
// over ~4M parameters skipped: memory, not bugs); or give a FormatError naming the problem.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <tessera/backend/cpu.hpp>
#include <tessera/io/gguf.hpp>
#include <tessera/models/load_gpt2.hpp>
#include <tessera/models/open_tokenizer.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tessera;
    static const fuzz::MemoryFile file;
    file.set(fuzz::as_text(data, size));
    try {
        const io::GgufFile gguf(file.path());
        for (const auto& t : gguf.tensors()) {
            if (t.bytes > (std::size_t{1} << 22)) continue;
            std::vector<std::byte> dst(t.bytes);
            gguf.read(t, dst);
            try {
                std::vector<float> values(t.elements());
                gguf.read_float_range(t, 0, values);
            } catch (const FormatError&) {  // NaN or an infinity: a value, not a bug
            }
        }
        for (const auto& entry : gguf.metadata()) {  // every array read whole: as many elements as claimed
            const io::GgufValue value = gguf.value(entry.first);
            if (value.type == io::GgufValue::Type::array && value.elements.size() != value.array_length) __builtin_trap();
        }
        try {
            (void)tokenizer_from_gguf(gguf);
        } catch (const Error&) {
        }
        const GPT2Shape shape = gguf_gpt2_hyperparameters(gguf).shape;
        if (shape.parameters() > 4e6 || shape.n_ctx > 4096) return 0;
        Cpu cpu(1);
        const auto model = open_gpt2(cpu, file.path());
        const std::vector<TokenId> prompt = {0, static_cast<TokenId>(model->vocabulary_size() - 1)};
        (void)model->prefill(std::span<const TokenId>(prompt).first(std::min<std::size_t>(2, model->context_length())));
        if (model->position() < model->context_length()) (void)model->decode(0);
    } catch (const Error&) {
    }
    return 0;
}
