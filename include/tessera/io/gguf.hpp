#pragma once
// GgufFile: a validated reader of GGUF v3 files (the format of llama.cpp / ggml; ggml's
// docs/gguf.md): a header, key-value metadata, tensor descriptions, then the aligned tensor
// data. Like SafetensorsFile, everything is checked before it is used, and every error names the
// file and the key or tensor: counts and lengths against the bytes left (no allocation a corrupt
// count asks for), value and tensor types, dimensions (at most 4, no overflow), the alignment
// and every tensor's offset and size against the data region, overlaps, duplicate keys and
// names, strings as UTF-8. Metadata arrays (a tokenizer's 150,000 tokens, or a corrupt file's
// 20 million bytes) are checked when the file opens but read only when asked for, so opening a
// file costs memory for what the caller uses; an array that does not fit in memory is an error
// naming its key.
//
// Dimensions are kept in ggml's order: ne[0] is the innermost (contiguous) one, so a PyTorch
// [out, in] weight has ne = {in, out}.
#include <algorithm>    // std::sort, std::min
#include <cmath>        // std::isfinite
#include <array>        // std::array
#include <cstddef>      // std::byte, std::size_t
#include <cstdint>      // std::uint32_t, std::uint64_t
#include <cstring>      // std::memcpy
#include <filesystem>   // std::filesystem::path
#include <map>          // std::map
#include <new>          // std::bad_alloc
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <type_traits>  // std::is_same_v
#include <utility>      // std::move
#include <vector>       // std::vector

#include <tessera/core/dtype.hpp>         // bf16, f16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K
#include <tessera/core/error.hpp>         // FormatError
#include <tessera/core/weight_formats.hpp>  // WeightFormat (dequantize)
#include <tessera/io/read_only_file.hpp>  // ReadOnlyFile
#include <tessera/text/utf8.hpp>          // utf8::first_invalid

namespace tessera::io {

// The tensor types tessera reads (ggml_type numbers). Q6_K: llama-quantize keeps GPT-2's tied
// embedding in it when it makes a Q4_0 file, and so do tessera's Q4_0 models (HeadFormat).
// Q4_K and Q5_K (with Q6_K: the K-quant files, Q4_K_M and the like), and Q5_0 and Q5_1 (what
// llama-quantize writes in their place where rows are not whole super-blocks of 256) are widened
// to float as they load, for now.
enum class GgmlType : std::uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q5_0 = 6, q5_1 = 7, q8_0 = 8, q4_k = 12, q5_k = 13, q6_k = 14, bf16 = 30 };

inline std::optional<GgmlType> ggml_type(std::uint32_t t) noexcept {
    switch (t) {
        case 0: return GgmlType::f32;
        case 1: return GgmlType::f16;
        case 2: return GgmlType::q4_0;
        case 6: return GgmlType::q5_0;
        case 7: return GgmlType::q5_1;
        case 8: return GgmlType::q8_0;
        case 12: return GgmlType::q4_k;
        case 13: return GgmlType::q5_k;
        case 14: return GgmlType::q6_k;
        case 30: return GgmlType::bf16;
        default: return std::nullopt;
    }
}
inline std::string_view ggml_type_name(GgmlType t) noexcept {
    switch (t) {
        case GgmlType::f32: return "F32";
        case GgmlType::f16: return "F16";
        case GgmlType::q4_0: return "Q4_0";
        case GgmlType::q5_0: return "Q5_0";
        case GgmlType::q5_1: return "Q5_1";
        case GgmlType::q8_0: return "Q8_0";
        case GgmlType::q4_k: return "Q4_K";
        case GgmlType::q5_k: return "Q5_K";
        case GgmlType::q6_k: return "Q6_K";
        case GgmlType::bf16: return "BF16";
    }
    return "?";
}
// Elements per block and bytes per block.
inline std::size_t ggml_block_elements(GgmlType t) noexcept {
    if (t == GgmlType::q4_0 || t == GgmlType::q5_0 || t == GgmlType::q5_1 || t == GgmlType::q8_0) return 32;
    return t == GgmlType::q4_k || t == GgmlType::q5_k || t == GgmlType::q6_k ? 256 : 1;
}
inline std::size_t ggml_block_bytes(GgmlType t) noexcept {
    switch (t) {
        case GgmlType::f32: return 4;
        case GgmlType::q4_0: return 18;
        case GgmlType::q5_0: return 22;
        case GgmlType::q5_1: return 24;
        case GgmlType::q8_0: return 34;
        case GgmlType::q4_k: return 144;
        case GgmlType::q5_k: return 176;
        case GgmlType::q6_k: return 210;
        default: return 2;
    }
}

