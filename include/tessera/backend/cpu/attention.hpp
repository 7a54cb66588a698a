#pragma once
// Causal multi-head attention on the host, exact softmax (scores kept, not streamed).
#include <algorithm>   // std::max, std::min, std::all_of
#include <cmath>       // std::sqrt, INFINITY
#include <span>        // std::span
#include <type_traits> // std::is_same_v

#include <tessera/backend/cpu/aligned_buffer.hpp>  // AlignedBuffer
#include <tessera/backend/cpu/eigen_maps.hpp>   // ConstVectorMap, VectorMap, ArrayMap
#include <tessera/backend/cpu/matrix_products_avx512.hpp>  // float_panels_columns, has_avx512
#include <tessera/backend/cpu/thread_pool.hpp>  // ThreadPool
#include <tessera/core/weight_formats.hpp>      // WeightFormat<Q8_0>: a Q8_0 cache's blocks

namespace tessera::cpu {

// Queries at or above this count use the per-head matrix-product path (prefill); fewer use the
// per-query path (decoding), which touches only the visible keys.
inline constexpr std::size_t attention_block_queries = 16;

// The per-query path takes a head's keys and values this many at a time, fetching the next ones
// into the caches meanwhile.
inline constexpr std::size_t attention_key_chunk = 32;

// The matrix-product path takes a head's queries this many at a time, each block over the keys
// its last query sees.
inline constexpr std::size_t attention_query_block = 64;

// Whether the matrix-product path runs on the AVX-512 float tiles (the weights' arranged_float
// tiles, over a head's keys arranged into panels and over its values as they lie): where the
// CPU has AVX-512 and head_dim is a multiple of 16. Eigen's products over these small blocks
// (64 queries, head_dim 64) packed both operands per block and ran at about half the FMA peak.
inline bool attention_on_tiles(std::size_t dim) noexcept {
#if TESSERA_HAS_AVX512_KERNELS
    return has_avx512() && dim % avx512::float_panel_rows == 0;
#else
    (void)dim;
    return false;
#endif
}

// Keys rounded up to whole panels of 16 (the tiles' score columns).
inline std::size_t attention_panel_keys(std::size_t tk) noexcept { return (tk + 15) / 16 * 16; }

// Scratch floats per thread that causal_attention needs for the scores (`group` query heads per
// key/value head) ...
inline std::size_t attention_score_floats(std::size_t tq, std::size_t tk, std::size_t dim, std::size_t group) noexcept {
    if (tq < attention_block_queries) return group * aligned_floats(tk);
    return std::min(tq, attention_query_block) * (attention_on_tiles(dim) ? attention_panel_keys(tk) : tk);
}
// ... in all, for head_dim `dim` and keys and values in float or (`widened`) in bf16 or Q8_0,
// widened after the scores: on the tiles, a head's keys arranged (and, widened, its values);
// otherwise, widened, a head's keys and values in the matrix-product path, a chunk of them in
// the per-query path.
inline std::size_t attention_scratch_floats(std::size_t tq, std::size_t tk, std::size_t dim, bool widened,
                                            std::size_t group) noexcept {
    const std::size_t scores = aligned_floats(attention_score_floats(tq, tk, dim, group));
    if (tq >= attention_block_queries && attention_on_tiles(dim))
        return scores + aligned_floats(attention_panel_keys(tk) * dim) + (widened ? tk * dim : 0);
    if (!widened) return scores;
    return scores + (tq >= attention_block_queries ? 2 * tk : attention_key_chunk) * dim;
}

// Keys and values are stored as float, bf16 or Q8_0 blocks (a KV cache's precision): a stored
// (positions, heads, dim) tensor holds dim / kv_block<KV> elements per head and position.
template <class KV>
inline constexpr std::size_t kv_block = std::is_same_v<KV, Q8_0> ? WeightFormat<Q8_0>::block : 1;

// The element of a stored tensor that holds its value number `value` (counted as in a float one).
template <class KV>
const KV* kv_at(const KV* t, std::size_t value) noexcept {
    return t + value / kv_block<KV>;
}

// Value c of a stored row, widened to float (a Q8_0 value as d * q, as dequantize has it).
template <class KV>
float kv_value(const KV* row, std::size_t c) noexcept {
    if constexpr (std::is_same_v<KV, Q8_0>) return static_cast<float>(row[c / 32].qs[c % 32]) * static_cast<float>(row[c / 32].d);
    else return static_cast<float>(row[c]);
}

// Rows [first, first + n) of head h of a stored (positions, heads, dim) tensor as an (n, dim)
// float matrix: the tensor itself (strided) for float, else widened into `buffer` (n * dim floats).
template <class KV>
ConstMatrixMap head_rows(const KV* t, std::size_t first, std::size_t n, std::size_t heads, std::size_t dim, std::size_t h,
                         float* buffer) {
    if constexpr (std::is_same_v<KV, float>) {
        return matrix(t + first * heads * dim + h * dim, n, dim, heads * dim);
    } else {
        for (std::size_t j = 0; j < n; ++j) {
            const KV* row = kv_at(t, (first + j) * heads * dim + h * dim);
            if constexpr (std::is_same_v<KV, Q8_0>) WeightFormat<Q8_0>::dequantize(row, buffer + j * dim, dim);
            else for (std::size_t c = 0; c < dim; ++c) buffer[j * dim + c] = static_cast<float>(row[c]);
        }
        return matrix(static_cast<const float*>(buffer), n, dim, dim);
    }
}

// Asks for rows [first, min(first + n, end)) of head h into the caches. The rows are heads * dim
// apart, a few cache lines each, which the hardware does not fetch ahead well: without this the
// per-query loop waited on every row (measured: 80% of its time on the loads, 16 sequences deep
// in their context; with it 1.16x the aggregate decode there).
template <class KV>
void prefetch_head_rows(const KV* t, std::size_t first, std::size_t n, std::size_t end, std::size_t heads, std::size_t dim,
                        std::size_t h) noexcept {
    const std::size_t row_bytes = dim / kv_block<KV> * sizeof(KV);
    for (std::size_t j = first; j < std::min(first + n, end); ++j) {
        const char* row = reinterpret_cast<const char*>(kv_at(t, j * heads * dim + h * dim));
        for (std::size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + b);
    }
}

// The key/value head that query head h reads: heads / kv_heads query heads share each one
// (grouped-query attention; kv_heads == heads is multi-head attention).
inline std::size_t kv_head_of(std::size_t h, std::size_t heads, std::size_t kv_heads) noexcept { return h / (heads / kv_heads); }

// Query i (at position tk - tq + i) of query heads [first, first + count), which share key/value
// head g, over keys 0..its position: the per-query path. Each head's scores and output are
// matrix-vector products over chunks of the visible keys and values
// (Eigen's gemv keeps several rows in flight; a dot product per key spent its time on each key's
// horizontal sum). The group's heads take each chunk in turn while it is in the L1 cache, so a
// grouped-query model reads its cache once per key/value head, not once per query head, and a
// head's bits are those of multi-head attention over repeated keys and values. `scores` holds
// count * aligned_floats(tk) floats, `widen` attention_key_chunk * dim (bf16 and Q8_0 keys and
// values widened).
template <class KV>
void attend_group(const float* q, const KV* k, const KV* v, float* out, std::size_t tq, std::size_t tk, std::size_t heads,
                  std::size_t kv_heads, std::size_t dim, std::size_t i, std::size_t first, std::size_t count, float* scores,
                  float* widen) {
    constexpr std::size_t chunk = attention_key_chunk;
    const std::size_t g = kv_head_of(first, heads, kv_heads);
    const auto d = static_cast<Eigen::Index>(dim);
    const auto index = [](std::size_t n) { return static_cast<Eigen::Index>(n); };
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    const std::size_t row = heads * dim;  // stride between positions
    const std::size_t visible = tk - tq + i + 1;
    const float* const qg = q + i * row + first * dim;
    float* const og = out + i * row + first * dim;
    // Each head's scores 64-byte aligned, as a lone head's are: Eigen's sums peel to an alignment.
    const std::size_t stride = aligned_floats(visible);
    const auto head_scores = [&](std::size_t r) { return VectorMap(scores + r * stride, index(visible)); };
    prefetch_head_rows(k, 0, chunk, visible, kv_heads, dim, g);
    for (std::size_t j = 0; j < visible; j += chunk) {
        const std::size_t n = std::min(chunk, visible - j);
        prefetch_head_rows(k, j + chunk, chunk, visible, kv_heads, dim, g);
        const ConstMatrixMap keys = head_rows(k, j, n, kv_heads, dim, g, widen);
        for (std::size_t r = 0; r < count; ++r) head_scores(r).segment(index(j), index(n)).noalias() = keys * ConstVectorMap(qg + r * dim, d);
    }
    for (std::size_t r = 0; r < count; ++r) {
        ArrayMap p(scores + r * stride, index(visible));
        p = (p - p.maxCoeff()) * scale;
        p = p.exp();
    }
    // out may be q: these heads' queries were read whole above.
    for (std::size_t r = 0; r < count; ++r) VectorMap(og + r * dim, d).setZero();
    prefetch_head_rows(v, 0, chunk, visible, kv_heads, dim, g);
    for (std::size_t j = 0; j < visible; j += chunk) {
        const std::size_t n = std::min(chunk, visible - j);
        prefetch_head_rows(v, j + chunk, chunk, visible, kv_heads, dim, g);
        const ConstMatrixMap values = head_rows(v, j, n, kv_heads, dim, g, widen);
        for (std::size_t r = 0; r < count; ++r) {
            VectorMap(og + r * dim, d).noalias() += values.transpose() * head_scores(r).segment(index(j), index(n));
        }
    }
    for (std::size_t r = 0; r < count; ++r) VectorMap(og + r * dim, d) *= 1.0f / head_scores(r).sum();
}

// The per-query path's tasks: each query's heads in groups that share a key/value head, a group
// split in `parts` (at most its size) only where there would be fewer than two tasks per thread:
// a part reads its key/value head whole, so fewer parts read less, but a thread with one task
// cannot take over another's (measured: bench_kernels BM_DecodeAttention, bench/RESULTS.md).
struct HeadParts {
    std::size_t group, kv_heads, parts;
    HeadParts(std::size_t heads, std::size_t kv_heads, std::size_t queries, std::size_t threads) noexcept
        : group(heads / kv_heads), kv_heads(kv_heads), parts(parts_for(group, queries * kv_heads, threads)) {}
    // Parts per group: enough for two tasks per thread over `groups` groups, at most `group`.
    static std::size_t parts_for(std::size_t group, std::size_t groups, std::size_t threads) noexcept {
        groups = std::max<std::size_t>(1, groups);
        return std::max<std::size_t>(1, std::min(group, (2 * threads + groups - 1) / groups));
    }
    std::size_t per_query() const noexcept { return kv_heads * parts; }
    // Task t's query (t / per_query()) and its heads [first, first + count).
    template <class F>
    void run(std::size_t t, F&& f) const {
        const std::size_t g = t % per_query() / parts, part = t % parts;
        const std::size_t first = g * group + part * group / parts, end = g * group + (part + 1) * group / parts;
        f(t / per_query(), first, end - first);
    }
};

// The causal softmax of a block of `rows` queries' scores (row stride `stride`) over `keys` keys,
// the block's last query seeing them all: row i over its first keys - rows + i + 1, scaled by
// `scale` after the maximum is taken off; the masked rest of the row, up to `keys`, zero.
inline void causal_softmax_rows(float* scores, std::size_t rows, std::size_t stride, std::size_t keys, float scale) {
    for (std::size_t i = 0; i < rows; ++i) {
        const std::size_t visible = keys - rows + i + 1;
        ArrayMap p(scores + i * stride, static_cast<Eigen::Index>(visible));
        p = ((p - p.maxCoeff()) * scale).exp();
        p /= p.sum();
        std::fill(scores + i * stride + visible, scores + i * stride + keys, 0.0f);
    }
}

#if TESSERA_HAS_AVX512_KERNELS
// Head h's keys [0, tk) of a stored (positions, heads, dim) tensor, widened to float, as panels
// of 16 keys in cpu::arrange_panels' order ([dim][16] each), the keys after tk zero: the
// weights of the scores' product (attention_panel_keys(tk) * dim floats at `panels`).
template <class KV>
void arrange_head_keys(const KV* k, std::size_t tk, std::size_t heads, std::size_t dim, std::size_t h, float* panels) noexcept {
    constexpr std::size_t v = avx512::float_panel_rows;
    for (std::size_t key = 0; key < attention_panel_keys(tk); ++key) {
        float* lane = panels + key / v * v * dim + key % v;
        if (key >= tk) {
            for (std::size_t c = 0; c < dim; ++c) lane[c * v] = 0.0f;
            continue;
        }
        const KV* row = kv_at(k, key * heads * dim + h * dim);
        for (std::size_t c = 0; c < dim; ++c) lane[c * v] = kv_value(row, c);
    }
}

// The matrix-product path on the float tiles (attention_on_tiles), per head, per block of
// queries: S = Q Kᵀ over the keys the block's last query sees (rounded up to a panel; the keys
// arranged once per head), the causal softmax row by row, O = S V over those keys, V read as it
// lies (bf16 or Q8_0: widened once per head). Every output is one FMA chain over k in order, so a row's
// scores and output have the same bits in any block.
template <class KV>
void attend_blocks_on_tiles(ThreadPool& pool, std::span<AlignedBuffer<float>> scratch, const float* q, const KV* k, const KV* v,
                            float* out, std::size_t tq, std::size_t tk, std::size_t heads, std::size_t kv_heads, std::size_t dim) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    const std::size_t row = heads * dim;  // stride between positions
    const std::size_t keys_at = aligned_floats(attention_score_floats(tq, tk, dim, heads / kv_heads));
    const std::size_t values_at = keys_at + aligned_floats(attention_panel_keys(tk) * dim);
    pool.parallel_for(heads, 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
        float* const scores = scratch[thread].data();
        float* const keys_arranged = scores + keys_at;
        for (std::size_t h = begin; h < end; ++h) {
            const std::size_t g = kv_head_of(h, heads, kv_heads);
            arrange_head_keys(k, tk, kv_heads, dim, g, keys_arranged);
            const ConstMatrixMap vh = head_rows(v, 0, tk, kv_heads, dim, g, scores + values_at);  // (bf16, Q8_0: widened)
            const avx512::FloatColumns values{vh.data(), 1, static_cast<std::size_t>(vh.outerStride())};
            for (std::size_t first = 0; first < tq; first += attention_query_block) {
                const std::size_t rows = std::min(attention_query_block, tq - first), keys = tk - tq + first + rows;
                const std::size_t columns = attention_panel_keys(keys);
                avx512::float_panels_columns(q + first * row + h * dim, row, {keys_arranged, dim, avx512::float_panel_rows}, nullptr,
                                             scores, rows, dim, columns, 0, columns);
                causal_softmax_rows(scores, rows, columns, keys, scale);
                avx512::float_panels_columns(scores, columns, values, nullptr, out + first * row + h * dim, rows, keys, row, 0, dim);
            }
        }
    });
}
#endif

