#pragma once
// The umbrella header for users: every host-safe part of tessera. Internal code includes only
// what it uses. CUDA code lives in tessera/backend/cuda/*.cuh, for .cu translation units.
#include <tessera/config.hpp>                // version, TESSERA_HOST_DEVICE
#include <tessera/core/error.hpp>            // Error, FormatError, ShapeError, ...
#include <tessera/core/extents.hpp>          // Extents, dyn
#include <tessera/core/dtype.hpp>            // bf16, f16
#include <tessera/core/concepts.hpp>         // TensorLike, StorageBackend
#include <tessera/core/tensor_view.hpp>      // TensorView
#include <tessera/core/tensor.hpp>           // Tensor
#include <tessera/backend/backend.hpp>       // Backend concept
#include <tessera/backend/cpu.hpp>           // Cpu
#include <tessera/backend/cuda.hpp>          // Cuda (declaration; complete in backend/cuda/cuda.cuh)
#include <tessera/ops/matrix_products.hpp>   // gemm, gemv
#include <tessera/ops/elementwise.hpp>       // add, gelu, silu_mul
#include <tessera/ops/normalization.hpp>     // layer_norm, rms_norm
#include <tessera/ops/rotary.hpp>            // rotary
#include <tessera/ops/attention.hpp>         // causal_attention
#include <tessera/ops/transfer.hpp>          // to_host, copy_from_host, convert
#include <tessera/text/bpe_tokenizer.hpp>    // BpeTokenizer, TokenId, SpecialTokens
#include <tessera/text/stream_decoder.hpp>   // StreamDecoder
#include <tessera/io/safetensors.hpp>        // io::SafetensorsFile (and io::ReadOnlyFile)
#include <tessera/io/gguf.hpp>               // io::GgufFile
#include <tessera/nn/decoder_block.hpp>      // DecoderBlock and the layers it is made of
#include <tessera/nn/llama_block.hpp>        // LlamaBlock and the layers it is made of
#include <tessera/nn/embedding.hpp>          // Embedding
#include <tessera/nn/positions.hpp>          // LearnedPositions, SinusoidalPositions
#include <tessera/models/decoder_model.hpp>  // DecoderModel<Architecture, Backend, W>
#include <tessera/models/gpt2.hpp>           // GPT2<Config, Backend>
#include <tessera/models/load_gpt2.hpp>      // load_gpt2, open_gpt2, Gpt2Files, HfGpt2Config
#include <tessera/models/llama.hpp>          // Llama<Backend, W>: llama, qwen2, qwen3
#include <tessera/models/load_llama.hpp>     // open_llama, LlamaFiles
#include <tessera/models/compiled_models.hpp>  // (with tessera::models: the models it holds compiled)
#include <tessera/models/open_tokenizer.hpp> // open_tokenizer (a directory or a GGUF file)
#include <tessera/models/perplexity.hpp>     // evaluate_perplexity
#include <tessera/sampling/sampler.hpp>      // Sampler, SamplingParams, make_sampler, the processors
#include <tessera/generation/generator.hpp>  // Generator, GenerationOptions, Completion
#include <tessera/generation/batch_generator.hpp>  // BatchGenerator, BatchOptions (many sequences at once)
