#pragma once
// GgufCheckpoint: a GGUF file's tensors as the layers ask for them (nn/parameter.hpp's
// Checkpoint), under the names the layers use (Hugging Face's) translated to the file's:
// linear maps stored [out, in] (ggml's ne = {in, out}), matrices in F32, F16, BF16, Q8_0, Q4_0
// or the K-quants; blocks in the format a layer keeps are copied as they are. Each
// architecture's checkpoint gives its name translation (models/gpt2_checkpoints.hpp,
// models/llama_checkpoints.hpp).
#include <cstddef>      // std::size_t, std::byte
#include <cstdint>      // std::uint64_t
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <utility>      // std::move
#include <vector>       // std::vector

#include <tessera/core/error.hpp>           // FormatError
#include <tessera/core/weight_formats.hpp>  // WeightFormatId
#include <tessera/io/gguf.hpp>              // GgufFile
#include <tessera/io/safetensors.hpp>       // shape_string
#include <tessera/nn/parameter.hpp>         // Checkpoint, TensorRequest

namespace tessera {

namespace detail {
inline void check_rows_asked(const std::string& file, const TensorRequest& r, std::size_t first, std::size_t elements) {
    if (r.cols == 0 || elements % r.cols != 0 || first > r.rows || elements / r.cols > r.rows - first) {
        throw FormatError(file + ": tensor '" + r.name + "': rows [" + std::to_string(first) + ", +" +
                          std::to_string(r.cols == 0 ? 0 : elements / r.cols) + ") of " + std::to_string(r.rows) + " asked for");
    }
}

}  // namespace detail

inline std::optional<WeightFormatId> weight_format_of(io::GgmlType t) noexcept {
    switch (t) {
        case io::GgmlType::f32: return WeightFormatId::f32;
        case io::GgmlType::bf16: return WeightFormatId::bf16;
        case io::GgmlType::q8_0: return WeightFormatId::q8_0;
        case io::GgmlType::q4_0: return WeightFormatId::q4_0;
        case io::GgmlType::q6_k: return WeightFormatId::q6_k;
        case io::GgmlType::q4_k: return WeightFormatId::q4_k;
        case io::GgmlType::q5_k: return WeightFormatId::q5_k;
        case io::GgmlType::q5_0: return WeightFormatId::q5_0;
        case io::GgmlType::q5_1: return WeightFormatId::q5_1;
        case io::GgmlType::f16: break;  // no f16 weight format: widened to float
    }
    return std::nullopt;
}

// A GGUF file's tensors as the layers ask for them: `translate` gives the file's name for a
// layer's (Hugging Face) name; `architecture` names the metadata in messages ("gpt2").
class GgufCheckpoint : public Checkpoint {
public:
    GgufCheckpoint(const io::GgufFile& file, std::string (*translate)(const std::string&), std::string architecture)
        : file_(file), translate_(translate), architecture_(std::move(architecture)) {}

    const std::string& path() const override { return file_.path(); }

    void read_rows(const TensorRequest& r, std::size_t first, std::span<float> dst) const override {
        const io::GgufTensorInfo& t = checked(r);
        detail::check_rows_asked(path(), r, first, dst.size());
        file_.read_float_range(t, first * r.cols, dst);
    }
    bool stores_as(const TensorRequest& r, WeightFormatId format) const override {
        return weight_format_of(checked(r).type) == format;
    }
    void read_stored_rows(const TensorRequest& r, std::size_t first, std::span<std::byte> dst) const override {
        const io::GgufTensorInfo& t = checked(r);
        const std::size_t row_bytes = r.cols / io::ggml_block_elements(t.type) * io::ggml_block_bytes(t.type);
        if (dst.size() % row_bytes != 0) throw FormatError(path() + ": tensor '" + t.name + "': part of a row asked for");
        detail::check_rows_asked(path(), r, first, dst.size() / row_bytes * r.cols);
        file_.read_bytes(t, first * row_bytes, dst);
        // Blocks are taken as they are, but a NaN or infinite scale or weight still is an error.
        std::vector<float> values(r.cols);
        for (std::size_t row = 0; row < dst.size() / row_bytes; ++row) {
            io::ggml_to_float(t.type, dst.data() + row * row_bytes, values.data(), r.cols);
            file_.check_finite(t, (first + row) * r.cols, values);
        }
    }

private:
    const io::GgufTensorInfo& checked(const TensorRequest& r) const {
        const io::GgufTensorInfo& t = file_.tensor(translate_(r.name));
        // ggml's order: the contiguous dimension first.
        const std::vector<std::uint64_t> expected = r.role == TensorRequest::Role::vector ? std::vector<std::uint64_t>{r.cols}
                                                                                        : std::vector<std::uint64_t>{r.cols, r.rows};
        if (t.ne != expected) {
            throw FormatError(path() + ": tensor '" + t.name + "' has dimensions " + io::shape_string(t.ne) +
                              " (ggml order) but the file's " + architecture_ + ".* metadata implies " + io::shape_string(expected));
        }
        return t;
    }

    const io::GgufFile& file_;
    std::string (*translate_)(const std::string&);
    std::string architecture_;
};

}  // namespace tessera
