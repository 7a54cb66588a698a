#pragma once
// BpeTokenizer: byte-level BPE (GPT-2, Llama 3, Qwen2/2.5/3, SmolLM), identical to each model's
// own tokenizer on any valid UTF-8 text; a Tokenizer (text/tokenizer.hpp). Loaded from
// vocab.json and merges.txt (GPT-2's files), a GGUF file's tokenizer.ggml.* (models/
// open_tokenizer.hpp) or a tokenizer.json (text/tokenizer_json.hpp).
//
//   text --added tokens ("<|im_end|>") matched first (text/added_tokens.hpp)--> the text between
//        --the model's pre-tokenizer (text/pretokenizer.hpp)--> pieces
//        --bytes as byte-level symbols--> BPE merges by rank --> ids
//
// BPE merges the lowest-ranked adjacent pair first, leftmost first among equals
// (text/bpe_merges.hpp: O(n log n) time and 24 bytes per byte of a piece, so a
// million-character piece takes a moment rather than the reference algorithm's quadratic time;
// same result: a pair containing a token can only rank after the merge that made that token).
// With ignore_merges (Llama 3) a piece that is itself a token is that token, merges or not.
//
// Invalid UTF-8 in the text is an error naming its byte offset (TokenizerError); the ids of
// raw bytes are never guessed.
#include <algorithm>      // std::sort, std::find
#include <array>          // std::array
#include <cstdint>        // std::int32_t, std::uint64_t
#include <cstdio>         // std::snprintf
#include <deque>          // std::deque
#include <filesystem>     // std::filesystem::path
#include <functional>     // std::hash, std::equal_to
#include <optional>       // std::optional
#include <span>           // std::span
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <unordered_set>  // std::unordered_set
#include <utility>        // std::pair
#include <vector>         // std::vector

#include <tessera/core/error.hpp>         // FormatError, TokenizerError
#include <tessera/core/token_id.hpp>      // TokenId
#include <tessera/io/json.hpp>            // parse_json: vocab.json
#include <tessera/io/read_only_file.hpp>  // read_whole_file
#include <tessera/text/added_tokens.hpp>  // AddedTokens
#include <tessera/text/bpe_merges.hpp>    // BpeMerges
#include <tessera/text/byte_level.hpp>    // byte_to_char
#include <tessera/text/character_ids.hpp> // CharacterIds
#include <tessera/text/normalization.hpp> // nfc
#include <tessera/text/pretokenizer.hpp>  // pretokenize, PreTokenizer
#include <tessera/text/sentencepiece_pieces.hpp>  // space_mark, byte_of, with_spaces
#include <tessera/text/tokenizer.hpp>     // Tokenizer, SpecialTokens, TokenType
#include <tessera/text/utf8.hpp>          // append, decode_one, sanitize
#include <tessera/text/word_cache.hpp>    // WordCache

namespace tessera {

class BpeTokenizer final : public Tokenizer {
public:
    static constexpr std::string_view end_of_text = "<|endoftext|>";

    // What BPE's first symbols are: bytes as GPT-2's byte-level characters, or (tokenizer.json's
    // SentencePiece-style BPE: Llama 2, Mistral, TinyLlama) characters, spaces as ▁, a
    // character no token covers as its bytes' <0xNN> tokens (byte_fallback) or the unknown token.
    enum class Alphabet { byte_level, characters };
    // Where the characters alphabet puts a ▁ before the text: never; before every part between
    // added tokens (the Prepend normalizer); Metaspace's "always" (every part not starting with
    // a space) and "first" (the part at the text's start, unless it starts with a space).
    enum class SpacePrefix { never, every_part, metaspace_always, metaspace_first };

    struct Options {
        Alphabet alphabet = Alphabet::byte_level;
        SpacePrefix space_prefix = SpacePrefix::never;  // characters only
        bool byte_fallback = false;                     // characters only
        std::optional<TokenId> unknown;                 // characters only
        bool fuse_unknown = false;                      // consecutive unknown characters: one unknown token
        PreTokenizer pre = PreTokenizer::gpt2;          // byte_level only
        bool ignore_merges = false;  // a piece that is a token is that token (Llama 3)
        bool nfc = false;            // the text between added tokens normalized to NFC first (tokenizer.json's NFC)
        std::optional<TokenId> bos, eos;
        bool add_bos = false;  // prompts start with bos
        bool model_rows_may_pad = false;  // a tokenizer.json's: the model may have more rows (Qwen's padding)
    };

