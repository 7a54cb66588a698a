#pragma once
// Causal multi-head attention on the host, exact softmax (scores kept, not streamed).
#include <algorithm>   // std::max, std::all_of
#include <cmath>       // std::sqrt, INFINITY
#include <span>        // std::span
#include <type_traits> // std::is_same_v

#include <tessera/backend/cpu/aligned_buffer.hpp>  // AlignedBuffer
#include <tessera/backend/cpu/eigen_maps.hpp>   // ConstVectorMap, VectorMap, ArrayMap
#include <tessera/backend/cpu/thread_pool.hpp>  // ThreadPool

namespace tessera::cpu {

// Queries at or above this count use the per-head matrix-product path (prefill); fewer use the
// per-query path (decoding), which touches only the visible keys.
inline constexpr std::size_t attention_block_queries = 16;

// Scratch floats per thread that causal_attention needs for the scores ...
inline std::size_t attention_score_floats(std::size_t tq, std::size_t tk) noexcept {
    return tq >= attention_block_queries ? tq * tk : tk;
}
// ... in all, with keys and values in bf16 of head_dim `bf16_dim` (0: float keys and values):
// those are widened after the scores, one row per query, or a head's keys and values in the
// matrix-product path.
inline std::size_t attention_scratch_floats(std::size_t tq, std::size_t tk, std::size_t bf16_dim = 0) noexcept {
    const std::size_t scores = attention_score_floats(tq, tk);
    if (bf16_dim == 0) return scores;
    return aligned_floats(scores) + (tq >= attention_block_queries ? 2 * tk * bf16_dim : bf16_dim);
}

// n stored values as floats: the row itself for float, else widened into `buffer`.
template <class KV>
const float* widened(const KV* row, std::size_t n, float* buffer) noexcept {
    if constexpr (std::is_same_v<KV, float>) {
        return row;
    } else {
        for (std::size_t i = 0; i < n; ++i) buffer[i] = static_cast<float>(row[i]);
        return buffer;
    }
}

// Query i (at position tk - tq + i) of head h over keys 0..its position: the per-query path.
// `scores` holds tk floats, `widen` dim floats (for bf16 keys and values).
template <class KV>
void attend_one(const float* q, const KV* k, const KV* v, float* out, std::size_t tq, std::size_t tk, std::size_t heads,
                std::size_t dim, std::size_t i, std::size_t h, float* scores, float* widen) {
    const auto d = static_cast<Eigen::Index>(dim);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    const std::size_t row = heads * dim;  // stride between positions
    const std::size_t last = tk - tq + i;  // last visible key
    const ConstVectorMap qi(q + i * row + h * dim, d);
    float max_score = -INFINITY;
    for (std::size_t j = 0; j <= last; ++j) {
        scores[j] = scale * qi.dot(ConstVectorMap(widened(k + j * row + h * dim, dim, widen), d));
        max_score = std::max(max_score, scores[j]);
    }
    ArrayMap p(scores, static_cast<Eigen::Index>(last + 1));
    p = (p - max_score).exp();
    const float inv_sum = 1.0f / p.sum();
    VectorMap o(out + i * row + h * dim, d);
    o.setZero();
    for (std::size_t j = 0; j <= last; ++j) o += scores[j] * ConstVectorMap(widened(v + j * row + h * dim, dim, widen), d);
    o *= inv_sum;
}

// Rows [0, n) of head h of a stored (n, heads, dim) tensor as an (n, dim) float matrix: the
// tensor itself (strided) for float, else widened into `buffer` (n * dim floats).
template <class KV>
ConstMatrixMap head_matrix(const KV* t, std::size_t n, std::size_t heads, std::size_t dim, std::size_t h, float* buffer) {
    if constexpr (std::is_same_v<KV, float>) {
        return matrix(t + h * dim, n, dim, heads * dim);
    } else {
        for (std::size_t j = 0; j < n; ++j) widened(t + j * heads * dim + h * dim, dim, buffer + j * dim);
        return matrix(static_cast<const float*>(buffer), n, dim, dim);
    }
}

// q(tq, heads, dim), k and v (tk, heads, dim), out(tq, heads, dim); query i is at position
// tk - tq + i and attends keys 0..that position. k and v are float, or bf16 (widened to float
// row by row). `scratch` holds attention_scratch_floats per thread (for bf16: the widened rows
// after the scores), sized by the caller so that this kernel never allocates, and aligned alike:
// Eigen's sums peel to an alignment, so rows at differently aligned addresses would be summed
// in different orders, and a result would depend on which thread computed it. out may alias q
// (each query row is read whole before its output row is written), not k or v.
template <class KV>
[[gnu::noinline]] void causal_attention(ThreadPool& pool, std::span<AlignedBuffer<float>> scratch, const float* q, const KV* k,
                                        const KV* v, float* out, std::size_t tq, std::size_t tk, std::size_t heads,
                                        std::size_t dim) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    const std::size_t row = heads * dim;  // stride between positions
    const std::size_t widen_at = aligned_floats(attention_score_floats(tq, tk));
    if (tq >= attention_block_queries) {
        // Per head: S = Q Kᵀ / √D as one matrix product, causal softmax row by row (masked
        // entries become 0), O = S V. Computes the masked half too, but at matrix-product speed.
        const auto rows_k = static_cast<Eigen::Index>(tk);
        pool.parallel_for(heads, 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
            MatrixMap scores = matrix(scratch[thread].data(), tq, tk, tk);
            float* widen = scratch[thread].data() + widen_at;
            for (std::size_t h = begin; h < end; ++h) {
                const ConstMatrixMap qh = matrix(q + h * dim, tq, dim, row);
                const ConstMatrixMap kh = head_matrix(k, tk, heads, dim, h, widen);
                const ConstMatrixMap vh = head_matrix(v, tk, heads, dim, h, widen + tk * dim);
                scores.noalias() = qh * kh.transpose();
                for (std::size_t i = 0; i < tq; ++i) {
                    const auto visible = static_cast<Eigen::Index>(tk - tq + i + 1);
                    auto r = scores.row(static_cast<Eigen::Index>(i));
                    auto p = r.head(visible).array();
                    p = ((p - p.maxCoeff()) * scale).exp();
                    p /= p.sum();
                    r.tail(rows_k - visible).setZero();
                }
                matrix(out + h * dim, tq, dim, row).noalias() = matrix(scratch[thread].data(), tq, tk, tk) * vh;
            }
        });
        return;
    }
    pool.parallel_for(tq * heads, 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
        for (std::size_t task = begin; task < end; ++task) {
            attend_one(q, k, v, out, tq, tk, heads, dim, task / heads, task % heads, scratch[thread].data(),
                       scratch[thread].data() + widen_at);
        }
    });
}