namespace detail {
template <class T>
void widen_to_float(const std::byte* src, float* dst, std::size_t n) noexcept {
    const auto* in = reinterpret_cast<const T*>(src);  // aligned as a float: enough for any of them
    if constexpr (std::is_same_v<T, f16>) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(in[i]);
    } else {
        WeightFormat<T>::dequantize(in, dst, n);
    }
}
}  // namespace detail

// n elements of type t (whole blocks) at src (aligned as a float) widened to float.
inline void ggml_to_float(GgmlType t, const std::byte* src, float* dst, std::size_t n) noexcept {
    switch (t) {
        case GgmlType::f32: detail::widen_to_float<float>(src, dst, n); break;
        case GgmlType::f16: detail::widen_to_float<f16>(src, dst, n); break;
        case GgmlType::bf16: detail::widen_to_float<bf16>(src, dst, n); break;
        case GgmlType::q8_0: detail::widen_to_float<Q8_0>(src, dst, n); break;
        case GgmlType::q4_0: detail::widen_to_float<Q4_0>(src, dst, n); break;
        case GgmlType::q5_0: detail::widen_to_float<Q5_0>(src, dst, n); break;
        case GgmlType::q5_1: detail::widen_to_float<Q5_1>(src, dst, n); break;
        case GgmlType::q4_k: detail::widen_to_float<Q4_K>(src, dst, n); break;
        case GgmlType::q5_k: detail::widen_to_float<Q5_K>(src, dst, n); break;
        case GgmlType::q6_k: detail::widen_to_float<Q6_K>(src, dst, n); break;
    }
}

// A metadata value: a scalar, a string, or an array of one type. GgufFile::metadata() gives
// arrays without their elements (array_length says how many there are; GgufFile::value(key)
// reads them); a value built for GgufWriter holds them.
struct GgufValue {
    enum class Type : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
    Type type = Type::u8;
    std::uint64_t unsigned_value = 0;  // u8..u64, bool
    std::int64_t signed_value = 0;     // i8..i64
    double real_value = 0.0;           // f32, f64
    std::string text;                  // string
    Type element_type = Type::u8;      // array
    std::uint64_t array_length = 0;    // array: its elements as the file counts them, read or not
    std::vector<GgufValue> elements;   // array, when read

    bool is_unsigned() const noexcept { return type == Type::u8 || type == Type::u16 || type == Type::u32 || type == Type::u64; }
    bool is_signed() const noexcept { return type == Type::i8 || type == Type::i16 || type == Type::i32 || type == Type::i64; }
    bool is_real() const noexcept { return type == Type::f32 || type == Type::f64; }
    // An array whose elements were not read (GgufFile::metadata()).
    bool is_unread_array() const noexcept { return type == Type::array && elements.size() < array_length; }
};

struct GgufTensorInfo {
    std::string name;
    GgmlType type = GgmlType::f32;
    std::vector<std::uint64_t> ne;  // ggml order: ne[0] innermost
    std::uint64_t offset = 0;       // within the data region
    std::uint64_t bytes = 0;
    std::uint64_t elements() const noexcept {
        std::uint64_t n = 1;
        for (const std::uint64_t d : ne) n *= d;
        return n;
    }
};

class GgufFile {
public:
    static constexpr std::size_t max_dims = 4;
    static constexpr std::size_t max_nesting = 2;  // arrays of arrays, at most

    explicit GgufFile(const std::filesystem::path& path) : file_(path) { parse(); }

    const std::string& path() const noexcept { return file_.path(); }
    std::uint32_t version() const noexcept { return version_; }
    std::uint64_t alignment() const noexcept { return alignment_; }
    std::uint64_t data_offset() const noexcept { return data_start_; }  // where the tensor data starts
    const std::map<std::string, GgufValue>& metadata() const noexcept { return metadata_; }
    const std::vector<GgufTensorInfo>& tensors() const noexcept { return tensors_; }