// q(tq, heads, dim), k and v (tk, kv_heads, dim), out(tq, heads, dim); query i is at position
// tk - tq + i and attends keys 0..that position; query head h reads key/value head
// kv_head_of(h) (kv_heads divides heads). k and v are float, or bf16 or Q8_0 (widened to
// float in the scratch). `scratch` holds attention_scratch_floats per thread (for those: the widened
// rows after the scores), sized by the caller so that this kernel never allocates, and aligned alike:
// Eigen's sums peel to an alignment, so rows at differently aligned addresses would be summed
// in different orders, and a result would depend on which thread computed it. out may alias q
// (each query row is read whole before its output row is written), not k or v.
template <class KV>
[[gnu::noinline]] void causal_attention(ThreadPool& pool, std::span<AlignedBuffer<float>> scratch, const float* q, const KV* k,
                                        const KV* v, float* out, std::size_t tq, std::size_t tk, std::size_t heads,
                                        std::size_t kv_heads, std::size_t dim) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    const std::size_t row = heads * dim;  // stride between positions
#if TESSERA_HAS_AVX512_KERNELS
    if (tq >= attention_block_queries && attention_on_tiles(dim)) {
        return attend_blocks_on_tiles(pool, scratch, q, k, v, out, tq, tk, heads, kv_heads, dim);
    }
