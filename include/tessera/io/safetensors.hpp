#pragma once
// Reading a .safetensors file: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}), then the
// data region. Every field is validated before any tensor is read: a truncated or corrupt file
// is a FormatError naming the file and the tensor, never an out-of-bounds read.
#include <algorithm>    // std::sort, std::min
#include <array>        // std::array
#include <cmath>        // std::isfinite, std::isnan
#include <cstddef>      // std::byte, std::size_t
#include <cstdint>      // std::uint64_t, std::uint16_t
#include <filesystem>   // std::filesystem::path
#include <map>          // std::map
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/io/json.hpp>  // parse_json: the header

#include <tessera/core/dtype.hpp>    // bf16, f16
#include <tessera/core/error.hpp>    // FormatError
#include <tessera/io/read_only_file.hpp>  // ReadOnlyFile

namespace tessera::io {

enum class DType { f32, f16, bf16 };

inline std::size_t dtype_size(DType t) noexcept { return t == DType::f32 ? 4 : 2; }

struct TensorInfo {
    std::string name;
    DType dtype;
    std::vector<std::size_t> shape;
    std::size_t begin = 0, end = 0;  // byte offsets within the data region
    std::size_t elements() const noexcept {
        std::size_t n = 1;
        for (const std::size_t d : shape) n *= d;
        return n;
    }
};

// "[768, 2304]" for messages.
template <class Size>
std::string shape_string(const std::vector<Size>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

class SafetensorsFile {
public:
    static constexpr std::size_t max_header_bytes = 100 << 20;  // the format's own limit

    explicit SafetensorsFile(const std::filesystem::path& path) : file_(path) { parse(); }

    const std::string& path() const noexcept { return file_.path(); }
    bool contains(std::string_view name) const { return tensors_.find(std::string(name)) != tensors_.end(); }
    const TensorInfo& info(std::string_view name) const {
        const auto it = tensors_.find(std::string(name));
        if (it == tensors_.end()) throw FormatError(path() + ": tensor '" + std::string(name) + "' is missing");
        return it->second;
    }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& [name, _] : tensors_) out.push_back(name);
        return out;
    }

    // The tensor's elements widened to float, in file order; dst must hold exactly that many.
    // F32 is read straight into dst; F16 and BF16 through a chunk of at most 8 MB. A NaN or an
    // infinity is a FormatError naming the tensor: it would silently turn every later logit
    // into garbage.
    void read_float(const TensorInfo& t, std::span<float> dst) const {
        if (dst.size() != t.elements()) {
            throw FormatError(path() + ": tensor '" + t.name + "' has " + std::to_string(t.elements()) +
                              " elements but " + std::to_string(dst.size()) + " were expected");
        }
        read_float_range(t, 0, dst);
    }

    // Elements [first, first + dst.size()) of the tensor, the same way (a part of a large tensor
    // at a time: quantizing GPT-2's 154 MB embedding never holds all of it as float).
    void read_float_range(const TensorInfo& t, std::size_t first_element, std::span<float> dst) const {
        if (first_element > t.elements() || dst.size() > t.elements() - first_element) {
            throw FormatError(path() + ": tensor '" + t.name + "' has " + std::to_string(t.elements()) + " elements, not [" +
                              std::to_string(first_element) + ", " + std::to_string(first_element + dst.size()) + ")");
        }
        const std::size_t offset = data_start_ + t.begin + first_element * dtype_size(t.dtype);
        if (t.dtype == DType::f32) {
            file_.read(offset, std::as_writable_bytes(dst));  // little-endian host assumed
        } else {
            constexpr std::size_t chunk = std::size_t{4} << 20;  // elements per chunk
            std::vector<std::uint16_t> half(std::min(chunk, dst.size()));
            for (std::size_t first = 0; first < dst.size(); first += chunk) {
                const std::size_t n = std::min(chunk, dst.size() - first);
                file_.read(offset + 2 * first, std::as_writable_bytes(std::span(half.data(), n)));
                if (t.dtype == DType::f16) {
                    widen<f16>(half.data(), dst.subspan(first, n));
                } else {
                    widen<bf16>(half.data(), dst.subspan(first, n));
                }
            }
        }
        for (std::size_t i = 0; i < dst.size(); ++i) {
            if (!std::isfinite(dst[i])) {
                fail("tensor '" + t.name + "' holds " + (std::isnan(dst[i]) ? "NaN" : "an infinity") + " at element " +
                     std::to_string(first_element + i));
            }
        }
    }

private:
    template <class Half>
    static void widen(const std::uint16_t* bits, std::span<float> dst) {
        for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<float>(Half::from_bits(bits[i]));
    }

