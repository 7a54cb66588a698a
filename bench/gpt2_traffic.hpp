#pragma once
// The bytes a GPT-2 forward step must move, for the roofline fractions of bench_gpt2 (CPU) and
// bench_gpt2_cuda: a decode step reads every layer's weights, the head (wte, tied), one wpe row
// and the KV cache up to its position. The four projections take `matrix_bytes_per_weight`
// bytes per weight (4 for f32, 2 for bf16, 34/32 for Q8_0, 18/32 for Q4_0), wte (the head)
// `head_bytes_per_weight` (the same, except Q8_0's for a Q4_0 model), the KV cache
// `kv_bytes_per_value` (4 for f32, 2 for bf16); everything else is fp32.
#include <tessera/models/gpt2_config.hpp>

namespace tessera::bench {

struct Gpt2Traffic {
    double C, V, L, Ctx, Inner, matrix_bytes, head_bytes, kv_bytes;
    explicit Gpt2Traffic(const GPT2Shape& s, double matrix_bytes_per_weight = 4.0, double head_bytes_per_weight = 4.0,
                         double kv_bytes_per_value = 4.0)
        : C(double(s.n_embd)), V(double(s.vocab_size)), L(double(s.n_layer)), Ctx(double(s.n_ctx)), Inner(double(s.n_inner)),
          matrix_bytes(matrix_bytes_per_weight), head_bytes(head_bytes_per_weight), kv_bytes(kv_bytes_per_value) {}

    // Per layer in bytes: q, k, v, proj (4C²) + fc, proj (2·C·Inner) in the matrices' format, their
    // biases and two LayerNorms in fp32.
    double layer_bytes() const { return matrix_bytes * (4.0 * C * C + 2.0 * C * Inner) + 4.0 * (9.0 * C + Inner); }
    // Weights one decode step reads: layers, head, a wpe row, ln_f.
    double decode_weight_bytes() const { return L * layer_bytes() + head_bytes * V * C + 4.0 * (2.0 * C + C); }
    // Keys and values one decode step reads at `position` (positions 0..position).
    double kv_read_bytes(double position) const { return kv_bytes * L * 2.0 * C * (position + 1.0); }
    // One decode step at the mean position of a tg run of `steps` after a `prompt`-token prompt.
    double decode_step_bytes(double steps, double prompt = 1.0) const {
        return decode_weight_bytes() + kv_read_bytes(prompt - 1.0 + steps / 2.0);
    }
    // What the model holds: every weight (the whole wpe table) and the full KV cache.
    double resident_weight_bytes() const { return L * layer_bytes() + head_bytes * V * C + 4.0 * (Ctx * C + 2.0 * C); }
    double kv_cache_bytes() const { return kv_bytes * L * 2.0 * Ctx * C; }
};

}  // namespace tessera::bench