    // Throws FormatError naming the file (and line or token) when a file is missing or corrupt.
    static BpeTokenizer from_files(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt) {
        std::string vocab = read_file(vocab_json);  // in this order, so a missing vocab is reported first
        std::string merges = read_file(merges_txt);
        return BpeTokenizer(vocab, vocab_json.string(), merges, merges_txt.string());
    }
    // A Hugging Face model directory: vocab.json and merges.txt inside it.
    static BpeTokenizer from_directory(const std::filesystem::path& dir) {
        return from_files(dir / "vocab.json", dir / "merges.txt");
    }

    // GPT-2's files' contents (its pre-tokenizer; "<|endoftext|>", where the vocabulary has
    // it, the one control token and EOS); the names are for error messages.
    BpeTokenizer(std::string_view vocab_json, const std::string& vocab_name, std::string_view merges_txt,
                 const std::string& merges_name) {
        const io::JsonValue json = io::parse_json(vocab_json, vocab_name);
        if (!json.is_object() || json.members().empty()) throw FormatError(vocab_name + ": expected a JSON object of token -> id");
        std::vector<VocabEntry> vocab;
        std::vector<AddedToken> added;
        vocab.reserve(json.members().size());
        for (const auto& [token, id_json] : json.members()) {
            if (!id_json.as_signed()) throw FormatError(vocab_name + ": the id of token \"" + token + "\" is not an integer");
            if (token == end_of_text) {
                added.push_back({token, static_cast<TokenId>(*id_json.as_signed()), true});
                options_.eos = added.back().id;
            } else {
                vocab.push_back({token, *id_json.as_signed()});
            }
        }
        set_vocabulary(vocab, added, vocab_name);
        load_merges(merges_txt, merges_name);
        finish(vocab_name);
    }

    // From a token list (the id is the index) with each token's type (TokenType's numbers, or
    // none: "<|endoftext|>" control, the rest normal) and merges ("a b", highest priority first)
    // in byte-level text, as a GGUF file's tokenizer.ggml.tokens, token_type and merges hold
    // them; `source` names them in errors.
    BpeTokenizer(std::span<const std::string> tokens, std::span<const std::int32_t> types, std::span<const std::string> merges,
                 const Options& options, const std::string& source)
        : options_(options) {
        if (!types.empty() && types.size() != tokens.size()) {
            throw FormatError(source + ": " + std::to_string(tokens.size()) + " tokens but " + std::to_string(types.size()) + " token types");
        }
        std::vector<VocabEntry> vocab;
        std::vector<AddedToken> added;
        vocab.reserve(tokens.size());
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const auto id = static_cast<TokenId>(i);
            const std::int32_t type = types.empty() ? (tokens[i] == end_of_text ? 3 : 1) : types[i];
            switch (type) {
                case 1: vocab.push_back({tokens[i], id}); break;
                case 3: case 4: added.push_back({tokens[i], id, type == 3}); break;
                case 2: case 5: inert_.push_back({id, static_cast<TokenType>(type), tokens[i]}); break;
                default:
                    throw FormatError(source + " tokenizer.ggml.token_type: token " + std::to_string(i) + " has type " + std::to_string(type) +
                                      (type == 6 ? " (a byte token: SentencePiece's, not byte-level BPE's)" : " (1 to 5 are known)"));
            }
        }
        set_vocabulary(vocab, added, source + " tokenizer.ggml.tokens");
        const std::string where = source + " tokenizer.ggml.merges";
        for (std::size_t i = 0; i < merges.size(); ++i) add_merge(merges[i], where + " entry " + std::to_string(i));
        if (merges_.empty()) throw FormatError(where + ": no merges");
        finish(source);
    }

