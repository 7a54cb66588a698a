// The server's request parser: any body is either refused with an ApiError (400 and the
// parameter) or becomes a request the engine can run: prompts within the context, token ids in
// the vocabulary, a sampler that builds. Nothing else may escape, crash or hang.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "../../examples/server/openai_api.hpp"
#include "fuzz_input.hpp"
#include "gpt2_tokenizer.hpp"

using tessera::fuzz::gpt2;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tessera::server;
    nlohmann::json body;
    try {
        body = nlohmann::json::parse(tessera::fuzz::as_text(data, size));
    } catch (const nlohmann::json::exception&) {
        return 0;  // the route answers 400 before the parser runs
    }
    constexpr std::size_t context = 64;
    try {
        const CompletionRequest r = parse_completion_request(body, gpt2(), context, RequestLimits{});
        if (r.prompts.empty() || r.prompts.size() != r.prompt_texts.size() || r.n < 1 || r.choices() > RequestLimits{}.max_choices) {
            __builtin_trap();
        }
        for (const auto& p : r.prompts) {
            if (p.size() >= context) __builtin_trap();
            for (const auto id : p) {
                if (id < 0 || static_cast<std::size_t>(id) >= gpt2().vocab_size()) __builtin_trap();
            }
        }
        (void)tessera::make_sampler(r.sampling);  // checked: must not throw now
    } catch (const ApiError& e) {
        if (e.status != 400) __builtin_trap();
        (void)dump(error_body(e.what(), e.type, e.param));
    }
    return 0;
}
