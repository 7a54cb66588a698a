#pragma once
// Hugging Face's tokenizer.json (as the `tokenizers` library writes it) for the byte-level BPE
// configurations today's models ship, as a BpeTokenizer:
//
//   model          BPE (vocab, merges as "a b" or ["a", "b"], ignore_merges; no dropout,
//                  no subword prefix or suffix)
//
// and SentencePiece-style BPE as transformers converts Llama 2 / Mistral / TinyLlama tokenizers:
// the Prepend("▁") + Replace(" ", "▁") normalizer, or a Metaspace pre-tokenizer (prepend_scheme
// always, first or never), with byte_fallback, unk_token and fuse_unk. For byte-level BPE:
//   pre_tokenizer  ByteLevel (GPT-2's pattern)                        -> gpt2
//                  Sequence [Split (Llama 3's pattern), ByteLevel]     -> llama3
//                  Sequence [Split (Qwen2's pattern), ByteLevel]       -> qwen2
//                  Sequence [Digits (individual), ByteLevel]           -> smollm
//   normalizer     none, or NFC (Qwen2's)
//   added_tokens   special, lstrip, rstrip, single_word, normalized
//   post_processor ByteLevel and/or TemplateProcessing that puts a BOS before the text
//
// with BOS and EOS named by tokenizer_config.json beside it (bos_token, eos_token, add_bos_token).
// Any other component or setting is a FormatError naming it: never a silently different
// tokenizer.
#include <cstdint>      // std::int64_t
#include <filesystem>   // std::filesystem::path
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include <tessera/core/error.hpp>         // FormatError
#include <tessera/io/json.hpp>            // parse_json, JsonValue
#include <tessera/io/read_only_file.hpp>  // read_whole_file
#include <tessera/text/added_tokens.hpp>  // AddedToken
#include <tessera/text/bpe_tokenizer.hpp>  // BpeTokenizer