    // The general form: the BPE vocabulary in byte-level text with ids, the added tokens, the
    // merges (left, right) highest priority first; together the ids must be 0 .. n-1 each once.
    BpeTokenizer(std::span<const std::pair<std::string, std::int64_t>> vocab, std::vector<AddedToken> added,
                 std::span<const std::pair<std::string, std::string>> merges, const Options& options, const std::string& source)
        : options_(options) {
        std::vector<VocabEntry> entries;
        entries.reserve(vocab.size());
        std::unordered_set<std::int64_t> added_ids;
        for (const AddedToken& t : added) added_ids.insert(t.id);
        for (const auto& entry : vocab) {
            if (!added_ids.contains(entry.second)) entries.push_back({entry.first, entry.second});  // else an added token listed in the vocabulary too
        }
        set_vocabulary(entries, added, source + " vocabulary");
        const std::string where = source + " merges";
        for (std::size_t i = 0; i < merges.size(); ++i) {
            add_merge(merges[i].first, merges[i].second, where + " entry " + std::to_string(i));
        }
        finish(source);
    }

    std::size_t vocab_size() const noexcept override { return bytes_.size(); }
    std::optional<TokenId> eos_id() const override { return options_.eos; }
    std::optional<TokenId> bos_id() const { return options_.bos; }
    std::optional<TokenId> prompt_start() const override { return options_.add_bos ? options_.bos : std::nullopt; }
    std::vector<TokenId> stop_ids() const override { return stop_ids_; }
    bool model_rows_may_pad() const noexcept override { return options_.model_rows_may_pad; }
    // The ▁ put before the text is not part of it (the decoder's Strip).
    bool strips_leading_space() const noexcept override {
        return options_.alphabet == Alphabet::characters && options_.space_prefix != SpacePrefix::never;
    }
    const Options& options() const noexcept { return options_; }
    const AddedTokens& added_tokens() const noexcept { return added_; }

    // The id of a BPE token given in byte-level text ("Ġthe") or of an added token's text.
    std::optional<TokenId> token_id(std::string_view token) const {
        for (const AddedToken& t : added_.tokens()) {
            if (t.text == token) return t.id;
        }
        const auto bytes = key_of(token);
        if (!bytes) return std::nullopt;
        const auto it = ids_.find(*bytes);
        return it == ids_.end() ? std::nullopt : std::optional<TokenId>(it->second);
    }

    // (encode, decode, check_vocab_size: Tokenizer's.)

    // The raw bytes of one token; throws TokenizerError for an id outside the vocabulary.
    const std::string& token_bytes(TokenId id) const override { return bytes_[checked(id)]; }

    TokenType token_type(TokenId id) const { return types_[checked(id)]; }

    // A token as vocab.json and GGUF files write it: its bytes as byte-level characters ("Ġthe"),
    // an added token as its own text.
    std::string token_text(TokenId id) const {
        const std::size_t index = checked(id);
        if (types_[index] != TokenType::normal) {
            for (const Inert& t : inert_) {
                if (t.id == id) return t.text;
            }
            return bytes_[index];
        }
        if (options_.alphabet == Alphabet::characters) return texts_[index];
        std::string text;
        for (const char b : bytes_[index]) utf8::append(text, byte_level::byte_to_char[static_cast<unsigned char>(b)]);
        return text;
    }

    // For each token, the rank of the first merge that makes it; -1 where none does.
    std::vector<std::int32_t> first_merge_ranks() const {
        std::vector<std::int32_t> ranks(bytes_.size(), -1);
        merges_.for_each([&](TokenId, TokenId, const BpeMerges::Merge& merge) {
            std::int32_t& r = ranks[static_cast<std::size_t>(merge.result)];
            if (r < 0 || merge.rank < r) r = merge.rank;
        });
        return ranks;
    }

