#pragma once
// GgufWriter: writes GGUF v3 files (ggml's docs/gguf.md) that GgufFile and llama.cpp read:
// the header, the metadata in the order added, the tensor descriptions, then each tensor's
// data at the next multiple of the alignment (32). Tensor data is produced one tensor at a
// time while the file is written (a 500 MB model is never held whole), through an OutputFile:
// never over one of the inputs or anything but a regular file, and put in place only when
// everything is written (a failure leaves the target as it was). Keys and strings must be
// valid UTF-8, as GgufFile requires: nothing is written that the reader would refuse.
#include <cstddef>     // std::byte, std::size_t
#include <cstdint>     // std::uint32_t, std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <functional>  // std::function
#include <set>         // std::set
#include <string>      // std::string
#include <utility>     // std::move
#include <vector>      // std::vector

#include <tessera/core/error.hpp>  // Error, ArgumentError
#include <tessera/io/gguf.hpp>         // GgufValue, GgmlType, ggml_block_elements, ggml_block_bytes
#include <tessera/io/output_file.hpp>  // OutputFile
#include <tessera/text/utf8.hpp>       // utf8::first_invalid

namespace tessera::io {

class GgufWriter {
public:
    static constexpr std::uint64_t alignment = 32;  // GGUF's default: no general.alignment needed

    // A value as GgufFile::value() gives it (an array with its elements; metadata()'s arrays
    // without them are refused).
    void add(const std::string& key, GgufValue value) {
        check_utf8(key, "metadata key", key);
        if (value.is_unread_array()) {
            throw ArgumentError("GgufWriter: metadata '" + key + "' is an array whose elements were not read (GgufFile::value)");
        }
        check_strings(key, value);
        if (!keys_.insert(key).second) throw ArgumentError("GgufWriter: metadata '" + key + "' added twice");
        metadata_.emplace_back(key, std::move(value));
    }
    void add_string(const std::string& key, std::string text) {
        GgufValue v;
        v.type = GgufValue::Type::string;
        v.text = std::move(text);
        add(key, std::move(v));
    }
    void add_u32(const std::string& key, std::uint32_t n) { add(key, scalar(GgufValue::Type::u32, n)); }
    void add_bool(const std::string& key, bool b) { add(key, scalar(GgufValue::Type::boolean, b ? 1 : 0)); }
    void add_f32(const std::string& key, float x) {
        GgufValue v;
        v.type = GgufValue::Type::f32;
        v.real_value = x;
        add(key, std::move(v));
    }
    void add_strings(const std::string& key, const std::vector<std::string>& texts) {
        GgufValue v;
        v.type = GgufValue::Type::array;
        v.element_type = GgufValue::Type::string;
        for (const std::string& t : texts) {
            GgufValue e;
            e.type = GgufValue::Type::string;
            e.text = t;
            v.elements.push_back(std::move(e));
        }
        add(key, std::move(v));
    }
    void add_i32s(const std::string& key, const std::vector<std::int32_t>& values) {
        add_numbers(key, GgufValue::Type::i32, values, &GgufValue::signed_value);
    }
    void add_f32s(const std::string& key, const std::vector<float>& values) {
        add_numbers(key, GgufValue::Type::f32, values, &GgufValue::real_value);
    }

    // A tensor of `type` with dimensions ne (ggml order: innermost first); produce() returns its
    // bytes when the file is written and must return exactly the size the type and ne imply.
    void add_tensor(const std::string& name, GgmlType type, std::vector<std::uint64_t> ne,
                    std::function<std::vector<std::byte>()> produce) {
        check_utf8(name, "tensor name", name);
        if (!names_.insert(name).second) throw ArgumentError("GgufWriter: tensor '" + name + "' added twice");
        if (ne.empty() || ne.size() > GgufFile::max_dims || ne[0] % ggml_block_elements(type) != 0) {
            throw ArgumentError("GgufWriter: tensor '" + name + "': 1 to 4 dimensions, rows of whole blocks");
        }
        std::uint64_t elements = 1;
        for (const std::uint64_t n : ne) elements *= n;
        tensors_.push_back({name, type, std::move(ne), elements / ggml_block_elements(type) * ggml_block_bytes(type),
                            std::move(produce)});
    }

    // Writes the file at `path`, which must not be any of `inputs` (OutputFile's rules).
    void write(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs = {}) const {
        OutputFile file(path, inputs);
        write_to(file);
        file.commit();
    }

private:
    // An array of numbers, each stored in the GgufValue member `field`.
    template <class T, class Field>
    void add_numbers(const std::string& key, GgufValue::Type type, const std::vector<T>& values, Field GgufValue::*field) {
        GgufValue v;
        v.type = GgufValue::Type::array;
        v.element_type = type;
        for (const T x : values) {
            GgufValue e;
            e.type = type;
            e.*field = static_cast<Field>(x);
            v.elements.push_back(std::move(e));
        }
        add(key, std::move(v));
    }
    struct Tensor {
        std::string name;
        GgmlType type;
        std::vector<std::uint64_t> ne;
        std::uint64_t bytes;
        std::function<std::vector<std::byte>()> produce;
    };

