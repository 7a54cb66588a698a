#pragma once
// How far one model's next-token distributions are from another's, position by position, the
// way llama.cpp's `perplexity --kl-divergence` reports a quantized model against its f32 base:
// KL(P_base || P) = Σ_v p_base(v) (log p_base(v) - log p(v)), in nats, per position; its mean,
// median, 99th percentile and maximum; and how often both put the same token first (top-1
// agreement). Softmax in double from the logits, so the comparison adds no rounding of its own.
#include <algorithm>  // std::max_element, std::sort
#include <cmath>      // std::exp, std::log
#include <cstddef>    // std::size_t
#include <span>       // std::span
#include <string>     // std::to_string
#include <vector>     // std::vector

#include <tessera/core/error.hpp>  // ArgumentError

namespace tessera {

class DistributionComparison {
public:
    // One position: the base model's logits and the compared model's, over the same vocabulary.
    void add(std::span<const float> base, std::span<const float> other) {
        if (base.size() != other.size() || base.empty()) {
            throw ArgumentError("DistributionComparison: logits of " + std::to_string(base.size()) + " and " +
                                std::to_string(other.size()) + " tokens");
        }
        log_softmax(base, base_);
        log_softmax(other, other_);
        double kl = 0;
        for (std::size_t v = 0; v < base_.size(); ++v) kl += std::exp(base_[v]) * (base_[v] - other_[v]);
        kl_.push_back(kl > 0 ? kl : 0.0);  // a sum of tiny negative rounding is zero
        const auto first = [](std::span<const float> l) { return std::max_element(l.begin(), l.end()) - l.begin(); };
        agree_ += first(base) == first(other);
    }

    std::size_t positions() const noexcept { return kl_.size(); }
    double mean() const noexcept {
        double s = 0;
        for (const double k : kl_) s += k;
        return kl_.empty() ? 0.0 : s / static_cast<double>(kl_.size());
    }
    // The q-quantile (0..1) of the per-position divergences, nearest rank.
    double quantile(double q) const {
        if (kl_.empty()) return 0.0;
        std::vector<double> sorted = kl_;
        std::sort(sorted.begin(), sorted.end());
        const auto rank = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
        return sorted[std::min(rank, sorted.size() - 1)];
    }
    double top1_agreement() const noexcept {
        return kl_.empty() ? 0.0 : static_cast<double>(agree_) / static_cast<double>(kl_.size());
    }

private:
    static void log_softmax(std::span<const float> logits, std::vector<double>& out) {
        const double max = *std::max_element(logits.begin(), logits.end());
        double sum = 0;
        for (const float l : logits) sum += std::exp(static_cast<double>(l) - max);
        const double log_sum = std::log(sum) + max;
        out.resize(logits.size());
        for (std::size_t v = 0; v < logits.size(); ++v) out[v] = static_cast<double>(logits[v]) - log_sum;
    }

    std::vector<double> kl_;
    std::size_t agree_ = 0;
    std::vector<double> base_, other_;
};

}  // namespace tessera