    // The merges as merges.txt writes them ("Ġ t"), highest priority first.
    std::vector<std::string> merge_texts() const {
        std::vector<std::pair<std::int32_t, std::string>> ranked;
        ranked.reserve(merges_.size());
        merges_.for_each([&](TokenId left, TokenId right, const BpeMerges::Merge& merge) {
            ranked.emplace_back(merge.rank, token_text(left) + " " + token_text(right));
        });
        std::sort(ranked.begin(), ranked.end());
        std::vector<std::string> out;
        out.reserve(ranked.size());
        for (auto& [rank, text] : ranked) out.push_back(std::move(text));
        return out;
    }

private:
    struct VocabEntry {
        std::string_view token;  // byte-level text
        std::int64_t id;
    };
    struct Inert {  // an unknown or unused token: never encoded to, decoded to nothing
        TokenId id;
        TokenType type;
        std::string text;
    };
    struct Hash {  // lookups by string_view without building a string
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };

    std::size_t checked(TokenId id) const {
        if (id < 0 || static_cast<std::size_t>(id) >= bytes_.size()) {
            throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(bytes_.size()) +
                                 " tokens)");
        }
        return static_cast<std::size_t>(id);
    }

    std::vector<TokenId> encode_ids(std::string_view text, SpecialTokens special) const override {
        if (const std::size_t bad = utf8::first_invalid(text); bad != text.size()) {
            throw TokenizerError("invalid UTF-8 at byte offset " + std::to_string(bad) + " of the text");
        }
        std::vector<TokenId> ids;
        ids.reserve(text.size() + 1);  // at most a token per byte: never regrown (untouched pages cost nothing)
        std::deque<std::string> normalized;  // outlives the cache, whose keys may point into it
        WordCache cache;
        const auto token = [&](const AddedToken& t) { ids.push_back(t.id); };
        if (options_.alphabet == Alphabet::characters) {
            added_.split(text, special, [&](std::string_view part) { encode_characters(part, part.data() == text.data(), ids); }, token);
        } else if (!options_.nfc) {
            added_.split(text, special, [&](std::string_view part) { encode_text(part, ids, cache); }, token);
        } else {  // as tokenizers does around a normalizer: tokens in the text, NFC between, tokens in that
            added_.split(
                text, special,
                [&](std::string_view part) {
                    if (!unicode::is_nfc_quick(part)) part = normalized.emplace_back(unicode::nfc(part));
                    added_.split(part, special, [&](std::string_view rest) { encode_text(rest, ids, cache); }, token,
                                 AddedTokenPass::normalized);
                },
                token, AddedTokenPass::as_given);
        }
        return ids;
    }

    // GPT-2's vocab.json is 1 MB and merges.txt 0.5 MB; vocabularies of 250,000 tokens stay
    // under 20 MB. Anything larger (or a device such as /dev/zero) is not a tokenizer file.
    static constexpr std::size_t max_file_bytes = std::size_t{64} << 20;
    static std::string read_file(const std::filesystem::path& path) { return io::read_whole_file(path, max_file_bytes); }

    // The bytes a byte-level text stands for; nullopt when a character is outside the alphabet.
    static std::optional<std::string> from_byte_level(std::string_view token) {
        static const std::unordered_map<char32_t, char> char_to_byte = [] {
            std::unordered_map<char32_t, char> m;
            for (unsigned b = 0; b < 256; ++b) m[byte_level::byte_to_char[b]] = static_cast<char>(b);
            return m;
        }();
        std::string bytes;
        for (std::size_t i = 0; i < token.size();) {
            const utf8::Decoded d = utf8::decode_one(token, i);
            const auto it = d.status == utf8::Status::ok ? char_to_byte.find(d.code_point) : char_to_byte.end();
            if (it == char_to_byte.end()) return std::nullopt;
            bytes += it->second;
            i += d.length;
        }
        return bytes;
    }

    // The key a token's text has in ids_: its bytes (byte-level), or the text itself (characters).
    std::optional<std::string> key_of(std::string_view token) const {
        if (options_.alphabet == Alphabet::byte_level) return from_byte_level(token);
        if (utf8::first_invalid(token) != token.size()) return std::nullopt;
        return std::string(token);
    }
    static constexpr std::string_view space_mark = sentencepiece::space_mark;
    // What a characters-alphabet token decodes to: ▁ as a space, <0xNN> as its byte.
    static std::string surface(std::string_view token) {
        if (const auto b = sentencepiece::byte_of(token)) return std::string(1, static_cast<char>(*b));
        return sentencepiece::with_spaces(token);
    }

    // BPE tokens in byte-level text with their ids, the added tokens and the inert ones: together
    // each id of 0 .. n-1 once.
    void set_vocabulary(std::span<const VocabEntry> vocab, std::vector<AddedToken> added, const std::string& name) {
        const std::size_t n = vocab.size() + added.size() + inert_.size();
        if (n == 0) throw FormatError(name + ": no tokens");
        bytes_.assign(n, {});
        types_.assign(n, TokenType::normal);
        std::vector<bool> seen(n, false);
        const auto claim = [&](std::int64_t id, std::string_view token) {
            if (id < 0 || static_cast<std::size_t>(id) >= n || seen[static_cast<std::size_t>(id)]) {
                throw FormatError(name + ": token \"" + std::string(token) + "\" has id " + std::to_string(id) +
                                  ", but ids must be distinct and below the vocabulary size " + std::to_string(n));
            }
            seen[static_cast<std::size_t>(id)] = true;
            return static_cast<std::size_t>(id);
        };
        const bool characters = options_.alphabet == Alphabet::characters;
        if (characters) texts_.assign(n, {});
        for (const auto& [token, id] : vocab) {
            const std::size_t index = claim(id, token);
            const auto key = key_of(token);
            if (!key) {
                throw FormatError(name + ": token \"" + std::string(token) + "\" (id " + std::to_string(id) +
                                  (characters ? ") is not valid UTF-8" : ") has a character outside GPT-2's byte-level alphabet"));
            }
            if (!ids_.emplace(*key, static_cast<TokenId>(id)).second) throw FormatError(name + ": token \"" + std::string(token) + "\" appears twice");
            bytes_[index] = characters ? surface(token) : *key;
            if (characters) texts_[index] = token;
            if (characters && sentencepiece::joins_words(token)) word_by_word_ = false;
        }
        for (const AddedToken& t : added) {
            const std::size_t index = claim(t.id, t.text);
            bytes_[index] = t.text;
            types_[index] = t.special ? TokenType::control : TokenType::user_defined;
        }
        for (const Inert& t : inert_) types_[claim(t.id, t.text)] = t.type;  // bytes: none
        added_ = AddedTokens(std::move(added));
        if (characters) {  // byte fallback's <0xNN> tokens, and the ASCII characters' tokens
            for (const auto& [text, id] : ids_) {
                if (const utf8::Decoded c = utf8::decode_one(text, 0); c.length == text.size()) char_ids_.add(c.code_point, id);
            }
            std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
            for (unsigned b = 0; b < 256; ++b) {
                char hex[7];
                std::snprintf(hex, sizeof hex, "<0x%02X>", b);
                if (const auto it = ids_.find(std::string_view(hex)); it != ids_.end()) byte_ids_[b] = it->second;
                else if (options_.byte_fallback) throw FormatError(name + ": byte_fallback is set but the token " + hex + " is missing");
            }
            if (options_.unknown && (*options_.unknown < 0 || static_cast<std::size_t>(*options_.unknown) >= n)) {
                throw FormatError(name + ": the unknown token's id " + std::to_string(*options_.unknown) + " is outside the vocabulary");
            }
            return;
        }
        for (unsigned b = 0; b < 256; ++b) {
            const auto it = ids_.find(std::string(1, static_cast<char>(b)));
            if (it == ids_.end()) {
                std::string ch;
                utf8::append(ch, byte_level::byte_to_char[b]);
                throw FormatError(name + ": the byte-level token for byte " + std::to_string(b) + " (\"" + ch + "\") is missing");
            }
            byte_ids_[b] = it->second;
        }
    }

    void load_merges(std::string_view text, const std::string& name) {
        std::size_t line_no = 0;
        while (!text.empty()) {
            const std::size_t eol = text.find('\n');
            std::string_view line = text.substr(0, eol);
            text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
            ++line_no;
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
            add_merge(line, name + " line " + std::to_string(line_no));
        }
        if (merges_.empty()) throw FormatError(name + ": no merges");
    }

    // One merge "a b" (two tokens separated by one space), ranked after those before it.
    void add_merge(std::string_view line, const std::string& where) {
        const std::size_t space = line.find(' ');
        if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos) {
            throw FormatError(where + ": expected two tokens separated by one space");
        }
        add_merge(line.substr(0, space), line.substr(space + 1), where);
    }
    void add_merge(std::string_view left_text, std::string_view right_text, const std::string& where) {
        const auto left = key_of(left_text), right = key_of(right_text);
        const auto a = left ? ids_.find(*left) : ids_.end(), b = right ? ids_.find(*right) : ids_.end();
        const auto merged = a != ids_.end() && b != ids_.end() ? ids_.find(*left + *right) : ids_.end();
        if (merged == ids_.end()) {
            throw FormatError(where + ": \"" + std::string(left_text) + " " + std::string(right_text) +
                              "\" uses or makes a token that the vocabulary does not have");
        }
        // A pair listed twice keeps its first (highest) rank, as tokenizers does.
        merges_.add(a->second, b->second, static_cast<std::int32_t>(merges_.size()), merged->second);
    }

    // Checks the special ids and gathers the ids that end generation: EOS and the end-of-turn
    // tokens a vocabulary has (tokens named as llama.cpp names them, "<|eot_id|>", "<|im_end|>"...).
    void finish(const std::string& source) {
        for (const auto& [name, id] : {std::pair{"BOS", options_.bos}, {"EOS", options_.eos}}) {
            if (id && (*id < 0 || static_cast<std::size_t>(*id) >= bytes_.size())) {
                throw FormatError(source + ": the " + std::string(name) + " id " + std::to_string(*id) + " is outside the vocabulary of " +
                                  std::to_string(bytes_.size()) + " tokens, so generation could never stop on it");
            }
        }
        if (options_.eos && types_[static_cast<std::size_t>(*options_.eos)] == TokenType::normal) {
            throw FormatError(source + ": the EOS id " + std::to_string(*options_.eos) + " is the ordinary token \"" +
                              token_text(*options_.eos) + "\", which text encodes to: generation would stop inside text");
        }
        if (options_.add_bos && !options_.bos) throw FormatError(source + ": prompts should start with BOS, but there is no BOS id");
        if (options_.alphabet == Alphabet::characters) {
            std::vector<bool> fallback(bytes_.size(), false);  // <0xNN> tokens and the unknown token
            for (const TokenId id : byte_ids_)
                if (id >= 0) fallback[static_cast<std::size_t>(id)] = true;
            if (options_.unknown) fallback[static_cast<std::size_t>(*options_.unknown)] = true;
            fallback_merges_ = false;
            merges_.for_each([&](TokenId left, TokenId right, const BpeMerges::Merge&) {
                fallback_merges_ = fallback_merges_ || fallback[static_cast<std::size_t>(left)] || fallback[static_cast<std::size_t>(right)];
            });
        }
        if (options_.eos) stop_ids_.push_back(*options_.eos);
        for (const AddedToken& t : added_.tokens()) {
            if (t.special && is_end_of_turn_text(t.text) && std::find(stop_ids_.begin(), stop_ids_.end(), t.id) == stop_ids_.end()) {
                stop_ids_.push_back(t.id);
            }
        }
    }

