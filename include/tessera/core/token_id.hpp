#pragma once
// TokenId: a token's index in a vocabulary. Signed 32-bit as in every GPT-2 tool (tiktoken,
// Hugging Face, llama.cpp), so a negative id is representable and refused where it arrives.
#include <cstdint>  // std::int32_t

namespace tessera {

using TokenId = std::int32_t;

}  // namespace tessera