// One sequence's operands in causal_attention_each.
template <class KV>
struct AttentionSequence {
    const float* q;
    const KV* k;
    const KV* v;
    float* out;
    std::size_t tq, tk;
};

// causal_attention for each sequence (the same heads and dim), with the same results. When
// every sequence has one query (a batched decode step) all their (sequence, head) pairs are one
// job for the pool instead of one job per sequence: each job is a few microseconds of work.
// `scratch` as causal_attention's, for the longest sequence.
template <class KV>
void causal_attention_each(ThreadPool& pool, std::span<AlignedBuffer<float>> scratch,
                           std::span<const AttentionSequence<KV>> each, std::size_t heads, std::size_t dim) {
    const bool one_query_each = std::all_of(each.begin(), each.end(), [](const AttentionSequence<KV>& s) { return s.tq == 1; });
    if (!one_query_each) {
        for (const AttentionSequence<KV>& s : each) causal_attention(pool, scratch, s.q, s.k, s.v, s.out, s.tq, s.tk, heads, dim);
        return;
    }
    std::size_t most_k = 0;
    for (const AttentionSequence<KV>& s : each) most_k = std::max(most_k, s.tk);
    const std::size_t widen_at = aligned_floats(attention_score_floats(1, most_k));
    pool.parallel_for(each.size() * heads, 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
        for (std::size_t task = begin; task < end; ++task) {
            const AttentionSequence<KV>& s = each[task / heads];
            attend_one(s.q, s.k, s.v, s.out, 1, s.tk, heads, dim, 0, task % heads, scratch[thread].data(),
                       scratch[thread].data() + widen_at);
        }
    });
}

}  // namespace tessera::cpu
