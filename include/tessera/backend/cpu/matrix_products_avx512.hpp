#pragma once
// AVX-512 kernels for the matrix products: a packed GEMM for C(M,N) = A(M,K) · W(N,K)ᵀ, the
// prefill product (BLIS structure), a row-blocked GEMV for decoding, and tiles for a few rows
// of A (short prompts, batched decode steps) that read W as stored, unpacked.
//
// GEMM:
// W is packed into panels of nr = 32 output columns (two vectors) and A into panels of mr = 8
// rows; the micro-kernel keeps an 8 x 32 tile of C in 16 vector registers and performs 16
// FMAs per 2 vector loads and 8 broadcasts. Blocking: a kc x nr W panel (32 KiB) stays in L1
// while the mr x kc A panels stream from an mc x kc block in L2. Eigen's general kernel
// reached ~58% of the FMA peak here; this one is written for the shapes a transformer has.
//
// Compiled for AVX-512 whatever the translation unit's -march flags, through a target pragma
// (GCC and Clang), and called only when the CPU has AVX-512 (cpu::has_avx512()): so every
// translation unit holds the same definitions (no one-definition-rule violation when files
// built with different flags are linked together), and a portable build still uses these
// kernels on a machine that has the instructions.
#include <tessera/backend/cpu/kernel_level.hpp>  // TESSERA_HAS_X86_KERNELS, has_avx512

#if TESSERA_HAS_X86_KERNELS
#define TESSERA_HAS_AVX512_KERNELS 1
#include <immintrin.h>  // AVX-512 intrinsics

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
// GCC 12.2's AVX-512 intrinsics self-initialise a variable (`__m512 __Y = __Y;`, GCC bug
// 105593) and warn about it wherever they are inlined: silenced for this header's code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>  // std::min
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint16_t
#include <type_traits>  // std::integral_constant
#include <utility>    // std::index_sequence
#include <vector>     // std::vector

#include <tessera/core/dtype.hpp>  // bf16

namespace tessera::cpu::avx512 {

inline constexpr std::size_t mr = 8;    // rows of A (tokens) per micro-tile
inline constexpr std::size_t nr = 32;   // columns of C (weight rows) per micro-tile
inline constexpr std::size_t kc = 256;  // depth of one packed block
inline constexpr std::size_t mc = 128;  // rows of A per packed block (128 x 256 floats = 128 KiB)
inline constexpr std::size_t nc = 512;  // columns of C per packed block of W (512 KiB)
// Up to this many rows of A, few_rows_columns beats packing W (measured on the GPT-2 124M
// shapes, 2 threads: f32 1.3x at 16 rows, 1.2x at 64, even at ~96; bf16, whose packed path
// widens W first, 3.4x at 16 rows and 1.1x at 128, even at ~256).
template <class E>
inline constexpr std::size_t few_rows_max = std::is_same_v<E, float> ? 96 : 192;

// A rows [0, rows) x depth [0, depth) (row stride lda) into ceil(rows/mr) panels laid out
// [panel][k][r], zero-padding the missing rows.
inline void pack_a(const float* a, std::size_t lda, std::size_t rows, std::size_t depth, float* dst) {
    for (std::size_t p = 0; p < rows; p += mr) {
        const std::size_t n = std::min(mr, rows - p);
        for (std::size_t k = 0; k < depth; ++k) {
            for (std::size_t r = 0; r < n; ++r) dst[k * mr + r] = a[(p + r) * lda + k];
            for (std::size_t r = n; r < mr; ++r) dst[k * mr + r] = 0.0f;
        }
        dst += depth * mr;
    }
}

// W rows [0, cols) x depth [0, depth) (row stride ldw) into ceil(cols/nr) panels laid out
// [panel][k][c], zero-padding the missing columns.
inline void pack_w(const float* w, std::size_t ldw, std::size_t cols, std::size_t depth, float* dst) {
    for (std::size_t p = 0; p < cols; p += nr) {
        const std::size_t n = std::min(nr, cols - p);
        // Row by row: sequential reads, writes strided by nr (measured 3x faster than the
        // transposed order, 32 read streams with contiguous writes).
        for (std::size_t c = 0; c < n; ++c) {
            const float* src = w + (p + c) * ldw;
            for (std::size_t k = 0; k < depth; ++k) dst[k * nr + c] = src[k];
        }
        for (std::size_t c = n; c < nr; ++c)
            for (std::size_t k = 0; k < depth; ++k) dst[k * nr + c] = 0.0f;
        dst += depth * nr;
    }
}

// f(0), f(1), ..., f(N-1) with compile-time indices: the tile loops fully unrolled, so the
// accumulators live in registers (no pragma, which nvcc's host pass would not know).
template <std::size_t N, class F>
inline void unrolled(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (f(std::integral_constant<std::size_t, I>{}), ...); }
    (std::make_index_sequence<N>{});
}