public:
    // Adds an id that ends generation (a file's end-of-turn or end-of-message id).
    void add_stop_id(TokenId id, const std::string& source) {
        const std::size_t index = checked(id);
        if (types_[index] == TokenType::normal) {
            throw FormatError(source + ": the stop id " + std::to_string(id) + " is the ordinary token \"" + token_text(id) + "\"");
        }
        if (std::find(stop_ids_.begin(), stop_ids_.end(), id) == stop_ids_.end()) stop_ids_.push_back(id);
    }

private:
    void encode_text(std::string_view text, std::vector<TokenId>& ids, WordCache& cache) const {
        const auto encode_piece = [&](std::string_view piece, std::vector<TokenId>& out) {
            if (const auto whole = options_.ignore_merges ? ids_.find(piece) : ids_.end(); whole != ids_.end()) {
                out.push_back(whole->second);
            } else {
                merge(piece, out);
            }
        };
        pretokenize_valid(options_.pre, text, [&](std::string_view piece) { cache.append(piece, ids, encode_piece); });  // checked in encode_ids
    }

    // The characters alphabet: ▁ for spaces (and before the text where the options say), then
    // BPE over the whole part from its characters (no pre-tokenizer, as the files configure it).
    void encode_characters(std::string_view part, bool at_start, std::vector<TokenId>& out) const {
        std::string s;
        s.reserve(sentencepiece::marked_size(part) + space_mark.size());
        const bool starts_with_space = part.starts_with(' ') || part.starts_with(space_mark);  // already ▁ once replaced
        switch (options_.space_prefix) {
            case SpacePrefix::never: break;
            case SpacePrefix::every_part: s += space_mark; break;
            case SpacePrefix::metaspace_always:
                if (!starts_with_space) s += space_mark;
                break;
            case SpacePrefix::metaspace_first:
                if (!starts_with_space && at_start) s += space_mark;
                break;
        }
        sentencepiece::append_marked(s, part);
        if (options_.ignore_merges) {
            if (const auto whole = ids_.find(s); whole != ids_.end()) return out.push_back(whole->second);
        }
        if (!word_by_word_) return encode_characters_word(s, out);
        sentencepiece::encode_word_by_word(s, out, [&](std::string_view word, std::vector<TokenId>& ids) { encode_characters_word(word, ids); });
    }
    // The characters alphabet's BPE over one ▁-marked word (or a whole part).
    void encode_characters_word(std::string_view s, std::vector<TokenId>& out) const {
        thread_local std::vector<TokenId> symbols;  // no allocation per word
        symbols.clear();
        bool last_unknown = false;
        for (std::size_t at = 0; at < s.size();) {
            const utf8::Decoded c = utf8::decode_one(s, at);  // valid: checked before
            const std::string_view ch = s.substr(at, c.length);
            at += c.length;
            if (const std::optional<TokenId> id = char_ids_.find(c.code_point)) {
                symbols.push_back(*id);
                last_unknown = false;
                continue;
            }
            // A character that is no token: its bytes or the unknown token, which end the run
            // of symbols before them where no merge takes them (most files).
            if (!fallback_merges_) merge_run(symbols, out);
            std::vector<TokenId>& to = fallback_merges_ ? symbols : out;
            if (options_.byte_fallback) {
                for (const char b : ch) to.push_back(byte_ids_[static_cast<unsigned char>(b)]);
                last_unknown = false;
                continue;
            }
            if (!options_.unknown) {
                throw TokenizerError("the text holds '" + std::string(ch) + "', which the vocabulary has neither as a token nor as an unknown token");
            }
            if (!(options_.fuse_unknown && last_unknown)) to.push_back(*options_.unknown);
            last_unknown = true;
        }
        merge_run(symbols, out);
    }
    void merge_run(std::vector<TokenId>& symbols, std::vector<TokenId>& out) const {
        merges_.apply(symbols.size(), [&](std::size_t i) { return symbols[i]; }, out);
        symbols.clear();
    }

    // Appends the BPE tokens of one piece (text/bpe_merges.hpp: the merge loop).
    void merge(std::string_view piece, std::vector<TokenId>& out) const {
        merges_.apply(piece.size(), [&](std::size_t i) { return byte_ids_[static_cast<unsigned char>(piece[i])]; }, out);
    }



    Options options_;
    std::vector<std::string> bytes_;  // id -> raw bytes (an added token's text)
    std::vector<TokenType> types_;
    std::vector<std::string> texts_;  // the characters alphabet: each token as written ("▁the")
    bool word_by_word_ = true;        // the characters alphabet: no token joins words (sentencepiece::joins_words)
    CharacterIds char_ids_;           // the characters alphabet: each single-character token
    bool fallback_merges_ = true;     // the characters alphabet: some merge takes a <0xNN> or the unknown token
    std::vector<Inert> inert_;
    AddedTokens added_;
    std::vector<TokenId> stop_ids_;
    std::unordered_map<std::string, TokenId, Hash, std::equal_to<>> ids_;  // a BPE token's raw bytes -> id
    BpeMerges merges_;
    TokenId byte_ids_[256] = {};
};

}  // namespace tessera
