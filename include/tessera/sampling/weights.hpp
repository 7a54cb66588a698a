#pragma once
// The arithmetic the sampling stages share, written to cost microseconds at V = 50,257:
// exp_weights (softmax weights with a polynomial exp the compiler vectorises) and
// keep_top_mass (the nucleus cut by a radix selection over the weights' bits, no sort).
#include <algorithm>  // std::fill, std::fill_n, std::min, std::sort
#include <array>      // std::array
#include <cmath>      // INFINITY
#include <bit>        // std::bit_cast
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint32_t, std::int32_t
#include <span>       // std::span
#include <vector>     // std::vector

#include <tessera/sampling/logit_processor.hpp>  // removed_logit

namespace tessera {

namespace detail {
// e^x for x <= 0, within 2 float ulps (Cephes' expf polynomial after a Cody-Waite range
// reduction); 0 below -87 (where e^x leaves the normal floats) and for -infinity. Written
// without branches so that loops over it vectorise.
inline float exp_nonpositive(float x) noexcept {
    // x < -87 (or -inf) as an integer test on the bits (negative floats order in reverse), so
    // that no floating-point comparison blocks the vectoriser.
    constexpr std::uint32_t minus_87 = 0xC2AE0000u;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    const bool underflow = bits > minus_87;
    const float y = std::bit_cast<float>(underflow ? minus_87 : bits);
    const auto n = static_cast<std::int32_t>(y * 1.44269504088896341f - 0.5f);  // round(y / ln 2), y <= 0
    const float fn = static_cast<float>(n);
    const float r = y - fn * 0.693359375f + fn * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float e = p * r * r + r + 1.0f;
    const float value = e * std::bit_cast<float>(static_cast<std::uint32_t>(n + 127) << 23);
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(value) & (underflow ? 0u : ~0u));
}

// Reductions over float arrays in independent lanes, which the compiler vectorises without
// -ffast-math (a single accumulator is a serial chain it may not reorder).
inline constexpr std::size_t lanes = 16;
template <class Init, class Step>
auto reduce_lanes(const float* x, std::size_t n, Init init, Step step) {
    std::array<decltype(init), lanes> acc;
    acc.fill(init);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (std::size_t j = 0; j < lanes; ++j) acc[j] = step(acc[j], x[i + j]);
    for (; i < n; ++i) acc[0] = step(acc[0], x[i]);
    return acc;
}
// The largest of x (no NaN among them; -infinity for none). Compared as integers: a float's
// bits, its magnitude bits flipped when negative, order as signed integers like the floats
// themselves, and the compiler vectorises an integer maximum but not a float one (whose NaN
// and signed-zero rules it must keep without -ffast-math): 16 scalar maxss chains otherwise.
inline std::int32_t order_key(float f) noexcept {
    const auto b = std::bit_cast<std::int32_t>(f);
    return b ^ ((b >> 31) & 0x7fffffff);
}
inline float max_of(std::span<const float> x) {
    std::array<std::int32_t, lanes> acc;
    acc.fill(order_key(-INFINITY));
    const float* p = x.data();
    std::size_t i = 0;
    for (; i + lanes <= x.size(); i += lanes) {
        for (std::size_t j = 0; j < lanes; ++j) {
            const std::int32_t k = order_key(p[i + j]);
            acc[j] = k > acc[j] ? k : acc[j];
        }
    }
    std::int32_t m = acc[0];
    for (const std::int32_t a : acc) m = a > m ? a : m;
    for (; i < x.size(); ++i) m = order_key(p[i]) > m ? order_key(p[i]) : m;
    return std::bit_cast<float>(order_key(std::bit_cast<float>(m)));  // (the mapping is its own inverse)
}

// Scans that look for the few tokens that matter (above the k-th largest logit, a nonzero
// weight after a truncation) among V = 50,257 test a block of 64 at once, a test the compiler
// vectorises, and visit a block token by token only when something in it passes: a scalar
// test per token was two thirds of the sampler's time (profiled).
inline constexpr std::size_t scan_block = 64;
inline bool any_above(const float* x, float threshold) noexcept {
    int any = 0;
    for (std::size_t j = 0; j < scan_block; ++j) any |= x[j] > threshold;
    return any != 0;
}
// Calls visit(i) for every i in [0, n) in order, skipping whole blocks none of whose x[i]
// is above `threshold()` (read again per block: it may rise while the scan runs).
template <class Threshold, class Visit>
void visit_above(const float* x, std::size_t n, Threshold&& threshold, Visit&& visit) {
    for (std::size_t b = 0; b < n; b += scan_block) {
        const std::size_t e = b + scan_block < n ? b + scan_block : n;
        if (e - b == scan_block && !any_above(x + b, threshold())) continue;
        for (std::size_t i = b; i < e; ++i) visit(i);
    }
}
}  // namespace detail

// weights[i] = exp(logits[i] - max logit) (0 for removed tokens); returns their sum. `weights`
// is resized to the logits' size (no allocation once it has that size).
inline double exp_weights(std::span<const float> logits, std::vector<float>& weights) {
    weights.resize(logits.size());
    const float max = detail::max_of(logits);
    const float* l = logits.data();
    float* w = weights.data();
    const std::size_t n = logits.size();
    for (std::size_t b = 0; b < n; b += detail::scan_block) {  // after a truncation most blocks are all removed
        if (b + detail::scan_block <= n && !detail::any_above(l + b, removed_logit)) {
            std::fill_n(w + b, detail::scan_block, 0.0f);
            continue;
        }
        const std::size_t e = std::min(n, b + detail::scan_block);
        for (std::size_t i = b; i < e; ++i) w[i] = detail::exp_nonpositive(l[i] - max);
    }
    const auto acc = detail::reduce_lanes(w, weights.size(), 0.0, [](double a, float v) { return a + v; });
    double total = 0;
    for (const double a : acc) total += a;
    return total;
}

