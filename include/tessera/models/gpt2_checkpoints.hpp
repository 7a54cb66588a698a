#pragma once
// GPT-2's weights as the layers ask for them (nn/parameter.hpp's Checkpoint), from either file
// a GPT-2 comes in:
//   - Hugging Face safetensors: names "h.3.attn.c_attn.weight" (optionally "transformer."-
//     prefixed); linear maps are Conv1D, stored [in, out], and transposed here;
//   - GGUF as llama.cpp's convert_hf_to_gguf.py writes it: names "blk.3.attn_qkv.weight",
//     linear maps stored [out, in] (ggml's ne = {in, out}), matrices in F32, F16, BF16, Q8_0 or
//     Q4_0 (and a Q6_K embedding, as llama-quantize writes Q4_0 files); blocks in the format a
//     layer keeps are copied as they are.
// The layers name tensors the Hugging Face way; GgufGpt2Checkpoint translates.
#include <algorithm>    // std::max
#include <cmath>        // std::isfinite
#include <cstddef>      // std::size_t, std::byte
#include <cstdint>      // std::uint64_t
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include <tessera/core/error.hpp>           // FormatError
#include <tessera/core/weight_formats.hpp>  // WeightFormatId
#include <tessera/io/gguf.hpp>              // GgufFile
#include <tessera/models/gguf_checkpoint.hpp>  // GgufCheckpoint, weight_format_of
#include <tessera/io/safetensors.hpp>       // shape_string
#include <tessera/io/safetensors_shards.hpp>  // SafetensorsShards
#include <tessera/models/gpt2_config.hpp>   // GPT2Shape, Gpt2Hyperparameters
#include <tessera/nn/parameter.hpp>         // Checkpoint, TensorRequest

namespace tessera {

namespace detail {
// How many decoder blocks a checkpoint holds tensors of: one past the highest N among the
// names "<prefix>N.<...>" (0 when none).
template <class Names>
std::size_t blocks_held(const Names& names, std::string_view prefix) {
    std::size_t blocks = 0;
    for (const std::string& name : names) {
        if (!name.starts_with(prefix)) continue;
        std::size_t n = 0, i = prefix.size();
        while (i < name.size() && name[i] >= '0' && name[i] <= '9' && n < (std::size_t{1} << 32)) n = n * 10 + static_cast<std::size_t>(name[i++] - '0');
        if (i > prefix.size() && i < name.size() && name[i] == '.') blocks = std::max(blocks, n + 1);
    }
    return blocks;
}

// A file whose hyperparameters and tensors disagree about the number of blocks is refused,
// naming both: running fewer blocks than the checkpoint holds is silently another network.
inline void check_blocks_held(const std::string& file, const std::string& says, std::size_t n_layer, std::size_t held) {
    if (held != n_layer) {
        throw FormatError(file + ": " + says + " " + std::to_string(n_layer) + " but the checkpoint holds tensors of " +
                          std::to_string(held) + " blocks");
    }
}
}  // namespace detail

class SafetensorsGpt2Checkpoint final : public Checkpoint {
public:
    explicit SafetensorsGpt2Checkpoint(const io::SafetensorsShards& file)
        : file_(file), prefix_(file.contains("transformer.wte.weight") ? "transformer." : "") {}

    const std::string& path() const override { return file_.path(); }
    // "transformer." when the names carry it, else "".
    const std::string& prefix() const noexcept { return prefix_; }

    void read_rows(const TensorRequest& r, std::size_t first, std::span<float> dst) const override {
        const io::TensorInfo& t = checked(r);
        detail::check_rows_asked(path(), r, first, dst.size());
        if (r.role != TensorRequest::Role::linear) {
            file_.file_of(t.name).read_float_range(t, first * r.cols, dst);
            return;
        }
        // Conv1D [in, out]: the outputs asked for are columns.
        std::vector<float> whole(t.elements());
        file_.file_of(t.name).read_float(t, whole);
        const std::size_t in = r.cols, out = r.rows, count = dst.size() / in;
        for (std::size_t o = 0; o < count; ++o)
            for (std::size_t i = 0; i < in; ++i) dst[o * in + i] = whole[i * out + first + o];
    }

private:
    const io::TensorInfo& checked(const TensorRequest& r) const {
        // lm_head sits outside the "transformer." prefix.
        const io::TensorInfo& t = file_.info(r.name == "lm_head.weight" ? r.name : prefix_ + r.name);
        const std::vector<std::size_t> expected = r.role == TensorRequest::Role::vector ? std::vector<std::size_t>{r.cols}
                                                  : r.role == TensorRequest::Role::table ? std::vector<std::size_t>{r.rows, r.cols}
                                                                                         : std::vector<std::size_t>{r.cols, r.rows};
        if (t.shape != expected) {
            throw FormatError(path() + ": tensor '" + t.name + "' has shape " + io::shape_string(t.shape) +
                              " but config.json implies " + io::shape_string(expected));
        }
        return t;
    }

