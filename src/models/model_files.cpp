// The files' parsers, compiled once here for every program that links tessera::models
// (config.hpp: TESSERA_PARSER_DEFINITIONS): opening a GPT-2 or a Llama-family model's files,
// which is everything below them (GGUF, safetensors, JSON, the checks) and about 70 MB of
// compiler memory in each program that would compile it (bench/RESULTS.md).
#define TESSERA_MODELS_SOURCE
#include <tessera/models/load_gpt2.hpp>   // Gpt2Files
#include <tessera/models/load_llama.hpp>  // LlamaFiles
