#pragma once
// SentencePiece's own model file (tokenizer.model: a ModelProto in protobuf's wire format, as
// Llama 2, Mistral and TinyLlama ship it) as a SentencePieceTokenizer. Read with a few lines of
// wire-format decoding rather than libprotobuf: the file needs four messages' fields, and a
// reader here checks every length against the file instead of trusting it.
//
//   ModelProto      1 pieces (repeated), 2 trainer_spec, 3 normalizer_spec
//   SentencePiece   1 piece, 2 score (float), 3 type (1 normal ... 6 byte: TokenType's numbers)
//   TrainerSpec     3 model_type (2: BPE), 24 treat_whitespace_as_suffix, 35 byte_fallback,
//                   40 unk_id, 41 bos_id, 42 eos_id
//   NormalizerSpec  1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
//                   5 escape_whitespaces
//
// The settings SentencePieceTokenizer implements are Llama's: BPE, the identity normalizer, no
// whitespace folding, spaces escaped as ▁. Any other (a Unigram model, NFKC normalization...) is
// a FormatError naming the field and its value.
#include <cstdint>      // std::uint64_t, std::uint32_t
#include <cstring>      // std::memcpy
#include <filesystem>   // std::filesystem::path
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/error.hpp>                    // FormatError
#include <tessera/io/read_only_file.hpp>             // read_whole_file
#include <tessera/text/sentencepiece_tokenizer.hpp>  // SentencePieceTokenizer

namespace tessera {

namespace protobuf {

// One field of a message: its number, wire type, and value (varint, fixed32 or bytes).
struct Field {
    std::uint32_t number = 0;
    std::uint32_t wire_type = 0;
    std::uint64_t varint = 0;
    std::uint32_t fixed32 = 0;
    std::string_view bytes;
};

class Reader {
public:
    Reader(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}
    // The next field, or nullopt at the end of the message.
    std::optional<Field> next() {
        if (at_ == data_.size()) return std::nullopt;
        Field f;
        const std::uint64_t key = varint();
        f.number = static_cast<std::uint32_t>(key >> 3);
        f.wire_type = static_cast<std::uint32_t>(key & 7);
        switch (f.wire_type) {
            case 0: f.varint = varint(); break;
            case 1: skip(8); break;
            case 2: {
                const std::uint64_t n = varint();
                if (n > data_.size() - at_) fail("a field of " + std::to_string(n) + " bytes runs past the end");
                f.bytes = data_.substr(at_, static_cast<std::size_t>(n));
                at_ += static_cast<std::size_t>(n);
                break;
            }
            case 5:
                if (data_.size() - at_ < 4) fail("a 4-byte field runs past the end");
                std::memcpy(&f.fixed32, data_.data() + at_, 4);  // little-endian, as the host
                at_ += 4;
                break;
            default: fail("wire type " + std::to_string(f.wire_type) + " of field " + std::to_string(f.number) + " is not protobuf's");
        }
        return f;
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw FormatError(where_ + ": " + what + " (at byte " + std::to_string(at_) + "): not a SentencePiece model");
    }

private:
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at_ == data_.size()) fail("a number runs past the end");
            const auto b = static_cast<unsigned char>(data_[at_++]);
            v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        fail("a number longer than 10 bytes");
    }
    void skip(std::size_t n) {
        if (data_.size() - at_ < n) fail("a field runs past the end");
        at_ += n;
    }
    std::string_view data_;
    std::size_t at_ = 0;
    std::string where_;
};

}  // namespace protobuf