    [[noreturn]] void fail(const std::string& what) const { throw FormatError(path() + ": " + what); }

    void parse() {
        const std::size_t file_size = file_.size();
        if (file_size < 8) {
            fail("truncated: " + std::to_string(file_size) + " bytes, but a safetensors file starts with an 8-byte header length");
        }
        std::array<std::byte, 8> length{};
        file_.read(0, length);
        std::uint64_t n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(length[static_cast<std::size_t>(i)]);
        if (n > file_size - 8) {
            fail("header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
        }
        if (n > max_header_bytes) fail("header length " + std::to_string(n) + " exceeds the format's 100 MB limit");
        data_start_ = 8 + static_cast<std::size_t>(n);
        const std::size_t data_size = file_size - data_start_;
        std::string text(static_cast<std::size_t>(n), '\0');
        file_.read(8, std::as_writable_bytes(std::span(text)));
        const JsonValue header = parse_json(text, path() + ": header");
        if (!header.is_object()) fail("header is not a JSON object");
        for (const auto& [name, entry] : header.members()) {
            if (name == "__metadata__") continue;
            tensors_.emplace(name, parse_entry(name, entry, data_size));
        }
        // Tensors must not share bytes.
        std::vector<const TensorInfo*> by_offset;
        for (const auto& [_, t] : tensors_) by_offset.push_back(&t);
        std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
        for (std::size_t i = 1; i < by_offset.size(); ++i) {
            if (by_offset[i]->begin < by_offset[i - 1]->end) {
                fail("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap in the data region");
            }
        }
    }

    TensorInfo parse_entry(const std::string& name, const JsonValue& e, std::size_t data_size) const {
        const auto bad = [&](const std::string& what) { fail("tensor '" + name + "': " + what); };
        if (!e.is_object() || !e.find("dtype") || !e.find("shape") || !e.find("data_offsets")) {
            bad("expected an object with dtype, shape and data_offsets");
        }
        TensorInfo t;
        t.name = name;
        const JsonValue& dtype = *e.find("dtype");
        if (!dtype.is_string()) bad("dtype is not a string");
        const std::string& d = dtype.as_string();
        if (d == "F32") {
            t.dtype = DType::f32;
        } else if (d == "F16") {
            t.dtype = DType::f16;
        } else if (d == "BF16") {
            t.dtype = DType::bf16;
        } else {
            bad("dtype " + d + " is not supported (F32, F16, BF16 are)");
        }
        const JsonValue& shape = *e.find("shape");
        if (!shape.is_array()) bad("shape is not an array");
        std::size_t elements = 1;
        for (const JsonValue& dim : shape.elements()) {
            if (!dim.as_unsigned()) bad("shape has an entry that is not a non-negative integer");
            const std::uint64_t v = *dim.as_unsigned();
            if (v != 0 && elements > (std::size_t{1} << 48) / v) bad("shape is too large");
            elements *= static_cast<std::size_t>(v);
            t.shape.push_back(static_cast<std::size_t>(v));
        }
        const auto& off = e.find("data_offsets")->elements();
        if (off.size() != 2 || !off[0].as_unsigned() || !off[1].as_unsigned()) {
            bad("data_offsets is not a pair of non-negative integers");
        }
        const std::uint64_t begin = *off[0].as_unsigned(), end = *off[1].as_unsigned();
        if (begin > end || end > data_size) {
            bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] lie outside the data region (" +
                std::to_string(data_size) + " bytes)");
        }
        t.begin = static_cast<std::size_t>(begin);
        t.end = static_cast<std::size_t>(end);
        if (t.end - t.begin != elements * dtype_size(t.dtype)) {
            bad("holds " + std::to_string(t.end - t.begin) + " bytes but shape " + shape_string(t.shape) + " of " + d +
                " needs " + std::to_string(elements * dtype_size(t.dtype)));
        }
        return t;
    }

    ReadOnlyFile file_;
    std::size_t data_start_ = 0;
    std::map<std::string, TensorInfo> tensors_;
};

}  // namespace tessera::io