#endif
    const std::size_t widen_at = aligned_floats(attention_score_floats(tq, tk, dim, heads / kv_heads));
    if (tq >= attention_block_queries) {
        // Per head, per block of queries: S = Q Kᵀ / √D over the keys the block's last query
        // sees, as one matrix product; causal softmax row by row (masked entries become 0); O =
        // S V. The masked corner of each block is computed too, at matrix-product speed, but no
        // key past the block's last query: for a whole prompt, a little over half the work of
        // one square product (which cost 11% of a 512-token prompt's time, profiled).
        pool.parallel_for(heads, 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
            float* widen = scratch[thread].data() + widen_at;
            for (std::size_t h = begin; h < end; ++h) {
                const std::size_t g = kv_head_of(h, heads, kv_heads);
                const ConstMatrixMap kh = head_rows(k, 0, tk, kv_heads, dim, g, widen);
                const ConstMatrixMap vh = head_rows(v, 0, tk, kv_heads, dim, g, widen + tk * dim);
                for (std::size_t first = 0; first < tq; first += attention_query_block) {
                    const std::size_t rows = std::min(attention_query_block, tq - first), keys = tk - tq + first + rows;
                    const auto seen = static_cast<Eigen::Index>(keys);
                    MatrixMap scores = matrix(scratch[thread].data(), rows, keys, keys);
                    scores.noalias() = matrix(q + first * row + h * dim, rows, dim, row) * kh.topRows(seen).transpose();
                    causal_softmax_rows(scores.data(), rows, keys, keys, scale);
                    matrix(out + first * row + h * dim, rows, dim, row).noalias() = scores * vh.topRows(seen);
                }
            }
        });
        return;
    }
    const HeadParts tasks(heads, kv_heads, tq, pool.size());
    pool.parallel_for(tq * tasks.per_query(), 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
        for (std::size_t task = begin; task < end; ++task) {
            tasks.run(task, [&](std::size_t i, std::size_t first, std::size_t count) {
                attend_group(q, k, v, out, tq, tk, heads, kv_heads, dim, i, first, count, scratch[thread].data(),
                             scratch[thread].data() + widen_at);
            });
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
// every sequence has one query (a batched decode step) all their (sequence, key/value head) pairs are one
// job for the pool instead of one job per sequence: each job is a few microseconds of work.
// `scratch` as causal_attention's, for the longest sequence.
template <class KV>
void causal_attention_each(ThreadPool& pool, std::span<AlignedBuffer<float>> scratch,
                           std::span<const AttentionSequence<KV>> each, std::size_t heads, std::size_t kv_heads, std::size_t dim) {
    const bool one_query_each = std::all_of(each.begin(), each.end(), [](const AttentionSequence<KV>& s) { return s.tq == 1; });
    if (!one_query_each) {
        for (const AttentionSequence<KV>& s : each) causal_attention(pool, scratch, s.q, s.k, s.v, s.out, s.tq, s.tk, heads, kv_heads, dim);
        return;
    }
    std::size_t most_k = 0;
    for (const AttentionSequence<KV>& s : each) most_k = std::max(most_k, s.tk);
    const std::size_t widen_at = aligned_floats(attention_score_floats(1, most_k, dim, heads / kv_heads));
    const HeadParts tasks(heads, kv_heads, each.size(), pool.size());
    pool.parallel_for(each.size() * tasks.per_query(), 1, [&](std::size_t begin, std::size_t end, unsigned thread) {
        for (std::size_t task = begin; task < end; ++task) {
            tasks.run(task, [&](std::size_t i, std::size_t first, std::size_t count) {
                const AttentionSequence<KV>& s = each[i];
                attend_group(s.q, s.k, s.v, s.out, 1, s.tk, heads, kv_heads, dim, 0, first, count, scratch[thread].data(),
                             scratch[thread].data() + widen_at);
            });
        }
    });
}

}  // namespace tessera::cpu
