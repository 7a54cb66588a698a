#pragma once
// The bytes a GPT-2 forward step must move, for the roofline fractions of bench_gpt2 (CPU) and
// bench_gpt2_cuda: a decode step reads every layer's weights, the head (wte, tied), one wpe row
// and the KV cache up to its position. fp32 throughout.
#include <tessera/models/gpt2_config.hpp>

namespace tessera::bench {

struct Gpt2Traffic {
    double C, V, L, Ctx, Inner;
    explicit Gpt2Traffic(const GPT2Shape& s)
        : C(double(s.n_embd)), V(double(s.vocab_size)), L(double(s.n_layer)), Ctx(double(s.n_ctx)), Inner(double(s.n_inner)) {}

    // Per layer: q, k, v, proj (4C²) + fc, proj (2·C·Inner) + their biases and two LayerNorms.
    double layer_floats() const { return 4.0 * C * C + 2.0 * C * Inner + 9.0 * C + Inner; }
    // Weights one decode step reads: layers, head, a wpe row, ln_f.
    double decode_weight_bytes() const { return 4.0 * (L * layer_floats() + V * C + 2.0 * C + C); }
    // Keys and values one decode step reads at `position` (positions 0..position).
    double kv_read_bytes(double position) const { return 4.0 * L * 2.0 * C * (position + 1.0); }
    // One decode step at the mean position of a tg run of `steps` after a 1-token prompt.
    double decode_step_bytes(double steps) const { return decode_weight_bytes() + kv_read_bytes(steps / 2.0); }
    // What the model holds: every weight (the whole wpe table) and the full KV cache.
    double resident_weight_bytes() const { return 4.0 * (L * layer_floats() + V * C + Ctx * C + 2.0 * C); }
    double kv_cache_bytes() const { return 4.0 * L * 2.0 * Ctx * C; }
};

}  // namespace tessera::bench
