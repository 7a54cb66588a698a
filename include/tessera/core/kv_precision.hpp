#pragma once
// KvPrecision: how a KV cache stores keys and values (nn/kv_cache.hpp). f32 is the default;
// bf16 halves the cache's memory and the bytes attention reads, for keys and values rounded
// to 8 significant bits.
#include <optional>     // std::optional
#include <string_view>  // std::string_view

namespace tessera {

enum class KvPrecision { f32, bf16 };

inline constexpr std::string_view kv_precision_name(KvPrecision p) noexcept { return p == KvPrecision::f32 ? "f32" : "bf16"; }
inline constexpr std::optional<KvPrecision> kv_precision_named(std::string_view name) noexcept {
    if (name == "f32") return KvPrecision::f32;
    if (name == "bf16") return KvPrecision::bf16;
    return std::nullopt;
}

}  // namespace tessera