namespace tessera {

namespace tokenizer_json {

inline constexpr std::string_view llama3_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view qwen2_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class Reader {
public:
    explicit Reader(std::string where) : where_(std::move(where)) {}

    [[noreturn]] void fail(const std::string& what) const { throw FormatError(where_ + ": " + what); }

    const io::JsonValue& member(const io::JsonValue& object, std::string_view key, const std::string& path) const {
        const io::JsonValue* v = object.is_object() ? object.find(key) : nullptr;
        if (!v) fail(path + " has no \"" + std::string(key) + "\"");
        return *v;
    }
    const std::string& string(const io::JsonValue& object, std::string_view key, const std::string& path) const {
        const io::JsonValue& v = member(object, key, path);
        if (!v.is_string()) fail(path + "." + std::string(key) + " is not a string");
        return v.as_string();
    }
    // A bool member, `fallback` when absent or null.
    bool flag(const io::JsonValue& object, std::string_view key, bool fallback, const std::string& path) const {
        const io::JsonValue* v = object.find(key);
        if (!v || v->is_null()) return fallback;
        if (!v->is_bool()) fail(path + "." + std::string(key) + " is not true or false");
        return v->as_bool();
    }
    // A member that must be absent, null, or `allowed` (a string setting with no effect).
    void require_unset(const io::JsonValue& object, std::string_view key, const std::string& path, std::string_view allowed = {}) const {
        const io::JsonValue* v = object.find(key);
        if (!v || v->is_null() || (v->is_string() && v->as_string() == allowed)) return;
        fail(path + "." + std::string(key) + " is " + v->describe() + ": not supported here");
    }

    // The pre-tokenizer the configuration amounts to.
    PreTokenizer pre_tokenizer(const io::JsonValue& pre) const {
        const std::string path = "pre_tokenizer";
        if (pre.is_null()) fail(path + " is null: only byte-level BPE is supported here");
        const std::string& type = string(pre, "type", path);
        if (type == "ByteLevel") {
            byte_level(pre, true, path);
            return PreTokenizer::gpt2;
        }
        if (type != "Sequence") fail(path + " is a " + type + ": not supported here (ByteLevel, Sequence of Split or Digits and ByteLevel are)");
        const io::JsonValue& steps = member(pre, "pretokenizers", path);
        if (!steps.is_array() || steps.elements().size() != 2) fail(path + ".pretokenizers: expected two steps, a Split or Digits and a ByteLevel");
        const io::JsonValue& first = steps.elements()[0];
        const io::JsonValue& second = steps.elements()[1];
        const std::string first_path = path + ".pretokenizers[0]", second_path = path + ".pretokenizers[1]";
        if (string(second, "type", second_path) != "ByteLevel") fail(second_path + " is a " + second.find("type")->as_string() + ", not a ByteLevel");
        const std::string& first_type = string(first, "type", first_path);
        if (first_type == "Digits") {
            if (!flag(first, "individual_digits", false, first_path)) fail(first_path + ".individual_digits is false: not supported here");
            byte_level(second, true, second_path);
            return PreTokenizer::smollm;
        }
        if (first_type != "Split") fail(first_path + " is a " + first_type + ": not supported here (Split, Digits are)");
        byte_level(second, false, second_path);
        const io::JsonValue& pattern = member(first, "pattern", first_path);
        const io::JsonValue* regex = pattern.is_object() ? pattern.find("Regex") : nullptr;
        if (!regex || !regex->is_string()) fail(first_path + ".pattern is not a Regex");
        if (const std::string& behavior = string(first, "behavior", first_path); behavior != "Isolated") {
            fail(first_path + ".behavior is " + behavior + ": not supported here (Isolated is)");
        }
        if (flag(first, "invert", false, first_path)) fail(first_path + ".invert is true: not supported here");
        if (regex->as_string() == llama3_pattern) return PreTokenizer::llama3;
        if (regex->as_string() == qwen2_pattern) return PreTokenizer::qwen2;
        fail(first_path + ".pattern.Regex " + regex->as_string() + " is not a pattern supported here (Llama 3's and Qwen2's are)");
    }

    // A ByteLevel step: no prefix space; its own pattern (GPT-2's) when `use_regex` is expected.
    void byte_level(const io::JsonValue& step, bool use_regex, const std::string& path) const {
        if (flag(step, "add_prefix_space", false, path)) fail(path + ".add_prefix_space is true: not supported here");
        if (flag(step, "use_regex", true, path) != use_regex) {
            fail(path + ".use_regex is " + (use_regex ? "false" : "true") + ": not supported here in this position");
        }
    }

private:
    std::string where_;
};

// The "type" of a component (a normalizer, a pre-tokenizer), empty where it has none.
inline std::string type_of(const io::JsonValue* v) {
    const io::JsonValue* t = v && v->is_object() ? v->find("type") : nullptr;
    return t && t->is_string() ? t->as_string() : std::string();
}

// Whether the file is SentencePiece-style BPE, and where it puts ▁ before the text: the Prepend
// normalizer (transformers' legacy Llama conversion: every part between added tokens), or the
// Metaspace pre-tokenizer (prepend_scheme always / first / never; not split into words).
inline std::optional<BpeTokenizer::SpacePrefix> metaspace(const Reader& r, const io::JsonValue* normalizer, const io::JsonValue* pre) {
    using Prefix = BpeTokenizer::SpacePrefix;
    const auto type_is = [](const io::JsonValue* v, std::string_view t) { return type_of(v) == t; };
    const auto is_null = [](const io::JsonValue* v) { return !v || v->is_null(); };
    const std::string mark = "\xE2\x96\x81";
    if (type_is(normalizer, "Sequence") && is_null(pre)) {
        const io::JsonValue& steps = r.member(*normalizer, "normalizers", "normalizer");
        bool prepend = false, replace = false;
        for (std::size_t i = 0; steps.is_array() && i < steps.elements().size(); ++i) {
            const io::JsonValue& step = steps.elements()[i];
            const std::string path = "normalizer.normalizers[" + std::to_string(i) + "]";
            if (type_is(&step, "Prepend") && r.string(step, "prepend", path) == mark) {
                prepend = true;
            } else if (type_is(&step, "Replace") && r.string(step, "content", path) == mark && r.member(step, "pattern", path).find("String") &&
                       r.member(step, "pattern", path).find("String")->is_string() &&
                       r.member(step, "pattern", path).find("String")->as_string() == " ") {
                replace = true;
            } else {
                r.fail(path + " " + step.describe() + " is not supported here (SentencePiece's Prepend and Replace of \" \" are)");
            }
        }
        if (!replace) r.fail("normalizer is a Sequence without the Replace of \" \" by \"" + mark + "\": not supported here");
        return prepend ? Prefix::every_part : Prefix::never;
    }
    if (!type_is(pre, "Metaspace")) return std::nullopt;
    if (!is_null(normalizer)) r.fail("a Metaspace pre-tokenizer with a normalizer: not supported here");
    if (r.string(*pre, "replacement", "pre_tokenizer") != mark) r.fail("pre_tokenizer.replacement is not \"" + mark + "\"");
    if (r.flag(*pre, "split", false, "pre_tokenizer")) r.fail("pre_tokenizer.split is true: not supported here");
    if (const io::JsonValue* scheme = pre->find("prepend_scheme"); scheme && scheme->is_string()) {
        if (scheme->as_string() == "always") return Prefix::metaspace_always;
        if (scheme->as_string() == "first") return Prefix::metaspace_first;
        if (scheme->as_string() == "never") return Prefix::never;
        r.fail("pre_tokenizer.prepend_scheme is " + scheme->as_string() + ": not supported here");
    }
    return r.flag(*pre, "add_prefix_space", true, "pre_tokenizer") ? Prefix::metaspace_always : Prefix::never;
}

// A special token named in tokenizer_config.json: a string or {"content": ...}.
inline std::optional<std::string> config_token(const io::JsonValue& config, std::string_view key) {
    const io::JsonValue* v = config.is_object() ? config.find(key) : nullptr;
    if (!v) return std::nullopt;
    if (v->is_string()) return v->as_string();
    if (v->is_object()) {
        if (const io::JsonValue* c = v->find("content"); c && c->is_string()) return c->as_string();
    }
    return std::nullopt;
}

}  // namespace tokenizer_json

// From tokenizer.json's text and tokenizer_config.json's (empty when there is none); the
// names are for error messages.
inline BpeTokenizer tokenizer_from_json(std::string_view json_text, const std::string& name, std::string_view config_text = {},
                                        const std::string& config_name = {}) {
    using tokenizer_json::Reader;
    const Reader r(name);
    const io::JsonValue json = io::parse_json(json_text, name);
    if (!json.is_object()) r.fail("expected a JSON object");

    const io::JsonValue& model = r.member(json, "model", "the file");
    if (const std::string& type = r.string(model, "type", "model"); type != "BPE") r.fail("model.type is " + type + ": only BPE is supported here");
    r.require_unset(model, "dropout", "model");
    r.require_unset(model, "continuing_subword_prefix", "model", "");
    r.require_unset(model, "end_of_word_suffix", "model", "");

    BpeTokenizer::Options options;
    options.ignore_merges = r.flag(model, "ignore_merges", false, "model");
    // transformers pads a model's embedding past its tokenizer's tokens (Qwen2/2.5/3: to 151,936);
    // those rows are no token of the file.
    options.model_rows_may_pad = true;
    const io::JsonValue* normalizer = json.find("normalizer");
    const io::JsonValue* pre = json.find("pre_tokenizer");
    using tokenizer_json::type_of;
    if (const auto scheme = tokenizer_json::metaspace(r, normalizer, pre)) {
        // SentencePiece-style BPE (Llama 2, Mistral, TinyLlama as transformers converts them).
        options.alphabet = BpeTokenizer::Alphabet::characters;
        options.space_prefix = *scheme;
        options.byte_fallback = r.flag(model, "byte_fallback", false, "model");
        options.fuse_unknown = r.flag(model, "fuse_unk", false, "model");
    } else {
        if (r.flag(model, "byte_fallback", false, "model")) r.fail("model.byte_fallback is true: byte-level BPE needs no byte fallback");
        if (normalizer && !normalizer->is_null()) {
            if (type_of(normalizer) != "NFC") {
                r.fail("normalizer " + (type_of(normalizer).empty() ? normalizer->describe() : "\"" + type_of(normalizer) + "\"") +
                       " is not supported here (NFC is, and SentencePiece's Prepend + Replace)");
            }
            options.nfc = true;
        }
        options.pre = r.pre_tokenizer(r.member(json, "pre_tokenizer", "the file"));
    }

    std::vector<std::pair<std::string, std::int64_t>> vocab;
    const io::JsonValue& vocab_json = r.member(model, "vocab", "model");
    if (!vocab_json.is_object()) r.fail("model.vocab is not an object of token -> id");
    vocab.reserve(vocab_json.members().size());
    for (const auto& [token, id] : vocab_json.members()) {
        if (!id.as_signed()) r.fail("model.vocab: the id of \"" + token + "\" is not an integer");
        vocab.emplace_back(token, *id.as_signed());
    }
    std::vector<std::pair<std::string, std::string>> merges;
    const io::JsonValue& merges_json = r.member(model, "merges", "model");
    if (!merges_json.is_array()) r.fail("model.merges is not an array");
    merges.reserve(merges_json.elements().size());
    for (std::size_t i = 0; i < merges_json.elements().size(); ++i) {
        const io::JsonValue& m = merges_json.elements()[i];
        const std::string where = "model.merges[" + std::to_string(i) + "]";
        if (m.is_string()) {
            const std::string& text = m.as_string();
            const std::size_t space = text.find(' ');
            if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) r.fail(where + " is not two tokens separated by one space");
            merges.emplace_back(text.substr(0, space), text.substr(space + 1));
        } else if (m.is_array() && m.elements().size() == 2 && m.elements()[0].is_string() && m.elements()[1].is_string()) {
            merges.emplace_back(m.elements()[0].as_string(), m.elements()[1].as_string());
        } else {
            r.fail(where + " is neither \"a b\" nor [\"a\", \"b\"]");
        }
    }