// From a tokenizer.model's bytes; `name` is for error messages. `add_bos`: whether prompts start
// with BOS (tokenizer_config.json's add_bos_token; the Llama tokenizer's default true).
inline SentencePieceTokenizer sentencepiece_from_model(std::string_view bytes, const std::string& name, bool add_bos = true) {
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<std::int32_t> types;
    std::int64_t model_type = 1, unk_id = 0, bos_id = 1, eos_id = 2;  // the proto's defaults
    bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true, suffix = false;
    std::string normalizer = "nmt_nfkc";
    std::string_view charsmap;
    protobuf::Reader model(bytes, name);
    const auto as_int = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };  // int32 negatives are 10-byte varints
    while (const auto f = model.next()) {
        if (f->number == 1 && f->wire_type == 2) {
            protobuf::Reader piece(f->bytes, name + " piece " + std::to_string(pieces.size()));
            std::string text;
            float score = 0;
            std::int32_t type = 1;
            while (const auto g = piece.next()) {
                if (g->number == 1 && g->wire_type == 2) text = g->bytes;
                else if (g->number == 2 && g->wire_type == 5) std::memcpy(&score, &g->fixed32, 4);
                else if (g->number == 3 && g->wire_type == 0) type = static_cast<std::int32_t>(g->varint);
            }
            pieces.push_back(std::move(text));
            scores.push_back(score);
            types.push_back(type);
        } else if (f->number == 2 && f->wire_type == 2) {
            protobuf::Reader trainer(f->bytes, name + " trainer_spec");
            while (const auto g = trainer.next()) {
                if (g->wire_type != 0) continue;
                switch (g->number) {
                    case 3: model_type = as_int(g->varint); break;
                    case 24: suffix = g->varint != 0; break;
                    case 40: unk_id = as_int(g->varint); break;
                    case 41: bos_id = as_int(g->varint); break;
                    case 42: eos_id = as_int(g->varint); break;
                    default: break;
                }
            }
        } else if (f->number == 3 && f->wire_type == 2) {
            protobuf::Reader spec(f->bytes, name + " normalizer_spec");
            while (const auto g = spec.next()) {
                if (g->number == 1 && g->wire_type == 2) normalizer = g->bytes;
                else if (g->number == 2 && g->wire_type == 2) charsmap = g->bytes;
                else if (g->number == 3 && g->wire_type == 0) add_dummy_prefix = g->varint != 0;
                else if (g->number == 4 && g->wire_type == 0) remove_extra_whitespaces = g->varint != 0;
                else if (g->number == 5 && g->wire_type == 0) escape_whitespaces = g->varint != 0;
            }
        }
    }
    const auto refuse = [&](const std::string& what) { throw FormatError(name + ": " + what + ": not supported here (Llama's settings are)"); };
    if (pieces.empty()) refuse("no pieces");
    if (model_type != 2) refuse("trainer_spec.model_type is " + std::to_string(model_type) + (model_type == 1 ? " (Unigram)" : "") + ", not BPE (2)");
    if (normalizer != "identity" || !charsmap.empty()) refuse("normalizer_spec.name is '" + normalizer + "'");
    if (remove_extra_whitespaces) refuse("normalizer_spec.remove_extra_whitespaces is true");
    if (!escape_whitespaces) refuse("normalizer_spec.escape_whitespaces is false");
    if (suffix) refuse("trainer_spec.treat_whitespace_as_suffix is true");
    SentencePieceTokenizer::Options options;
    const auto id = [&](std::int64_t v) { return v < 0 ? std::nullopt : std::optional<TokenId>(static_cast<TokenId>(v)); };
    options.unknown = id(unk_id);
    options.bos = id(bos_id);
    options.eos = id(eos_id);
    options.add_space_prefix = add_dummy_prefix;
    options.add_bos = add_bos && options.bos;
    return SentencePieceTokenizer(pieces, scores, types, options, name);
}

// A directory's tokenizer.model, with add_bos_token from tokenizer_config.json beside it.
inline SentencePieceTokenizer sentencepiece_from_model_file(const std::filesystem::path& file) {
    constexpr std::size_t max_bytes = std::size_t{64} << 20;
    const std::string bytes = io::read_whole_file(file, max_bytes);
    bool add_bos = true;
    if (const std::filesystem::path config = file.parent_path() / "tokenizer_config.json"; std::filesystem::exists(config)) {
        const io::JsonValue json = io::parse_json(io::read_whole_file(config, max_bytes), config.string());
        if (const io::JsonValue* v = json.is_object() ? json.find("add_bos_token") : nullptr; v && v->is_bool()) add_bos = v->as_bool();
    }
    return sentencepiece_from_model(bytes, file.string(), add_bos);
}

}  // namespace tessera