    const GgufValue* find(const std::string& key) const {
        const auto it = metadata_.find(key);
        return it == metadata_.end() ? nullptr : &it->second;
    }
    // Typed metadata: a FormatError naming the key when it is missing or of another type.
    std::uint64_t unsigned_value(const std::string& key) const {
        const GgufValue& v = required(key);
        if (!v.is_unsigned()) fail("metadata '" + key + "' is not an unsigned integer");
        return v.unsigned_value;
    }
    double real_value(const std::string& key) const {
        const GgufValue& v = required(key);
        if (!v.is_real()) fail("metadata '" + key + "' is not a floating-point number");
        return v.real_value;
    }
    const std::string& string_value(const std::string& key) const {
        const GgufValue& v = required(key);
        if (v.type != GgufValue::Type::string) fail("metadata '" + key + "' is not a string");
        return v.text;
    }
    // The value of `key` whole: an array with its elements (read from the file now).
    GgufValue value(const std::string& key) const {
        const GgufValue& v = required(key);
        if (!v.is_unread_array()) return v;
        return read_array<GgufValue>(key, [&](Cursor& in) { return read_value(in, static_cast<std::uint32_t>(v.type), key, 0, true); });
    }
    // The elements of an array of `element` values.
    std::vector<GgufValue> array_value(const std::string& key, GgufValue::Type element) const {
        checked_array(key, element);
        return value(key).elements;
    }
    // The strings of an array of strings, read straight into strings.
    std::vector<std::string> string_array(const std::string& key) const {
        const GgufValue& v = checked_array(key, GgufValue::Type::string);
        return read_array<std::vector<std::string>>(key, [&](Cursor& in) {
            const std::string what = "metadata '" + key + "'";
            std::vector<std::string> out;
            out.reserve(static_cast<std::size_t>(v.array_length));
            in.skip(12, what);  // the element type and the length
            for (std::uint64_t i = 0; i < v.array_length; ++i) out.push_back(in.string(what));
            return out;
        });
    }
    const GgufTensorInfo* find_tensor(std::string_view name) const {
        for (const GgufTensorInfo& t : tensors_)
            if (t.name == name) return &t;
        return nullptr;
    }
    const GgufTensorInfo& tensor(std::string_view name) const {
        const GgufTensorInfo* t = find_tensor(name);
        if (t == nullptr) fail("tensor '" + std::string(name) + "' is missing");
        return *t;
    }
    // The tensor's bytes as stored; dst must hold exactly t.bytes.
    void read(const GgufTensorInfo& t, std::span<std::byte> dst) const {
        if (dst.size() != t.bytes) fail("tensor '" + t.name + "': " + std::to_string(dst.size()) + " bytes asked for, it has " + std::to_string(t.bytes));
        read_bytes(t, 0, dst);
    }
    // Bytes [first, first + dst.size()) of the tensor as stored.
    void read_bytes(const GgufTensorInfo& t, std::uint64_t first, std::span<std::byte> dst) const {
        if (first > t.bytes || dst.size() > t.bytes - first) {
            fail("tensor '" + t.name + "' has " + std::to_string(t.bytes) + " bytes, not [" + std::to_string(first) + ", " +
                 std::to_string(first + dst.size()) + ")");
        }
        file_.read(static_cast<std::size_t>(data_start_ + t.offset + first), dst);
    }
    // Elements [first, first + dst.size()) widened to float (both whole blocks), a chunk at a
    // time. A NaN or an infinity is a FormatError naming the tensor and the element.
    void read_float_range(const GgufTensorInfo& t, std::uint64_t first, std::span<float> dst) const {
        const std::uint64_t block = ggml_block_elements(t.type), bytes = ggml_block_bytes(t.type);
        if (first > t.elements() || dst.size() > t.elements() - first || first % block != 0 || dst.size() % block != 0) {
            fail("tensor '" + t.name + "' has " + std::to_string(t.elements()) + " elements in blocks of " + std::to_string(block) +
                 ", not [" + std::to_string(first) + ", " + std::to_string(first + dst.size()) + ")");
        }
        constexpr std::size_t chunk = std::size_t{1} << 16;  // elements, a multiple of every block (256 at most)
        // Floats: aligned for every block type (std::max_align_t would crash nvcc 13's front end).
        std::vector<float> raw(std::min(chunk, dst.size()));
        for (std::size_t done = 0; done < dst.size(); done += chunk) {
            const std::size_t n = std::min(chunk, dst.size() - done);
            const std::span<std::byte> in(reinterpret_cast<std::byte*>(raw.data()), n / block * bytes);
            read_bytes(t, (first + done) / block * bytes, in);
            ggml_to_float(t.type, in.data(), dst.data() + done, n);
        }
        check_finite(t, first, dst);
    }
    // The same check for floats already widened: a NaN or an infinity is a FormatError.
    void check_finite(const GgufTensorInfo& t, std::uint64_t first, std::span<const float> values) const {
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (!std::isfinite(values[i])) {
                fail("tensor '" + t.name + "' holds " + (std::isnan(values[i]) ? "NaN" : "an infinity") + " at element " +
                     std::to_string(first + i));
            }
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw FormatError(path() + ": " + what); }