    std::vector<AddedToken> added;
    if (const io::JsonValue* list = json.find("added_tokens"); list && !list->is_null()) {
        if (!list->is_array()) r.fail("added_tokens is not an array");
        for (std::size_t i = 0; i < list->elements().size(); ++i) {
            const io::JsonValue& t = list->elements()[i];
            const std::string path = "added_tokens[" + std::to_string(i) + "]";
            const auto id = r.member(t, "id", path).as_signed();
            if (!id || *id < 0 || *id > std::numeric_limits<TokenId>::max()) r.fail(path + ".id is not a token id");
            const bool special = r.flag(t, "special", false, path);
            added.push_back({r.string(t, "content", path), static_cast<TokenId>(*id), special, r.flag(t, "lstrip", false, path),
                             r.flag(t, "rstrip", false, path), r.flag(t, "single_word", false, path),
                             r.flag(t, "normalized", !special, path)});
        }
    }

    // BOS before the text where the post-processor's template puts one.
    std::optional<std::string> template_bos;
    const auto template_processing = [&](const io::JsonValue& p, const std::string& path) {
        const io::JsonValue& single = r.member(p, "single", path);
        if (!single.is_array()) r.fail(path + ".single is not an array");
        for (std::size_t i = 0; i < single.elements().size(); ++i) {
            const io::JsonValue& piece = single.elements()[i];
            if (const io::JsonValue* special = piece.is_object() ? piece.find("SpecialToken") : nullptr) {
                if (i != 0) r.fail(path + ".single puts a special token after the text: not supported here");
                template_bos = r.string(*special, "id", path + ".single[0].SpecialToken");
            } else if (!piece.is_object() || !piece.find("Sequence")) {
                r.fail(path + ".single[" + std::to_string(i) + "] is neither a SpecialToken nor the Sequence");
            }
        }
    };
    if (const io::JsonValue* post = json.find("post_processor"); post && !post->is_null()) {
        const std::string& type = r.string(*post, "type", "post_processor");
        if (type == "TemplateProcessing") {
            template_processing(*post, "post_processor");
        } else if (type == "Sequence") {
            const io::JsonValue& steps = r.member(*post, "processors", "post_processor");
            for (std::size_t i = 0; steps.is_array() && i < steps.elements().size(); ++i) {
                const std::string path = "post_processor.processors[" + std::to_string(i) + "]";
                const std::string& t = r.string(steps.elements()[i], "type", path);
                if (t == "TemplateProcessing") template_processing(steps.elements()[i], path);
                else if (t != "ByteLevel") r.fail(path + " is a " + t + ": not supported here");
            }
        } else if (type != "ByteLevel") {
            r.fail("post_processor is a " + type + ": not supported here (ByteLevel, TemplateProcessing are)");
        }
    }

