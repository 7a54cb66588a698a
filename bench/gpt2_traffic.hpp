#pragma once
// The bytes a decoder's forward step must move, for the roofline fractions of bench_gpt2 (CPU)
// and bench_gpt2_cuda: a decode step reads every layer's weights, the head, the rest of the
// fp32 parameters it touches (norms, biases, one wpe row for GPT-2) and the KV cache up to its
// position. The blocks' matrices take `matrix_bytes_per_weight` bytes per weight (4 for f32, 2
// for bf16, 34/32 for Q8_0, 18/32 for Q4_0), the embedding / head `head_bytes_per_weight` (the
// same, except Q8_0's for a Q4_0 model), the KV cache `kv_bytes_per_value` (4 for f32, 2 for
// bf16); everything else is fp32.
#include <tessera/models/gpt2_config.hpp>
#include <tessera/models/llama.hpp>

namespace tessera::bench {

struct Gpt2Traffic {
    // Per layer: matrix weights, fp32 values (norms, biases); the head's weights; fp32 values a
    // step reads besides (final norm, a position row), and those only held (the position table);
    // one position's keys (= values) per layer; layers; positions.
    // An untied embedding table is held in the head's format but only gathered (held_table).
    double layer_matrix, layer_fp32, head, held_table = 0, step_fp32, held_fp32, kv_width, L, Ctx;
    double matrix_bytes, head_bytes, kv_bytes;

    explicit Gpt2Traffic(const GPT2Shape& s, double matrix_bytes_per_weight = 4.0, double head_bytes_per_weight = 4.0,
                         double kv_bytes_per_value = 4.0)
        : matrix_bytes(matrix_bytes_per_weight), head_bytes(head_bytes_per_weight), kv_bytes(kv_bytes_per_value) {
        const double C = double(s.n_embd), Inner = double(s.n_inner);
        layer_matrix = 4.0 * C * C + 2.0 * C * Inner;  // q, k, v, proj; fc, proj
        layer_fp32 = 9.0 * C + Inner;                   // their biases, two LayerNorms
        head = double(s.vocab_size) * C;
        step_fp32 = 3.0 * C;                            // a wpe row, ln_f
        held_fp32 = double(s.n_ctx) * C + 2.0 * C;      // wpe, ln_f
        kv_width = C;
        L = double(s.n_layer);
        Ctx = double(s.n_ctx);
    }
    explicit Gpt2Traffic(const LlamaShape& s, double matrix_bytes_per_weight = 4.0, double head_bytes_per_weight = 4.0,
                         double kv_bytes_per_value = 4.0)
        : matrix_bytes(matrix_bytes_per_weight), head_bytes(head_bytes_per_weight), kv_bytes(kv_bytes_per_value) {
        const double C = double(s.n_embd), Q = double(s.n_head * s.head_dim()), KV = double(s.kv_width()), F = double(s.n_ff);
        layer_matrix = C * Q + 2.0 * C * KV + Q * C + 3.0 * C * F;  // q, k, v, o; gate, up, down
        layer_fp32 = 2.0 * C + (s.qkv_bias ? Q + 2.0 * KV : 0.0) + (s.qk_norm ? 2.0 * double(s.head_dim()) : 0.0);
        head = double(s.vocab_size) * C;
        held_table = s.tied ? 0.0 : head;
        step_fp32 = C;  // the final norm
        held_fp32 = C;
        kv_width = KV;
        L = double(s.n_layer);
        Ctx = double(s.n_ctx);
    }

    double layer_bytes() const { return matrix_bytes * layer_matrix + 4.0 * layer_fp32; }
    // Weights one decode step reads: layers, head, the rest.
    double decode_weight_bytes() const { return L * layer_bytes() + head_bytes * head + 4.0 * step_fp32; }
    // Keys and values one decode step reads at `position` (positions 0..position).
    double kv_read_bytes(double position) const { return kv_bytes * L * 2.0 * kv_width * (position + 1.0); }
    // One decode step at the mean position of a tg run of `steps` after a `prompt`-token prompt.
    double decode_step_bytes(double steps, double prompt = 1.0) const {
        return decode_weight_bytes() + kv_read_bytes(prompt - 1.0 + steps / 2.0);
    }
    // What the model holds: every weight and the full KV cache.
    double resident_weight_bytes() const { return L * layer_bytes() + head_bytes * (head + held_table) + 4.0 * held_fp32; }
    double kv_cache_bytes() const { return kv_bytes * L * 2.0 * Ctx * kv_width; }
};

}  // namespace tessera::bench
