#pragma once
// How layers load their weights, whatever the file: a Checkpoint answers requests for named
// tensors in the layers' own terms (a vector, a table of rows, a linear map's [out, in] rows),
// checks their shapes, and hides how the file lays them out (Hugging Face's Conv1D stores a
// linear map [in, out]; GGUF stores it [out, in] and under other names: models/
// gpt2_checkpoints.hpp). WeightSource is a Checkpoint seen from one layer (a name prefix).
#include <algorithm>    // std::max, std::min
#include <cstddef>      // std::byte, std::size_t
#include <span>         // std::span
#include <string>       // std::string
#include <type_traits>  // std::is_same_v
#include <vector>       // std::vector

#include <tessera/backend/backend.hpp>       // HasPackedWeights
#include <tessera/core/error.hpp>           // FormatError, ArgumentError
#include <tessera/core/weight_formats.hpp>  // WeightFormat, WeightFormatId
#include <tessera/ops/transfer.hpp>         // copy_from_host

namespace tessera {

namespace detail {
// The backend's packed copy of weights stored as W (HasPackedWeights), or nothing.
struct NoPackedWeights {};
template <class B, class W>
struct PackedCopyOf {
    using type = NoPackedWeights;
};
template <class B, class W>
    requires HasPackedWeights<B, W>
struct PackedCopyOf<B, W> {
    using type = typename B::template PackedWeights<W>;
};
// What a layer keeps besides its weights: what arranging did where the backend arranges them
// (`arranged`: ArrangesWeights for a Linear, ArrangesTables for an Embedding), else the
// backend's packed copy, or nothing.
template <class B, class W, bool arranged>
struct KeptLayoutOf : PackedCopyOf<B, W> {};
template <class B, class W>
struct KeptLayoutOf<B, W, true> {
    using type = typename B::template ArrangedWeights<W>;
};
}  // namespace detail

// `weights` in stored elements of W, which must hold it in whole blocks ("Linear: 100 inputs
// are not a whole number of q8_0 blocks of 32").
template <WeightType W>
std::size_t whole_blocks(std::size_t weights, const char* layer) {
    constexpr std::size_t block = WeightFormat<W>::block;
    if (weights % block != 0) {
        throw ArgumentError(std::string(layer) + ": " + std::to_string(weights) + " weights per row are not a whole number of " +
                            std::string(WeightFormat<W>::name) + " blocks of " + std::to_string(block) +
                            " (use f32 or bf16 for this model)");
    }
    return weights / block;
}

// What a layer asks for: `name` seen as `rows` x `cols` (a vector is one row). A table's rows
// are as the layer keeps them (embeddings, positions); a linear map's rows are its outputs
// ([out, in], each output's weights contiguous), however the file stores it.
struct TensorRequest {
    enum class Role { vector, table, linear };
    std::string name;
    Role role = Role::vector;
    std::size_t rows = 1, cols = 0;
};

class Checkpoint {
public:
    virtual ~Checkpoint() = default;
    virtual const std::string& path() const = 0;
    // Rows [first, first + dst.size() / cols) of the tensor asked for, as float. A missing
    // tensor or one of another shape: FormatError naming the file and the tensor.
    virtual void read_rows(const TensorRequest& request, std::size_t first, std::span<float> dst) const = 0;
    // Whether the tensor is stored as `format`, in blocks along its rows: then read_stored_rows
    // copies those rows' bytes as they are (no conversion, no rounding twice).
    virtual bool stores_as(const TensorRequest&, WeightFormatId) const { return false; }
    virtual void read_stored_rows(const TensorRequest& request, std::size_t, std::span<std::byte>) const {
        throw FormatError(path() + ": tensor '" + request.name + "' is not stored in the format asked for");
    }
};

// Rows [first, first + rows) of the tensor asked for, in format W, into host memory `out` (rows
// x cols / block elements): blocks copied as stored when the file holds them in W (no rounding
// twice); otherwise floats, quantized 1 MB at a time for a table (a 150 MB embedding is never
// held twice) and whole for a linear map (a file may have to transpose it to give rows).
template <WeightType W>
void read_rows_as(const Checkpoint& file, const TensorRequest& request, std::size_t first, std::size_t rows, W* out) {
    const std::size_t cols = request.cols, row_elements = stored_elements<W>(cols);
    if constexpr (std::is_same_v<W, float>) {
        file.read_rows(request, first, std::span<float>(out, rows * cols));
    } else if (file.stores_as(request, WeightFormat<W>::id)) {
        file.read_stored_rows(request, first, std::as_writable_bytes(std::span<W>(out, rows * row_elements)));
    } else {
        const std::size_t step =
            request.role == TensorRequest::Role::linear ? rows : std::max<std::size_t>(1, (std::size_t{1} << 18) / cols);
        std::vector<float> chunk(std::min(rows, step) * cols);
        for (std::size_t r = 0; r < rows; r += step) {
            const std::span<float> part(chunk.data(), std::min(step, rows - r) * cols);
            file.read_rows(request, first + r, part);
            WeightFormat<W>::quantize(part.data(), out + r * row_elements, part.size());
        }
    }
}

// A Checkpoint seen from one layer: names relative to `prefix` ("h.3.attn."), and the backend
// that uploads what the layer reads into backend B's memory.
template <class B>
struct WeightSource {
    const Checkpoint& file;
    std::string prefix;
    B& backend;

    WeightSource sub(const std::string& name) const { return {file, prefix + name, backend}; }

    // A vector of n floats (a bias, a norm's scale).
    std::vector<float> vector(const std::string& name, std::size_t n) const {
        std::vector<float> host(n);
        file.read_rows({prefix + name, TensorRequest::Role::vector, 1, n}, 0, host);
        return host;
    }
    template <class T>
    void vector_into(const std::string& name, T& tensor) const {
        copy_from_host(backend, std::span<const float>(vector(name, tensor.size())), tensor);
    }

    // A table (rows as stored: an embedding, the positions) into a tensor of any weight format.
    template <class T>
    void table_into(const std::string& name, T& tensor) const {
        const std::size_t cols = tensor.extent(1) * WeightFormat<typename T::value_type>::block;
        rows_into({prefix + name, TensorRequest::Role::table, tensor.extent(0), cols}, 0, tensor);
    }
    // Outputs [first, first + out) of the linear map `name` with `total` outputs (c_attn holds
    // q, k and v one after the other) into a weight tensor (out, in / block).
    template <class T>
    void linear_into(const std::string& name, std::size_t total, std::size_t first, T& tensor) const {
        const std::size_t cols = tensor.extent(1) * WeightFormat<typename T::value_type>::block;
        rows_into({prefix + name, TensorRequest::Role::linear, total, cols}, first, tensor);
    }

private:
    // Rows [first, first + tensor rows) of the request: straight into host memory when the
    // backend's memory is host memory, else through a host copy.
    template <class T>
    void rows_into(const TensorRequest& request, std::size_t first, T& tensor) const {
        using W = typename T::value_type;
        if constexpr (T::backend_type::host_accessible) {
            read_rows_as<W>(file, request, first, tensor.extent(0), tensor.data());
        } else {
            std::vector<W> stored(tensor.size());
            read_rows_as<W>(file, request, first, tensor.extent(0), stored.data());
            copy_from_host(backend, std::span<const W>(stored), tensor);
        }
    }
};

}  // namespace tessera