    const auto id_of = [&](const std::string& text, const std::string& what) -> TokenId {
        for (const AddedToken& t : added) {
            if (t.text == text) return t.id;
        }
        for (const auto& [token, id] : vocab) {
            if (token == text) return static_cast<TokenId>(id);
        }
        throw FormatError(what + " names \"" + text + "\", which is not in " + name);
    };
    if (const io::JsonValue* unk = model.find("unk_token"); unk && unk->is_string()) options.unknown = id_of(unk->as_string(), name + " model.unk_token");
    if (template_bos) {
        options.bos = id_of(*template_bos, name + " post_processor");
        options.add_bos = true;
    }
    if (!config_text.empty()) {
        const io::JsonValue config = io::parse_json(config_text, config_name);
        if (const auto bos = tokenizer_json::config_token(config, "bos_token")) options.bos = id_of(*bos, config_name + " bos_token");
        if (const auto eos = tokenizer_json::config_token(config, "eos_token")) options.eos = id_of(*eos, config_name + " eos_token");
        if (const io::JsonValue* add = config.find("add_bos_token"); add && add->is_bool()) {
            if (add->as_bool() && !options.bos) throw FormatError(config_name + ": add_bos_token is true but there is no bos_token");
            options.add_bos = add->as_bool() || template_bos;
        }
    }
    return BpeTokenizer(vocab, std::move(added), merges, options, name);
}

// A directory's tokenizer.json, with its tokenizer_config.json where there is one.
inline BpeTokenizer tokenizer_from_json_file(const std::filesystem::path& file) {
    constexpr std::size_t max_bytes = std::size_t{64} << 20;  // the largest vocabularies are ~20 MB
    const std::string text = io::read_whole_file(file, max_bytes);
    const std::filesystem::path config = file.parent_path() / "tokenizer_config.json";
    const std::string config_text = std::filesystem::exists(config) ? io::read_whole_file(config, max_bytes) : std::string();
    return tokenizer_from_json(text, file.string(), config_text, config.string());
}

}  // namespace tessera