    static GgufValue scalar(GgufValue::Type t, std::uint64_t n) {
        GgufValue v;
        v.type = t;
        v.unsigned_value = n;
        return v;
    }

    // Refuses text GgufFile would refuse, naming where it is.
    static void check_utf8(std::string_view text, const char* what, const std::string& key) {
        if (const std::size_t at = utf8::first_invalid(text); at != text.size()) {
            throw ArgumentError("GgufWriter: " + std::string(what) + " of '" + key +
                                "' is not valid UTF-8 (at byte " + std::to_string(at) + ")");
        }
    }
    static void check_strings(const std::string& key, const GgufValue& v) {
        if (v.type == GgufValue::Type::string) check_utf8(v.text, "the string", key);
        for (const GgufValue& e : v.elements) check_strings(key, e);
    }

    class Out {
    public:
        explicit Out(OutputFile& file) : file_(file) {}
        void bytes(const void* p, std::size_t n) {
            file_.append(std::span(static_cast<const std::byte*>(p), n));
            written_ += n;
        }
        template <class T>
        void scalar(T v) { bytes(&v, sizeof v); }  // little-endian, as the host
        void string(const std::string& s) {
            scalar<std::uint64_t>(s.size());
            bytes(s.data(), s.size());
        }
        void pad() {
            static constexpr char zeros[alignment] = {};
            bytes(zeros, static_cast<std::size_t>((alignment - written_ % alignment) % alignment));
        }

    private:
        OutputFile& file_;
        std::uint64_t written_ = 0;
    };

    static void value(Out& out, const GgufValue& v) {
        using T = GgufValue::Type;
        switch (v.type) {
            case T::u8: out.scalar(static_cast<std::uint8_t>(v.unsigned_value)); break;
            case T::u16: out.scalar(static_cast<std::uint16_t>(v.unsigned_value)); break;
            case T::u32: out.scalar(static_cast<std::uint32_t>(v.unsigned_value)); break;
            case T::u64: out.scalar(v.unsigned_value); break;
            case T::i8: out.scalar(static_cast<std::int8_t>(v.signed_value)); break;
            case T::i16: out.scalar(static_cast<std::int16_t>(v.signed_value)); break;
            case T::i32: out.scalar(static_cast<std::int32_t>(v.signed_value)); break;
            case T::i64: out.scalar(v.signed_value); break;
            case T::f32: out.scalar(static_cast<float>(v.real_value)); break;
            case T::f64: out.scalar(v.real_value); break;
            case T::boolean: out.scalar(static_cast<std::uint8_t>(v.unsigned_value != 0)); break;
            case T::string: out.string(v.text); break;
            case T::array:
                out.scalar(static_cast<std::uint32_t>(v.element_type));
                out.scalar<std::uint64_t>(v.elements.size());
                for (const GgufValue& e : v.elements) value(out, e);
                break;
        }
    }

    void write_to(OutputFile& file) const {
        Out out(file);
        out.bytes("GGUF", 4);
        out.scalar<std::uint32_t>(3);
        out.scalar<std::uint64_t>(tensors_.size());
        out.scalar<std::uint64_t>(metadata_.size());
        for (const auto& [key, v] : metadata_) {
            out.string(key);
            out.scalar(static_cast<std::uint32_t>(v.type));
            value(out, v);
        }
        std::uint64_t offset = 0;
        for (const Tensor& t : tensors_) {
            out.string(t.name);
            out.scalar<std::uint32_t>(static_cast<std::uint32_t>(t.ne.size()));
            for (const std::uint64_t n : t.ne) out.scalar(n);
            out.scalar(static_cast<std::uint32_t>(t.type));
            out.scalar(offset);
            offset += (t.bytes + alignment - 1) / alignment * alignment;
        }
        out.pad();
        for (const Tensor& t : tensors_) {
            const std::vector<std::byte> data = t.produce();
            if (data.size() != t.bytes) {
                throw ArgumentError("GgufWriter: tensor '" + t.name + "' produced " + std::to_string(data.size()) +
                                    " bytes, its type and dimensions need " + std::to_string(t.bytes));
            }
            out.bytes(data.data(), data.size());
            out.pad();
        }
    }

    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::vector<Tensor> tensors_;
    std::set<std::string> keys_, names_;
};

}  // namespace tessera::io
