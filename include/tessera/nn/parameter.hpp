#pragma once
// Loading one named weight from a checkpoint, checking its shape against the model's
// (transposing Hugging Face's Conv1D [in, out] to [out, in] is Linear's job).
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::string
#include <vector>   // std::vector

#include <tessera/core/error.hpp>    // FormatError
#include <tessera/io/safetensors.hpp>  // SafetensorsFile, TensorInfo
#include <tessera/ops/transfer.hpp>    // copy_from_host

namespace tessera {

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
        if constexpr (T::backend_type::host_accessible) {
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
