#pragma once
// The bytes a GPT-2 forward step must move, for the roofline fractions of bench_gpt2 (CPU) and
// bench_gpt2_cuda: a decode step reads every layer's weights, the head (wte, tied), one wpe row
// and the KV cache up to its position. fp32 throughout.
#include <cstddef>

namespace tessera::bench {

template <class Model>
struct Gpt2Traffic {
    static constexpr double C = Model::n_embd, V = Model::vocab_size, L = Model::n_layer, Ctx = Model::n_ctx;
    // Per layer: q, k, v, proj (4C²) + fc, proj (8C²) + their biases and two LayerNorms (13C).
    static constexpr double layer_floats = 12.0 * C * C + 13.0 * C;

    // Weights one decode step reads: layers, head, a wpe row, ln_f.
    static constexpr double decode_weight_bytes() { return 4.0 * (L * layer_floats + V * C + 2.0 * C + C); }
    // Keys and values one decode step reads at `position` (positions 0..position).
    static constexpr double kv_read_bytes(double position) { return 4.0 * L * 2.0 * C * (position + 1.0); }
    // One decode step at the mean position of a tg run of `steps` after a 1-token prompt.
    static constexpr double decode_step_bytes(double steps) { return decode_weight_bytes() + kv_read_bytes(steps / 2.0); }
    // What the model holds: every weight (the whole wpe table) and the full KV cache.
    static constexpr double resident_weight_bytes() { return 4.0 * (L * layer_floats + V * C + Ctx * C + 2.0 * C); }
    static constexpr double kv_cache_bytes() { return 4.0 * L * 2.0 * Ctx * C; }
};

}  // namespace tessera::bench
