#pragma once
// The models that tessera::models holds compiled (src/models/open_model.cpp): every model that
// load_gpt2, load_gpt2_as, open_gpt2, open_llama and open_model_on build on the CPU, GPT-2 of
// any shape and the Llama family in each weight format. Where TESSERA_COMPILED_MODELS is
// defined (CMake defines it for every target that links tessera::models), these explicit
// instantiation declarations keep a program from compiling the layers' kernels again: a program
// that loads GPT-2 through the templates and runs it compiled in 32 s and 1,010 MB without them
// (-O2; bench/RESULTS.md). Without it, everything stays header-only, as before.
#if defined(TESSERA_COMPILED_MODELS)
#include <tessera/backend/cpu.hpp>          // Cpu
#include <tessera/core/dtype.hpp>           // bf16, Q8_0, Q4_0, Q6_K
#include <tessera/core/weight_formats.hpp>  // KQuantMix
#include <tessera/models/gpt2.hpp>          // GPT2Architecture, GPT2Dynamic
#include <tessera/models/llama.hpp>         // LlamaArchitecture
#include <tessera/nn/positions.hpp>         // LearnedPositions

namespace tessera {
extern template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, float, float>;
extern template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, bf16, bf16>;
extern template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, Q8_0, Q8_0>;
extern template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, Q4_0, Q6_K>;
extern template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, Q4_0, Q8_0>;
extern template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, KQuantMix, Q6_K>;
extern template class DecoderModel<GPT2Architecture<GPT2Dynamic, LearnedPositions>, Cpu, KQuantMix, Q8_0>;
extern template class DecoderModel<LlamaArchitecture, Cpu, float, float>;
extern template class DecoderModel<LlamaArchitecture, Cpu, bf16, bf16>;
extern template class DecoderModel<LlamaArchitecture, Cpu, Q8_0, Q8_0>;
extern template class DecoderModel<LlamaArchitecture, Cpu, Q4_0, Q6_K>;
extern template class DecoderModel<LlamaArchitecture, Cpu, Q4_0, Q8_0>;
extern template class DecoderModel<LlamaArchitecture, Cpu, KQuantMix, Q6_K>;
extern template class DecoderModel<LlamaArchitecture, Cpu, KQuantMix, Q8_0>;
}  // namespace tessera
#endif