    const GgufValue& required(const std::string& key) const {
        const GgufValue* v = find(key);
        if (v == nullptr) fail("metadata '" + key + "' is missing");
        return *v;
    }
    const GgufValue& checked_array(const std::string& key, GgufValue::Type element) const {
        const GgufValue& v = required(key);
        if (v.type != GgufValue::Type::array || v.element_type != element) fail("metadata '" + key + "' is not an array of the expected type");
        return v;
    }
    // read(cursor) over the array of `key` from where it lies (its element type); memory it
    // cannot have is a FormatError naming the key.
    template <class Result, class Read>
    Result read_array(const std::string& key, Read&& read) const {
        Cursor in(*this, array_at_.at(key));
        try {
            return read(in);
        } catch (const std::bad_alloc&) {
            fail("metadata '" + key + "' (an array of " + std::to_string(required(key).array_length) +
                 " elements) does not fit in memory");
        }
    }

    // Sequential reads through a window of the file.
    class Cursor {
    public:
        explicit Cursor(const GgufFile& f, std::uint64_t position = 0) : f_(f), pos_(position) {}
        std::uint64_t position() const noexcept { return pos_; }
        std::uint64_t left() const noexcept { return f_.file_.size() - pos_; }

        void take(void* dst, std::uint64_t n, const std::string& what) {
            if (n > left()) {
                f_.fail("truncated: " + what + " needs " + std::to_string(n) + " bytes at byte " + std::to_string(pos_) + ", " +
                        std::to_string(left()) + " are left");
            }
            auto* out = static_cast<std::byte*>(dst);
            while (n > 0) {
                if (pos_ < window_start_ || pos_ >= window_start_ + window_.size()) refill();
                const std::uint64_t at = pos_ - window_start_;
                const std::uint64_t chunk = std::min<std::uint64_t>(n, window_.size() - at);
                std::memcpy(out, window_.data() + at, static_cast<std::size_t>(chunk));
                out += chunk;
                pos_ += chunk;
                n -= chunk;
            }
        }
        void skip(std::uint64_t n, const std::string& what) {
            if (n > left()) {
                f_.fail("truncated: " + what + " needs " + std::to_string(n) + " bytes at byte " + std::to_string(pos_) + ", " +
                        std::to_string(left()) + " are left");
            }
            pos_ += n;
        }
        template <class T>
        T scalar(const std::string& what) {
            T v{};
            take(&v, sizeof v, what);  // little-endian, as the host (x86-64, AArch64)
            return v;
        }
        std::string string(const std::string& what) {
            const auto n = scalar<std::uint64_t>(what + ": length");
            if (n > left()) {
                f_.fail("truncated: " + what + " is " + std::to_string(n) + " bytes long at byte " + std::to_string(pos_) +
                        ", " + std::to_string(left()) + " are left");
            }
            std::string s(static_cast<std::size_t>(n), '\0');
            take(s.data(), n, what);
            if (utf8::first_invalid(s) != s.size()) f_.fail(what + " is not valid UTF-8");
            return s;
        }