// Scratch of keep_top_mass, reused across calls.
struct MassSelection {
    std::vector<std::uint32_t> ids;
    std::vector<double> bucket_mass;
    std::vector<float> kept_logits;
};

// Keeps (in logits) the shortest run of tokens, by weight descending and id ascending among
// equals, whose weights add up to at least `target`; removes the rest (at least one token
// stays). A positive float's bits order like its value, so the cut is found by a radix
// selection over those bits: 12 bits, 12 bits, then 8, each level one pass over the tokens
// still in the boundary bucket. O(V), no sort.
inline void keep_top_mass(std::span<float> logits, std::span<const float> weights, double target, MassSelection& s) {
    const std::size_t n = weights.size();
    const float* w = weights.data();
    const auto key = [w](std::size_t i) { return std::bit_cast<std::uint32_t>(w[i]); };
    struct Level {
        int shift;
        std::uint32_t buckets;
    };
    constexpr Level levels[] = {{20, 1u << 12}, {8, 1u << 12}, {0, 1u << 8}};
    double above = 0;            // weight of the tokens whose keys are above the boundary: all kept
    std::uint32_t boundary = 0;  // the boundary key's bits found so far
    // After a top-k, few tokens are left: then the first level, too, runs over their ids only.
    const auto live = detail::reduce_lanes(w, n, 0.0f, [](float a, float v) { return a + (v > 0 ? 1.0f : 0.0f); });
    float live_count = 0;
    for (const float c : live) live_count += c;
    bool over_all_tokens = live_count > static_cast<float>(n / 16);
    if (!over_all_tokens) {
        s.ids.clear();
        detail::visit_above(w, n, [] { return 0.0f; }, [&](std::size_t i) {
            if (w[i] > 0) s.ids.push_back(static_cast<std::uint32_t>(i));
        });
        // A handful (a top-k ran first): sorting them is cheaper than the histograms, whose
        // 2 x 4,096 buckets per level cost more to clear than the tokens do to order.
        if (s.ids.size() <= 256) {
            std::sort(s.ids.begin(), s.ids.end(), [w](std::uint32_t a, std::uint32_t b) { return w[a] > w[b] || (w[a] == w[b] && a < b); });
            std::size_t keep = 0;
            for (double m = 0; keep < s.ids.size() && (keep == 0 || m < target);) m += w[s.ids[keep++]];
            s.kept_logits.resize(keep);
            for (std::size_t j = 0; j < keep; ++j) s.kept_logits[j] = logits[s.ids[j]];
            std::fill(logits.begin(), logits.end(), removed_logit);  // (tokens of weight 0 too)
            for (std::size_t j = 0; j < keep; ++j) logits[s.ids[j]] = s.kept_logits[j];
            return;
        }
    }
    for (const Level level : levels) {
        const auto bucket = [&](std::size_t i) { return (key(i) >> level.shift) & (level.buckets - 1); };
        s.bucket_mass.assign(2 * level.buckets, 0.0);
        double* mass = s.bucket_mass.data();
        if (over_all_tokens) {  // two interleaved histograms: neighbours often share a bucket, halve that chain
            std::size_t i = 0;
            for (; i + 2 <= n; i += 2) {
                mass[bucket(i)] += w[i];
                mass[level.buckets + bucket(i + 1)] += w[i + 1];
            }
            if (i < n) mass[bucket(i)] += w[i];
        } else {
            for (const std::uint32_t id : s.ids) mass[bucket(id)] += w[id];
        }
        for (std::uint32_t b = 0; b < level.buckets; ++b) mass[b] += mass[level.buckets + b];
        if (over_all_tokens) mass[0] = 0.0;  // weight 0 (a removed token) is never kept
        std::uint32_t b = level.buckets - 1, lowest_used = b;
        for (;; --b) {
            if (mass[b] > 0) {
                lowest_used = b;
                if (above + mass[b] >= target) break;
                above += mass[b];
            }
            if (b == 0) {  // rounding left the target out of reach: the boundary is the last bucket
                b = lowest_used;
                above -= mass[b];
                break;
            }
        }
        boundary |= b << level.shift;
        if (over_all_tokens) {
            s.ids.clear();
            for (std::size_t i = 0; i < n; ++i)
                if (bucket(i) == b && w[i] > 0) s.ids.push_back(static_cast<std::uint32_t>(i));
        } else {
            std::erase_if(s.ids, [&](std::uint32_t id) { return bucket(id) != b; });
        }
        over_all_tokens = false;  // the next levels refine the boundary bucket's ids
    }
    // s.ids: the tokens whose weight is exactly the boundary's, in id order; the lowest ids
    // among them are kept until the target is reached (at least one).
    std::size_t keep_equal = 0;
    for (double m = above; keep_equal < s.ids.size() && (keep_equal == 0 || m < target);) m += w[s.ids[keep_equal++]];
    s.kept_logits.resize(keep_equal);
    for (std::size_t j = 0; j < keep_equal; ++j) s.kept_logits[j] = logits[s.ids[j]];
    float* l = logits.data();
    for (std::size_t i = 0; i < n; ++i) l[i] = key(i) > boundary ? l[i] : removed_logit;
    for (std::size_t j = 0; j < keep_equal; ++j) logits[s.ids[j]] = s.kept_logits[j];
}

}  // namespace tessera
