#pragma once
// Which of tessera's own x86 kernels run: the widest this CPU has (AMX-BF16 tiles with AVX-512,
// else AVX-512, else AVX2 with FMA and F16C, else the portable loops), or a narrower level named
// by the environment variable TESSERA_CPU_KERNELS (portable, avx2, avx512, amx), so that every
// path can be tested and compared on one machine. Chosen at run time, never by -march: each
// kernel is compiled for its own instructions by a target pragma (see matrix_products_avx512.hpp
// on the one-definition rule).
#include <cstdlib>      // std::getenv
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

#include <tessera/core/error.hpp>  // ArgumentError

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSERA_HAS_X86_KERNELS 1
#include <cpuid.h>  // __get_cpuid_count
#if defined(__linux__)
#include <sys/syscall.h>  // SYS_arch_prctl
#include <unistd.h>       // syscall
#endif
#endif

namespace tessera::cpu {

enum class KernelLevel { portable, avx2, avx512, amx };

// The level TESSERA_CPU_KERNELS names; nothing when it is unset or empty; ArgumentError naming
// the variable for any other value.
inline std::optional<KernelLevel> requested_kernel_level() {
    const char* value = std::getenv("TESSERA_CPU_KERNELS");
    if (value == nullptr || *value == '\0') return std::nullopt;
    const std::string_view v(value);
    if (v == "portable") return KernelLevel::portable;
    if (v == "avx2") return KernelLevel::avx2;
    if (v == "avx512") return KernelLevel::avx512;
    if (v == "amx") return KernelLevel::amx;
    throw ArgumentError("TESSERA_CPU_KERNELS=" + std::string(v) + ": expected portable, avx2, avx512 or amx");
}

// Whether AMX tiles with bf16 products can run here: the CPU has them (CPUID leaf 7: AMX-TILE,
// AMX-BF16) and Linux lets this process use their 8 KiB of state, which it must ask for once
// (arch_prctl ARCH_REQ_XCOMP_PERM; without it the first tile instruction kills the process).
// Asked once per process, on first use; the permission holds for all its threads.
inline bool amx_bf16_usable() noexcept {
#if TESSERA_HAS_X86_KERNELS && defined(__linux__)
    static const bool usable = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
        constexpr unsigned amx_bf16 = 1u << 22, amx_tile = 1u << 24;
        if ((edx & (amx_bf16 | amx_tile)) != (amx_bf16 | amx_tile)) return false;
        constexpr long request_permission = 0x1023, tile_data = 18;  // ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
        return syscall(SYS_arch_prctl, request_permission, tile_data) == 0;
    }();
    return usable;
#else
    return false;
#endif
}

// The widest level this CPU runs.
inline KernelLevel supported_kernel_level() noexcept {
#if TESSERA_HAS_X86_KERNELS
    if (__builtin_cpu_supports("avx512f")) return amx_bf16_usable() ? KernelLevel::amx : KernelLevel::avx512;
    // Every CPU with AVX2 and FMA has F16C (clang 14's __builtin_cpu_supports does not know it).
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return KernelLevel::avx2;
#endif
    return KernelLevel::portable;
}

// The level the kernels use: the supported one, narrowed by the request. Read once per process;
// an invalid request counts as none here (Cpu's constructor refuses it by name before any
// kernel runs).
inline KernelLevel kernel_level() noexcept {
    static const KernelLevel level = [] {
        const KernelLevel supported = supported_kernel_level();
        std::optional<KernelLevel> requested;
        try {
            requested = requested_kernel_level();
        } catch (const ArgumentError&) {
        }
        return requested && *requested < supported ? *requested : supported;
    }();
    return level;
}

inline bool has_amx() noexcept { return kernel_level() >= KernelLevel::amx; }
inline bool has_avx512() noexcept { return kernel_level() >= KernelLevel::avx512; }
inline bool has_avx2() noexcept { return kernel_level() >= KernelLevel::avx2; }

}  // namespace tessera::cpu
