#pragma once
// Naive double-precision references for every kernel, written from the definitions, plus
// helpers shared by the CPU and CUDA kernel tests.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::test {

// Deterministic values in [lo, hi): a 64-bit LCG, so the data is the same on every platform.
inline std::vector<float> random_values(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& x : v) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const double unit = static_cast<double>(state >> 11) * 0x1.0p-53;
        x = static_cast<float>(lo + (hi - lo) * unit);
    }
    return v;
}

// c(m,n) = a(m,k) · w(n,k)ᵀ + bias(n); also returns Σ|a·w| per element (the error scale).
inline void gemm_reference(const std::vector<float>& a, const std::vector<float>& w, const std::vector<float>& bias,
                           std::size_t m, std::size_t n, std::size_t k, std::vector<double>& c,
                           std::vector<double>& scale) {
    c.assign(m * n, 0.0);
    scale.assign(m * n, 0.0);
    for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            double s = bias.empty() ? 0.0 : bias[j];
            double sa = bias.empty() ? 0.0 : std::fabs(bias[j]);
            for (std::size_t p = 0; p < k; ++p) {
                s += static_cast<double>(a[i * k + p]) * w[j * k + p];
                sa += std::fabs(static_cast<double>(a[i * k + p]) * w[j * k + p]);
            }
            c[i * n + j] = s;
            scale[i * n + j] = sa;
        }
    }
}

inline std::vector<double> layer_norm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                                const std::vector<float>& beta, double eps, std::size_t rows,
                                                std::size_t cols) {
    std::vector<double> out(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
        double mean = 0;
        for (std::size_t c = 0; c < cols; ++c) mean += x[r * cols + c];
        mean /= static_cast<double>(cols);
        double var = 0;
        for (std::size_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
        var /= static_cast<double>(cols);
        for (std::size_t c = 0; c < cols; ++c)
            out[r * cols + c] = (x[r * cols + c] - mean) / std::sqrt(var + eps) * gamma[c] + beta[c];
    }
    return out;
}

inline double gelu_reference(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}


// Causal attention, q(tq,h,d), k/v(tk,h,d); query i at position tk - tq + i.
inline std::vector<double> attention_reference(const std::vector<float>& q, const std::vector<float>& k,
                                               const std::vector<float>& v, std::size_t tq, std::size_t tk,
                                               std::size_t heads, std::size_t dim) {
    std::vector<double> out(tq * heads * dim, 0.0);
    const std::size_t row = heads * dim;
    for (std::size_t i = 0; i < tq; ++i) {
        for (std::size_t h = 0; h < heads; ++h) {
            const std::size_t last = tk - tq + i;
            std::vector<double> s(last + 1);
            double mx = -INFINITY;
            for (std::size_t j = 0; j <= last; ++j) {
                double dot = 0;
                for (std::size_t e = 0; e < dim; ++e)
                    dot += static_cast<double>(q[i * row + h * dim + e]) * k[j * row + h * dim + e];
                s[j] = dot / std::sqrt(static_cast<double>(dim));
                mx = std::max(mx, s[j]);
            }
            double sum = 0;
            for (auto& x : s) sum += (x = std::exp(x - mx));
            for (std::size_t j = 0; j <= last; ++j)
                for (std::size_t e = 0; e < dim; ++e)
                    out[i * row + h * dim + e] += s[j] / sum * v[j * row + h * dim + e];
        }
    }
    return out;
}

// Largest |got - want| / (abs_tol + rel_tol·|want|); the check passes when this is <= 1.
template <class Got>
double worst_error_ratio(const Got& got, const std::vector<double>& want, double abs_tol, double rel_tol) {
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        const double ratio = err / (abs_tol + rel_tol * std::fabs(want[i]));
        if (std::isnan(ratio)) return INFINITY;  // a NaN output always fails
        worst = std::max(worst, ratio);
    }
    return worst;
}

}  // namespace tessera::test
