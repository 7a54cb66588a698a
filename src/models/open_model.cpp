// open_model_on (models/open_model.hpp), compiled once for every program that links
// tessera::models: GPT-2 and the Llama family, each weight format, on the CPU; GPT-2 on CUDA
// through tessera::cuda. And the models those are, compiled here for every such program
// (models/compiled_models.hpp declares them).
#include <tessera/models/open_model.hpp>

#include <memory>  // std::make_shared
#include <string>  // std::string

#include <tessera/backend/cpu.hpp>               // Cpu
#include <tessera/core/error.hpp>                // ArgumentError, FormatError
#include <tessera/models/llama_checkpoints.hpp>  // is_llama_family
#include <tessera/models/load_gpt2.hpp>          // Gpt2Files
#include <tessera/models/load_llama.hpp>         // open_llama
#include <tessera/models/compiled_models.hpp>    // the models declared compiled here
#include <tessera/models/open_gpt2_on.hpp>       // open_gpt2_on

namespace tessera {

// The explicit instantiations that models/compiled_models.hpp declares, one for one.
template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, float, float>;
template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, bf16, bf16>;
template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, Q8_0, Q8_0>;
template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, Q4_0, Q6_K>;
template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, Q4_0, Q8_0>;
template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, KQuantMix, Q6_K>;
template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, KQuantMix, Q8_0>;
template class DecoderModel<LlamaArchitecture, Cpu, float, float>;
template class DecoderModel<LlamaArchitecture, Cpu, bf16, bf16>;
template class DecoderModel<LlamaArchitecture, Cpu, Q8_0, Q8_0>;
template class DecoderModel<LlamaArchitecture, Cpu, Q4_0, Q6_K>;
template class DecoderModel<LlamaArchitecture, Cpu, Q4_0, Q8_0>;
template class DecoderModel<LlamaArchitecture, Cpu, KQuantMix, Q6_K>;
template class DecoderModel<LlamaArchitecture, Cpu, KQuantMix, Q8_0>;
// ... and open_gpt2 / open_llama on the CPU, which load_gpt2.hpp and load_llama.hpp declare.
template std::unique_ptr<LanguageModel> open_gpt2(Cpu&, const std::filesystem::path&, std::shared_ptr<void>, std::optional<WeightFormatId>);
template std::unique_ptr<LanguageModel> open_llama(Cpu&, const std::filesystem::path&, std::shared_ptr<void>, std::optional<WeightFormatId>,
                                                   std::optional<std::size_t>);

std::unique_ptr<LanguageModel> open_model_on(std::string_view backend, const std::filesystem::path& path, unsigned cpu_threads,
                                             std::optional<WeightFormatId> weights, int cuda_device, std::optional<std::size_t> context) {
    const std::string architecture = model_architecture(path);
    if (architecture == "gpt2") {
        if (context) {  // checked before any weight is read
            if (const std::size_t own = Gpt2Files(path).hyperparameters().shape.n_ctx; *context != own) {
                throw ArgumentError("a context of " + std::to_string(*context) + " positions: a GPT-2 keeps its own " +
                                    std::to_string(own) + " (its position table's)");
            }
        }
        return open_gpt2_on(backend, path, cpu_threads, weights, cuda_device);
    }
    if (!is_llama_family(architecture)) {
        throw FormatError(path.string() + ": the architecture '" + architecture + "' is not supported (gpt2, llama, mistral, qwen2, qwen3 are)");
    }
    if (backend == "cuda") throw ArgumentError("the CUDA backend runs GPT-2 only: run " + architecture + " models with --backend cpu");
    if (backend != "cpu") throw ArgumentError("unknown backend '" + std::string(backend) + "': cpu or cuda");
    auto cpu = std::make_shared<Cpu>(cpu_threads);
    return open_llama(*cpu, path, cpu, weights, context);
}

}  // namespace tessera
