#pragma once
// KvPrecision: how a KV cache stores keys and values (nn/kv_cache.hpp). f32 is the default;
// bf16 halves the cache's memory and the bytes attention reads, for keys and values rounded
// to 8 significant bits; q8_0 takes 34 bytes per 32 values (GGUF's Q8_0 blocks: an f16 scale
// and 32 int8s per 32 values of one head), 0.27 of f32's, for keys and values rounded to 1/254
// of their block's largest magnitude.
#include <optional>     // std::optional
#include <string_view>  // std::string_view

namespace tessera {

enum class KvPrecision { f32, bf16, q8_0 };

inline constexpr std::string_view kv_precision_name(KvPrecision p) noexcept {
    return p == KvPrecision::f32 ? "f32" : p == KvPrecision::bf16 ? "bf16" : "q8_0";
}
inline constexpr std::optional<KvPrecision> kv_precision_named(std::string_view name) noexcept {
    for (const KvPrecision p : {KvPrecision::f32, KvPrecision::bf16, KvPrecision::q8_0})
        if (name == kv_precision_name(p)) return p;
    return std::nullopt;
}

}  // namespace tessera