// f(first_row, tile_index, rows) for the tiles of Max rows that cover m rows, the last one the
// m % Max rows left; `rows` is a compile-time size (std::integral_constant), 1 to Max.
template <std::size_t Max, class F>
inline void row_tiles(std::size_t m, F&& f) {
    std::size_t t = 0, j = 0;
    for (; t + Max <= m; t += Max, ++j) f(t, j, std::integral_constant<std::size_t, Max>{});
    const std::size_t rest = m - t;
    unrolled<Max - 1>([&](auto i) {
        if (rest == i + 1) f(t, j, std::integral_constant<std::size_t, i + 1>{});
    });
}

// C tile (rows <= mr, cols <= nr; row stride ldc) = or += packed A panel · packed W panel.
inline void micro_kernel(std::size_t depth, const float* ap, const float* wp, float* c, std::size_t ldc,
                         bool accumulate, std::size_t rows, std::size_t cols) {
    __m512 acc[mr][2];
    unrolled<mr>([&](auto r) { acc[r][0] = acc[r][1] = _mm512_setzero_ps(); });
    for (std::size_t k = 0; k < depth; ++k) {
        const __m512 w0 = _mm512_load_ps(wp + k * nr);
        const __m512 w1 = _mm512_load_ps(wp + k * nr + 16);
        unrolled<mr>([&](auto r) {
            const __m512 a = _mm512_set1_ps(ap[k * mr + r]);
            acc[r][0] = _mm512_fmadd_ps(a, w0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, w1, acc[r][1]);
        });
    }
    const auto lanes = [](std::size_t n) { return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << n) - 1u); };
    const __mmask16 m0 = lanes(cols), m1 = lanes(cols > 16 ? cols - 16 : 0);
    unrolled<mr>([&](auto r) {
        if (r >= rows) return;
        float* row = c + r * ldc;
        if (accumulate) {
            acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_maskz_loadu_ps(m0, row));
            acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_maskz_loadu_ps(m1, row + 16));
        }
        _mm512_mask_storeu_ps(row, m0, acc[r][0]);
        _mm512_mask_storeu_ps(row + 16, m1, acc[r][1]);
    });
}

// Columns [n_begin, n_end) of C(m, ldc) = A(m, k) · W(·, k)ᵀ; A, W row-major with row stride k.
// Packing buffers are per thread and grow once.
inline void gemm_columns(const float* a, const float* w, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                         std::size_t n_begin, std::size_t n_end) {
    struct alignas(64) Block {
        float v[16];
    };
    thread_local std::vector<Block> a_pack, w_pack;  // Block: 64-byte aligned storage
    const auto grow = [](std::vector<Block>& v, std::size_t floats) {
        if (v.size() * 16 < floats) v.resize((floats + 15) / 16);
        return v.data()->v;
    };
    float* wp = grow(w_pack, nc * kc);
    float* ap = grow(a_pack, mc * kc);
    for (std::size_t jc = n_begin; jc < n_end; jc += nc) {
        const std::size_t ncols = std::min(nc, n_end - jc);
        for (std::size_t pc = 0; pc < k; pc += kc) {
            const std::size_t depth = std::min(kc, k - pc);
            pack_w(w + jc * k + pc, k, ncols, depth, wp);
            for (std::size_t ic = 0; ic < m; ic += mc) {
                const std::size_t nrows = std::min(mc, m - ic);
                pack_a(a + ic * k + pc, k, nrows, depth, ap);
                for (std::size_t jr = 0; jr < ncols; jr += nr) {
                    const float* w_panel = wp + (jr / nr) * depth * nr;
                    for (std::size_t ir = 0; ir < nrows; ir += mr) {
                        micro_kernel(depth, ap + (ir / mr) * depth * mr, w_panel, c + (ic + ir) * ldc + jc + jr, ldc,
                                     pc != 0, std::min(mr, nrows - ir), std::min(nr, ncols - jr));
                    }
                }
            }
        }
    }
}

