#pragma once
// Rng: xoshiro256** seeded through SplitMix64 (both by Blackman and Vigna), with uniform()
// built from the top 53 bits. Fully specified by its algorithm, so a seed gives the same
// stream, and the same sampled tokens, on every platform and standard library (the <random>
// distributions do not promise that).
#include <array>    // std::array
#include <cstdint>  // std::uint64_t

namespace tessera {

class Rng {
public:
    explicit Rng(std::uint64_t seed) noexcept : seed_(seed) {
        std::uint64_t x = seed;
        for (auto& word : state_) word = splitmix64(x);
    }

    std::uint64_t seed() const noexcept { return seed_; }

    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, 1), 53 random bits.
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    static std::uint64_t splitmix64(std::uint64_t& x) noexcept {
        std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    std::uint64_t seed_;
    std::array<std::uint64_t, 4> state_{};
};

}  // namespace tessera