    private:
        void refill() {
            window_start_ = pos_;
            window_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(left(), 1 << 20)));
            f_.file_.read(static_cast<std::size_t>(pos_), window_);
        }
        const GgufFile& f_;
        std::uint64_t pos_ = 0, window_start_ = 0;
        std::vector<std::byte> window_;
    };

    static std::uint64_t smallest_encoding(GgufValue::Type t) noexcept {
        using T = GgufValue::Type;
        switch (t) {
            case T::u8: case T::i8: case T::boolean: return 1;
            case T::u16: case T::i16: return 2;
            case T::u32: case T::i32: case T::f32: return 4;
            case T::array: return 12;  // element type and length
            default: return 8;         // 64-bit scalars, a string's length
        }
    }

    static std::uint64_t fixed_size(GgufValue::Type t) noexcept {
        using T = GgufValue::Type;
        return t == T::string || t == T::array || t == T::boolean ? 0 : smallest_encoding(t);
    }

    // One value of `type`; errors name the key (an array's elements, the array's key). An array
    // keeps its elements only when `whole`; otherwise they are checked (strings as UTF-8, bools
    // as 0 or 1, nested arrays likewise) and skipped.
    GgufValue read_value(Cursor& in, std::uint32_t type, const std::string& key, std::size_t depth, bool whole) const {
        using T = GgufValue::Type;
        if (type > static_cast<std::uint32_t>(T::f64)) fail("metadata '" + key + "' has unknown value type " + std::to_string(type));
        GgufValue v;
        v.type = static_cast<T>(type);
        const std::string what = "metadata '" + key + "'";
        switch (v.type) {
            case T::u8: v.unsigned_value = in.scalar<std::uint8_t>(what); break;
            case T::u16: v.unsigned_value = in.scalar<std::uint16_t>(what); break;
            case T::u32: v.unsigned_value = in.scalar<std::uint32_t>(what); break;
            case T::u64: v.unsigned_value = in.scalar<std::uint64_t>(what); break;
            case T::i8: v.signed_value = in.scalar<std::int8_t>(what); break;
            case T::i16: v.signed_value = in.scalar<std::int16_t>(what); break;
            case T::i32: v.signed_value = in.scalar<std::int32_t>(what); break;
            case T::i64: v.signed_value = in.scalar<std::int64_t>(what); break;
            case T::f32: v.real_value = in.scalar<float>(what); break;
            case T::f64: v.real_value = in.scalar<double>(what); break;
            case T::boolean: {
                const auto b = in.scalar<std::uint8_t>(what);
                if (b > 1) fail(what + " is a bool of value " + std::to_string(b));
                v.unsigned_value = b;
                break;
            }
            case T::string: v.text = in.string(what); break;
            case T::array: {
                if (depth >= max_nesting) fail(what + " nests arrays deeper than " + std::to_string(max_nesting));
                const auto element = in.scalar<std::uint32_t>(what + ": element type");
                if (element > static_cast<std::uint32_t>(T::f64)) fail(what + " is an array of unknown type " + std::to_string(element));
                const auto count = in.scalar<std::uint64_t>(what + ": length");
                // Each element takes at least its smallest encoding: a count beyond what the bytes
                // left can hold is corrupt, refused before anything is allocated for it.
                if (count > in.left() / smallest_encoding(static_cast<T>(element))) {
                    fail(what + " claims " + std::to_string(count) + " elements but " + std::to_string(in.left()) +
                         " bytes are left");
                }
                v.element_type = static_cast<T>(element);
                v.array_length = count;
                if (whole) {
                    v.elements.reserve(static_cast<std::size_t>(count));
                    for (std::uint64_t i = 0; i < count; ++i) v.elements.push_back(read_value(in, element, key, depth + 1, true));
                } else if (const std::uint64_t size = fixed_size(v.element_type)) {
                    in.skip(count * size, what);
                } else {
                    for (std::uint64_t i = 0; i < count; ++i) (void)read_value(in, element, key, depth + 1, false);
                }
                break;
            }
        }
        return v;
    }

    void parse() {
        Cursor in(*this);
        std::array<char, 4> magic{};
        in.take(magic.data(), 4, "the magic number");
        if (std::string_view(magic.data(), 4) != "GGUF") fail("not a GGUF file (it does not start with \"GGUF\")");
        version_ = in.scalar<std::uint32_t>("the version");
        if (version_ != 3) fail("GGUF version " + std::to_string(version_) + " is not supported (version 3 is)");
        const auto tensor_count = in.scalar<std::uint64_t>("the tensor count");
        const auto kv_count = in.scalar<std::uint64_t>("the metadata count");
        // A key-value pair takes at least 13 bytes, a tensor description at least 24.
        if (kv_count > in.left() / 13) fail("the header claims " + std::to_string(kv_count) + " metadata entries; the file is too short for them");
        if (tensor_count > in.left() / 24) fail("the header claims " + std::to_string(tensor_count) + " tensors; the file is too short for them");
        for (std::uint64_t i = 0; i < kv_count; ++i) {
            std::string key = in.string("metadata key " + std::to_string(i));
            const auto type = in.scalar<std::uint32_t>("metadata '" + key + "': type");
            const std::uint64_t at = in.position();
            GgufValue v = read_value(in, type, key, 0, false);
            if (v.type == GgufValue::Type::array) array_at_.emplace(key, at);
            if (!metadata_.emplace(key, std::move(v)).second) fail("metadata '" + key + "' appears twice");
        }
        if (const GgufValue* a = find("general.alignment")) {
            if (a->type != GgufValue::Type::u32 || a->unsigned_value == 0 || (a->unsigned_value & (a->unsigned_value - 1)) != 0) {
                fail("general.alignment must be a power of two (u32)");
            }
            alignment_ = a->unsigned_value;
        }
        tensors_.reserve(static_cast<std::size_t>(tensor_count));
        for (std::uint64_t i = 0; i < tensor_count; ++i) {
            GgufTensorInfo t;
            t.name = in.string("tensor name " + std::to_string(i));
            const std::string what = "tensor '" + t.name + "'";
            const auto dims = in.scalar<std::uint32_t>(what + ": dimension count");
            if (dims == 0 || dims > max_dims) fail(what + " has " + std::to_string(dims) + " dimensions (1 to 4 are allowed)");
            std::uint64_t elements = 1;
            for (std::uint32_t d = 0; d < dims; ++d) {
                const auto n = in.scalar<std::uint64_t>(what + ": dimensions");
                if (n == 0 || n > (std::uint64_t{1} << 48) / elements) fail(what + " has a dimension of " + std::to_string(n) + " (zero, or too large)");
                elements *= n;
                t.ne.push_back(n);
            }
            const auto type = in.scalar<std::uint32_t>(what + ": type");
            const auto known = ggml_type(type);
            if (!known) fail(what + " has ggml type " + std::to_string(type) + ", which is not supported (F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K are)");
            t.type = *known;
            if (t.ne[0] % ggml_block_elements(t.type) != 0) {
                fail(what + " is " + std::string(ggml_type_name(t.type)) + " but its rows of " + std::to_string(t.ne[0]) +
                     " are not whole blocks of " + std::to_string(ggml_block_elements(t.type)));
            }
            t.bytes = elements / ggml_block_elements(t.type) * ggml_block_bytes(t.type);
            t.offset = in.scalar<std::uint64_t>(what + ": offset");
            if (t.offset % alignment_ != 0) fail(what + " has offset " + std::to_string(t.offset) + ", not a multiple of the alignment " + std::to_string(alignment_));
            tensors_.push_back(std::move(t));
        }
        data_start_ = (in.position() + alignment_ - 1) / alignment_ * alignment_;
        const std::uint64_t size = file_.size();
        if (data_start_ > size) fail("truncated: the tensor data would start at byte " + std::to_string(data_start_) + " of " + std::to_string(size));
        const std::uint64_t data_size = size - data_start_;
        std::vector<const GgufTensorInfo*> by_offset;
        for (const GgufTensorInfo& t : tensors_) {
            if (t.offset > data_size || t.bytes > data_size - t.offset) {
                fail("tensor '" + t.name + "' (" + std::to_string(t.bytes) + " bytes at offset " + std::to_string(t.offset) +
                     ") runs past the end of the data (" + std::to_string(data_size) + " bytes)");
            }
            by_offset.push_back(&t);
        }
        std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
        for (std::size_t i = 1; i < by_offset.size(); ++i) {
            if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->bytes) {
                fail("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");
            }
        }
        std::vector<std::string_view> names;
        for (const GgufTensorInfo& t : tensors_) names.emplace_back(t.name);
        std::sort(names.begin(), names.end());
        if (const auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end()) {
            fail("tensor '" + std::string(*twice) + "' appears twice");
        }
    }

    ReadOnlyFile file_;
    std::uint32_t version_ = 0;
    std::uint64_t alignment_ = 32;
    std::uint64_t data_start_ = 0;
    std::map<std::string, GgufValue> metadata_;
    std::map<std::string, std::uint64_t> array_at_;  // where each array's element type lies
    std::vector<GgufTensorInfo> tensors_;
};

}  // namespace tessera::io