// y[i] = W row i · x for R consecutive rows (row stride cols): R independent accumulators
// stream R rows at once; the last cols % 16 columns go through a masked load.
template <std::size_t R>
inline void dot_rows(const float* w, const float* x, float* y, std::size_t cols) {
    const std::size_t full = cols & ~std::size_t{15};
    __m512 acc[R];
    unrolled<R>([&](auto i) { acc[i] = _mm512_setzero_ps(); });
    for (std::size_t k = 0; k < full; k += 16) {
        const __m512 xv = _mm512_loadu_ps(x + k);
        unrolled<R>([&](auto i) { acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(w + i * cols + k), xv, acc[i]); });
    }
    if (full != cols) {
        const auto tail = static_cast<__mmask16>((1u << (cols - full)) - 1u);
        const __m512 xv = _mm512_maskz_loadu_ps(tail, x + full);
        unrolled<R>([&](auto i) {
            acc[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w + i * cols + full), xv, acc[i]);
        });
    }
    unrolled<R>([&](auto i) { y[i] = _mm512_reduce_add_ps(acc[i]); });
}

// y[r] = W row r · x for rows [begin, end) of W(·, cols): 8 rows at a time (measured ~10% more
// DRAM bandwidth than Eigen's general row-major gemv on the decode shapes), then one by one.
inline void gemv_rows(const float* w, const float* x, float* y, std::size_t begin, std::size_t end, std::size_t cols) {
    constexpr std::size_t rows_per_step = 8;
    std::size_t r = begin;
    for (; r + rows_per_step <= end; r += rows_per_step) dot_rows<rows_per_step>(w + r * cols, x, y + r, cols);
    for (; r < end; ++r) dot_rows<1>(w + r * cols, x, y + r, cols);
}