    const io::SafetensorsShards& file_;  // model.safetensors, or an index's shards
    std::string prefix_;
};

// llama.cpp's name for a Hugging Face GPT-2 tensor name ("h.3.mlp.c_fc.bias" -> "blk.3.ffn_up.bias").
inline std::string gguf_gpt2_tensor_name(const std::string& hf) {
    static constexpr std::pair<std::string_view, std::string_view> whole[] = {
        {"wte.weight", "token_embd.weight"}, {"wpe.weight", "position_embd.weight"}, {"ln_f.weight", "output_norm.weight"},
        {"ln_f.bias", "output_norm.bias"},   {"lm_head.weight", "output.weight"}};
    for (const auto& [from, to] : whole)
        if (hf == from) return std::string(to);
    static constexpr std::pair<std::string_view, std::string_view> in_block[] = {
        {"ln_1.", "attn_norm."},       {"attn.c_attn.", "attn_qkv."}, {"attn.c_proj.", "attn_output."},
        {"ln_2.", "ffn_norm."},        {"mlp.c_fc.", "ffn_up."},      {"mlp.c_proj.", "ffn_down."}};
    if (hf.starts_with("h.")) {
        const std::size_t dot = hf.find('.', 2);
        if (dot != std::string::npos) {
            const std::string rest = hf.substr(dot + 1);
            for (const auto& [from, to] : in_block)
                if (rest.starts_with(from)) return "blk." + hf.substr(2, dot - 2) + "." + std::string(to) + rest.substr(from.size());
        }
    }
    return hf;
}

// GPT-2's GGUF tensors under Hugging Face's names.
class GgufGpt2Checkpoint final : public GgufCheckpoint {
public:
    explicit GgufGpt2Checkpoint(const io::GgufFile& file) : GgufCheckpoint(file, gguf_gpt2_tensor_name, "gpt2") {}
};

// What a GGUF file of llama.cpp's "gpt2" architecture says the network is: gpt2.block_count,
// gpt2.embedding_length, gpt2.attention.head_count, gpt2.context_length,
// gpt2.feed_forward_length (4 x the embedding when absent), gpt2.attention.layer_norm_epsilon;
// the vocabulary is token_embd's row count; the head is tied unless output.weight exists.
inline Gpt2Hyperparameters gguf_gpt2_hyperparameters(const io::GgufFile& file) {
    const auto fail = [&](const std::string& what) { throw FormatError(file.path() + ": " + what); };
    if (const std::string& arch = file.string_value("general.architecture"); arch != "gpt2") {
        fail("general.architecture is '" + arch + "': only GPT-2 (\"gpt2\") runs here");
    }
    const auto positive = [&](const std::string& key) -> std::size_t {
        const std::uint64_t v = file.unsigned_value(key);
        if (v == 0 || v > (std::uint64_t{1} << 32)) fail("metadata '" + key + "' is " + std::to_string(v) + ", not a positive size");
        return static_cast<std::size_t>(v);
    };
    Gpt2Hyperparameters h;
    GPT2Shape& s = h.shape;
    s.n_layer = positive("gpt2.block_count");
    s.n_embd = positive("gpt2.embedding_length");
    s.n_head = positive("gpt2.attention.head_count");
    s.n_ctx = positive("gpt2.context_length");
    s.n_inner = file.find("gpt2.feed_forward_length") ? positive("gpt2.feed_forward_length") : 4 * s.n_embd;
    if (s.n_embd % s.n_head != 0) {
        fail("gpt2.embedding_length " + std::to_string(s.n_embd) + " is not a multiple of gpt2.attention.head_count " +
             std::to_string(s.n_head));
    }
    const io::GgufTensorInfo& embedding = file.tensor("token_embd.weight");
    if (embedding.ne.size() != 2 || embedding.ne[0] != s.n_embd) {
        fail("tensor 'token_embd.weight' is not a table of rows of gpt2.embedding_length " + std::to_string(s.n_embd));
    }
    s.vocab_size = static_cast<std::size_t>(embedding.ne[1]);
    const double eps = file.real_value("gpt2.attention.layer_norm_epsilon");
    h.layer_norm_epsilon = static_cast<float>(eps);
    if (!(std::isfinite(h.layer_norm_epsilon) && h.layer_norm_epsilon > 0.0f)) {
        fail("metadata 'gpt2.attention.layer_norm_epsilon' must be a positive number that a float can hold, got " + std::to_string(eps));
    }
    h.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;
    // The tokenizer's ids index the embedding's rows: a count that differs is another model's.
    if (const io::GgufValue* tokens = file.find("tokenizer.ggml.tokens");
        tokens && tokens->type == io::GgufValue::Type::array && tokens->array_length != s.vocab_size) {
        fail("tokenizer.ggml.tokens has " + std::to_string(tokens->array_length) + " tokens but token_embd.weight has " +
             std::to_string(s.vocab_size) + " rows");
    }
    return h;
}

}  // namespace tessera
