#pragma once
// Loading one named weight from a checkpoint, checking its shape against the model's
// (transposing Hugging Face's Conv1D [in, out] to [out, in] is Linear's job).
#include <algorithm>  // std::max, std::min
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::string
#include <type_traits>  // std::is_same_v
#include <vector>   // std::vector

#include <tessera/core/error.hpp>    // FormatError, ArgumentError, ShapeError
#include <tessera/core/weight_formats.hpp>  // WeightFormat
#include <tessera/io/safetensors.hpp>  // SafetensorsFile, TensorInfo
#include <tessera/ops/transfer.hpp>    // copy_from_host

namespace tessera {

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

// Float weights (row-major, rows of the tensor's logical width) into a weight tensor of any
// storage type, quantized on the host when it is not float.
template <class T>
void store_weights(std::span<const float> values, T& tensor) {
    using W = typename T::value_type;
    if constexpr (std::is_same_v<W, float>) {
        copy_from_host(values, tensor);
    } else {
        if (values.size() != tensor.size() * WeightFormat<W>::block) {
            throw ShapeError("store_weights: " + std::to_string(values.size()) + " weights for " +
                             std::to_string(tensor.size()) + " " + std::string(WeightFormat<W>::name) + " elements");
        }
        std::vector<W> stored(tensor.size());
        WeightFormat<W>::quantize(values.data(), stored.data(), values.size());
        copy_from_host(std::span<const W>(stored), tensor);
    }
}

// Where a layer finds its weights: the file and the prefix of its names ("h.3.attn.").
struct WeightSource {
    const io::SafetensorsFile& file;
    std::string prefix;

    WeightSource sub(const std::string& name) const { return {file, prefix + name}; }

    // The elements of `name`, which must have exactly `shape`, as float in file order.
    std::vector<float> read(const std::string& name, const std::vector<std::size_t>& shape) const {
        std::vector<float> host(checked(name, shape).elements());
        file.read_float(checked(name, shape), host);
        return host;
    }

    // The same into a tensor as it is (no transpose): straight into host memory when the
    // backend's memory is host memory, so a 150 MB embedding is never held twice.
    template <class T>
    void read_into(const std::string& name, const std::vector<std::size_t>& shape, T& tensor) const {
        using W = typename T::value_type;
        if constexpr (!std::is_same_v<W, float> && T::backend_type::host_accessible) {
            // Quantized straight into host memory, 1 MB of floats at a time (whole rows).
            const io::TensorInfo& t = checked(name, shape);
            const std::size_t row = shape.back(), rows = t.elements() / row;
            const std::size_t step = std::max<std::size_t>(1, (std::size_t{1} << 18) / row);
            std::vector<float> chunk(std::min(rows, step) * row);
            for (std::size_t r = 0; r < rows; r += step) {
                const std::size_t n = std::min(step, rows - r) * row;
                file.read_float_range(t, r * row, std::span(chunk.data(), n));
                WeightFormat<W>::quantize(chunk.data(), tensor.data() + r * row / WeightFormat<W>::block, n);
            }
        } else if constexpr (!std::is_same_v<W, float>) {
            store_weights(std::span<const float>(read(name, shape)), tensor);
        } else if constexpr (T::backend_type::host_accessible) {
            file.read_float(checked(name, shape), std::span<float>(tensor.data(), tensor.size()));
        } else {
            copy_from_host(std::span<const float>(read(name, shape)), tensor);
        }
    }

private:
    const io::TensorInfo& checked(const std::string& name, const std::vector<std::size_t>& shape) const {
        const io::TensorInfo& t = file.info(prefix + name);
        if (t.shape != shape) {
            throw FormatError(file.path() + ": tensor '" + t.name + "' has shape " + io::shape_string(t.shape) +
                              " but config.json implies " + io::shape_string(shape));
        }
        return t;
    }
};

}  // namespace tessera