// Sixteen weights as floats: float as stored, bf16 widened (its bits shifted up: exact). The
// masked forms read `lanes` only.
inline __m512 load16(const float* w) noexcept { return _mm512_loadu_ps(w); }
inline __m512 load16(const float* w, __mmask16 lanes) noexcept { return _mm512_maskz_loadu_ps(lanes, w); }
inline __m512 widen(__m256i bf16s) noexcept { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16s), 16)); }
inline __m512 load16(const bf16* w) noexcept { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))); }
// (The masked 16-bit load is AVX-512 BW + VL, outside this region's target: the tail of a row,
// once per row, goes through a zeroed copy instead.)
inline __m512 load16(const bf16* w, __mmask16 lanes) noexcept {
    alignas(32) std::uint16_t tail[16] = {};
    for (unsigned i = 0; i < 16; ++i)
        if (lanes & (1u << i)) tail[i] = w[i].bits;
    return widen(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
}

// W row · x for one bf16 row (decoding): two accumulators, one row at a time. A single stream
// reads cold memory fastest: the four-row tile below decoded 1.2x slower (measured, 124M).
inline float dot(const bf16* w, const float* x, std::size_t k) noexcept {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::size_t i = 0;
    for (; i + 32 <= k; i += 32) {
        acc0 = _mm512_fmadd_ps(load16(w + i), _mm512_loadu_ps(x + i), acc0);
        acc1 = _mm512_fmadd_ps(load16(w + i + 16), _mm512_loadu_ps(x + i + 16), acc1);
    }
    for (; i < k; i += 16) {
        const auto n = static_cast<unsigned>(std::min<std::size_t>(16, k - i));
        const auto lanes = static_cast<__mmask16>(n == 16 ? 0xffffu : (1u << n) - 1u);
        acc0 = _mm512_fmadd_ps(load16(w + i, lanes), _mm512_maskz_loadu_ps(lanes, x + i), acc0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

// Few rows of A (M of 2 to a few dozen: a short prompt, a batched decode step). Packing W would
// cost more than the product, so W's rows are read as stored: a tile of R weight rows times T
// activation rows, R·T accumulators of 16 lanes along k, each W vector loaded once for the T
// rows. c[t·ldc + r] = W row r · A row t (rows of both with stride k). Each dot product is
// summed in one accumulator in the order of dot_rows, so a row's result is the same bits
// whatever else is in the batch, and for float weights the same as gemv gives it.
template <std::size_t R, std::size_t T, class E>
inline void few_rows_tile(const E* w, const float* a, float* c, std::size_t ldc, std::size_t k, const E* next,
                          std::size_t next_begin, std::size_t next_end) noexcept {
    __m512 acc[R][T];
    unrolled<R>([&](auto r) { unrolled<T>([&](auto t) { acc[r][t] = _mm512_setzero_ps(); }); });
    const std::size_t full = k & ~std::size_t{15};
    for (std::size_t i = 0; i < full; i += 16) {
        __m512 wv[R];
        unrolled<R>([&](auto r) { wv[r] = load16(w + r * k + i); });
        for (std::size_t r = next_begin; r < next_end; ++r) _mm_prefetch(reinterpret_cast<const char*>(next + r * k + i), _MM_HINT_T0);
        unrolled<T>([&](auto t) {
            const __m512 av = _mm512_loadu_ps(a + t * k + i);
            unrolled<R>([&](auto r) { acc[r][t] = _mm512_fmadd_ps(wv[r], av, acc[r][t]); });
        });
    }
    if (full != k) {
        const auto tail = static_cast<__mmask16>((1u << (k - full)) - 1u);
        unrolled<R>([&](auto r) {
            const __m512 wv = load16(w + r * k + full, tail);
            unrolled<T>([&](auto t) { acc[r][t] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(tail, a + t * k + full), acc[r][t]); });
        });
    }
    unrolled<R>([&](auto r) { unrolled<T>([&](auto t) { c[t * ldc + r] = _mm512_reduce_add_ps(acc[r][t]); }); });
}

// Up to six activation rows at once (T = rows), for R weight rows. The next R weight rows are
// prefetched a share in each tile (tile j of n: rows [j·R/n, (j+1)·R/n)), so that reading them
// from memory overlaps all of this group's arithmetic, not only its first tile's (measured:
// prefetching all of them in the first tile left the memory idle during the others).
template <std::size_t R, class E>
inline void few_rows_tiles(const E* w, const float* a, float* c, std::size_t ldc, std::size_t k, std::size_t rows,
                           const E* next) noexcept {
    constexpr std::size_t t_max = 6;
    const std::size_t tiles = (rows + t_max - 1) / t_max;
    const auto share = [&](std::size_t tile) { return tile * R / tiles; };
    row_tiles<t_max>(rows, [&](std::size_t t, std::size_t j, auto tile_rows) {
        few_rows_tile<R, decltype(tile_rows)::value>(w, a + t * k, c + t * ldc, ldc, k, next, share(j), share(j + 1));
    });
}

// Columns [n_begin, n_end) of C(m, ldc) = A(m, k) · W(·, k)ᵀ for few rows m; W float or bf16.
template <class E>
inline void few_rows_columns(const float* a, const E* w, float* c, std::size_t m, std::size_t k, std::size_t ldc,
                             std::size_t n_begin, std::size_t n_end) noexcept {
    constexpr std::size_t r_max = 4;
    std::size_t r = n_begin;
    // While a group of rows is multiplied, the next group is prefetched into L1 (measured:
    // otherwise the first tile of each group waits on memory with the FMA units idle).
    for (; r + r_max <= n_end; r += r_max) few_rows_tiles<r_max>(w + r * k, a, c + r, ldc, k, m, w + std::min(r + r_max, n_end - r_max) * k);
    for (; r < n_end; ++r) few_rows_tiles<1>(w + r * k, a, c + r, ldc, k, m, w + r * k);
}

// Float weights arranged in place (arranged_weights.hpp): per panel of 16 rows of W, [k][16],
// so that a product broadcasts each activation and multiplies 16 weight rows per instruction,
// the packed GEMM's micro-kernel reading W as it lies. Few rows run at about twice the FMA rate
// of few_rows_tile (which reads W rows as stored and sums each dot product across lanes) and
// no product packs W per call. Every output is one accumulator lane summed over k in order
// from 0, whatever the tile: a row's result has the same bits for every number of rows.
inline constexpr std::size_t float_panel_rows = 16;

// Where the float tiles find W's columns: the 16 that start at column r (a multiple of 16) at
// w + r * column_stride, their k-th values at + k * step. Arranged panels (cpu::arrange_panels):
// column_stride k, step 16. The columns of a row-major matrix (attention's values): column_stride
// 1, step its row stride.
struct FloatColumns {
    const float* w;
    std::size_t column_stride, step;
};

// C rows [0, T) x columns [0, 16 P) = A rows (stride lda) · the P panels at `panels` (panel p at
// panels + p * panel_stride, its step i at + i * step), + bias[0, 16 P) unless bias is null
// (added as the tile is stored: the same bits as adding it after, without a second pass over
// C). Each panel is read in order, a line (one k) per step. Tiles of several rows prefetch:
// with an empty share, the line 32 steps on, running on into `next` (the P panels after these)
// at the end (the group's first tile, which reads it from memory); otherwise lines
// [share_begin, share_end) of `next`, spread over the tile's steps (the later tiles, whose
// group is in the cache already: so the next group is read while they compute). A tile of one
// row (decode) leaves the streaming to the hardware prefetcher: there the prefetches took as
// many load slots as the loads, and decode measured 15-20% slower with them (2-vCPU Zen 4, f32
// tg128, four alternating rounds against the tiles with it).
template <std::size_t T, std::size_t P>
inline void arranged_float_tile(const float* panels, std::size_t panel_stride, std::size_t step, const float* a, std::size_t lda,
                                const float* bias, float* c, std::size_t ldc, std::size_t k, const float* next,
                                std::size_t share_begin, std::size_t share_end) noexcept {
    constexpr std::size_t v = float_panel_rows, ahead = 32;  // 2 KiB ahead in each panel
    __m512 acc[T][P];
    unrolled<T>([&](auto t) { unrolled<P>([&](auto p) { acc[t][p] = _mm512_setzero_ps(); }); });
    // Which lines, when: `lines` of them from `line`, one (in each panel) every `every` steps,
    // running on into `next` from `wrap_at`. The step of the next one is counted: deciding at
    // every step which line was due (a multiply and compare over values spilled from the
    // registers) cost the tile 5-8% of its rate (probed: 512 rows, k 768 and 3072, A rewritten
    // by both threads before each product).
    const bool first = share_begin == share_end;
    std::size_t lines = T == 1 ? 0 : first ? k : share_end - share_begin;
    const std::size_t every = first ? 1 : k / (share_end - share_begin);
    const float* line = first ? panels + std::min(ahead, k) * step : next + share_begin * step;
    const float* const wrap_at = first ? panels + k * step : nullptr;
    std::size_t next_prefetch = lines != 0 ? 0 : k;
    // (One loop: a lambda called from two loops was not inlined, and the accumulators left the registers.)
    for (std::size_t i = 0; i < k; ++i) {
        __m512 w[P];
        unrolled<P>([&](auto p) { w[p] = _mm512_loadu_ps(panels + p * panel_stride + i * step); });
        if (i == next_prefetch) {
            if (line == wrap_at) line = next;
            unrolled<P>([&](auto p) { _mm_prefetch(reinterpret_cast<const char*>(line + p * panel_stride), _MM_HINT_T0); });
            line += step;
            next_prefetch = --lines != 0 ? next_prefetch + every : k;
        }
        unrolled<T>([&](auto t) {
            const __m512 x = _mm512_set1_ps(a[t * lda + i]);
            unrolled<P>([&](auto p) { acc[t][p] = _mm512_fmadd_ps(x, w[p], acc[t][p]); });
        });
    }
    if (bias != nullptr) {
        unrolled<P>([&](auto p) {
            const __m512 b = _mm512_loadu_ps(bias + p * v);
            unrolled<T>([&](auto t) { acc[t][p] = _mm512_add_ps(acc[t][p], b); });
        });
    }
    unrolled<T>([&](auto t) { unrolled<P>([&](auto p) { _mm512_storeu_ps(c + t * ldc + p * v, acc[t][p]); }); });
}

// All m rows of A (stride lda) times the P panels of W's columns from `col`, six rows at a time,
// + bias (null: none); `next`: the column whose panels the tiles prefetch (see arranged_float_tile).
template <std::size_t P>
inline void arranged_float_panels(FloatColumns w, std::size_t col, const float* a, std::size_t lda, const float* bias, float* c,
                                  std::size_t m, std::size_t ldc, std::size_t k, std::size_t next) noexcept {
    const std::size_t later = (m + 5) / 6 - 1;  // tiles after the first
    const std::size_t panel_stride = float_panel_rows * w.column_stride;
    row_tiles<6>(m, [&](std::size_t t, std::size_t j, auto tile_rows) {
        const std::size_t begin = j == 0 ? 0 : (j - 1) * k / later, end = j == 0 ? 0 : j * k / later;
        arranged_float_tile<decltype(tile_rows)::value, P>(w.w + col * w.column_stride, panel_stride, w.step, a + t * lda, lda, bias,
                                                           c + t * ldc, ldc, k, w.w + next * w.column_stride, begin, end);
    });
}

// Columns [n_begin, n_end) (multiples of 16) of C(m, ldc) = A(m, k; row stride lda) · W(n, k)ᵀ +
// bias (bias over all the columns; null: none): four panels (64 columns) at a time, then the
// rest one panel at a time.
inline void float_panels_columns(const float* a, std::size_t lda, FloatColumns w, const float* bias, float* c, std::size_t m,
                                 std::size_t k, std::size_t ldc, std::size_t n_begin, std::size_t n_end) noexcept {
    constexpr std::size_t group = 4 * float_panel_rows;
    const auto bias_at = [&](std::size_t r) { return bias != nullptr ? bias + r : nullptr; };
    std::size_t r = n_begin;
    for (; r + group <= n_end; r += group) {
        const std::size_t next = r + group + group <= n_end ? r + group : r;  // (the last: itself again)
        arranged_float_panels<4>(w, r, a, lda, bias_at(r), c + r, m, ldc, k, next);
    }
    for (; r < n_end; r += float_panel_rows) arranged_float_panels<1>(w, r, a, lda, bias_at(r), c + r, m, ldc, k, r);
}

// The same for W arranged in panels (cpu::arrange_panels) and A's rows contiguous.
inline void arranged_float_columns(const float* a, const float* w, const float* bias, float* c, std::size_t m, std::size_t k,
                                   std::size_t ldc, std::size_t n_begin, std::size_t n_end) noexcept {
    float_panels_columns(a, k, FloatColumns{w, k, float_panel_rows}, bias, c, m, k, ldc, n_begin, n_end);
}
}  // namespace tessera::cpu::avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#endif
