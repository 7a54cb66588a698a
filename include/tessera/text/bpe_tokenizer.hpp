#pragma once
// BpeTokenizer: GPT-2's byte-level BPE, loaded from Hugging Face's vocab.json and merges.txt,
// identical to OpenAI's encoder on any valid UTF-8 text; a Tokenizer (text/tokenizer.hpp).
//
//   text --pretokenize--> pieces --bytes as byte-level symbols--> BPE merges by rank --> ids
//
// BPE merges the lowest-ranked adjacent pair first, leftmost first among equals: an indexed
// heap of candidate pairs over a linked list of symbols, O(n log n) time and 24 bytes per byte
// of a piece, so a million-character piece takes a moment rather than the reference
// algorithm's quadratic time (same result: a pair containing a token can only rank after the
// merge that made that token).
//
// Invalid UTF-8 in the text is an error naming its byte offset (TokenizerError); the ids of
// raw bytes are never guessed.
#include <algorithm>      // std::sort
#include <cstdint>        // std::int32_t, std::uint64_t
#include <filesystem>     // std::filesystem::path
#include <limits>         // std::numeric_limits
#include <optional>       // std::optional
#include <span>           // std::span
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include <tessera/core/error.hpp>         // FormatError, TokenizerError
#include <tessera/core/token_id.hpp>      // TokenId
#include <tessera/io/json.hpp>            // parse_json: vocab.json
#include <tessera/io/read_only_file.hpp>  // read_whole_file
#include <tessera/text/byte_level.hpp>    // byte_to_char
#include <tessera/text/pretokenizer.hpp>  // pretokenize
#include <tessera/text/tokenizer.hpp>     // Tokenizer, SpecialTokens
#include <tessera/text/utf8.hpp>          // append, decode_one, sanitize

namespace tessera {

class BpeTokenizer final : public Tokenizer {
public:
    static constexpr std::string_view end_of_text = "<|endoftext|>";

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

    // From the files' contents; the names are for error messages.
    BpeTokenizer(std::string_view vocab_json, const std::string& vocab_name, std::string_view merges_txt,
                 const std::string& merges_name) {
        load_vocab(vocab_json, vocab_name);
        load_merges(merges_txt, merges_name);
    }

    // From a token list (the id is the index) and merges ("a b", highest priority first) in
    // byte-level text, as a GGUF file's tokenizer.ggml.tokens and tokenizer.ggml.merges hold
    // them; `source` names them in errors.
    BpeTokenizer(std::span<const std::string> tokens, std::span<const std::string> merges, const std::string& source) {
        std::vector<std::pair<std::string_view, std::int64_t>> vocab;
        vocab.reserve(tokens.size());
        for (std::size_t i = 0; i < tokens.size(); ++i) vocab.emplace_back(tokens[i], static_cast<std::int64_t>(i));
        add_vocabulary(vocab, source + " tokenizer.ggml.tokens");
        const std::string where = source + " tokenizer.ggml.merges";
        for (std::size_t i = 0; i < merges.size(); ++i) add_merge(merges[i], where + " entry " + std::to_string(i));
        if (merges_.empty()) throw FormatError(where + ": no merges");
    }

    std::size_t vocab_size() const noexcept override { return bytes_.size(); }
    // The end-of-text id from vocab.json (50256 for GPT-2), if it has one.
    std::optional<TokenId> eos_id() const override { return token_id(end_of_text); }
    std::optional<TokenId> token_id(std::string_view token) const {
        const auto it = ids_.find(std::string(token));
        return it == ids_.end() ? std::nullopt : std::optional<TokenId>(it->second);
    }

    // (encode, decode, check_vocab_size: Tokenizer's.)

    // The raw bytes of one token; throws TokenizerError for an id outside the vocabulary.
    const std::string& token_bytes(TokenId id) const override {
        if (id < 0 || static_cast<std::size_t>(id) >= bytes_.size()) {
            throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary (" +
                                 std::to_string(bytes_.size()) + " tokens)");
        }
        return bytes_[static_cast<std::size_t>(id)];
    }

    // A token as vocab.json and GGUF files write it: its bytes as byte-level characters ("Ġthe"),
    // a special token as its own text.
    std::string token_text(TokenId id) const {
        const std::string& bytes = token_bytes(id);
        if (bytes == end_of_text) return bytes;
        std::string text;
        for (const char b : bytes) utf8::append(text, byte_level::byte_to_char[static_cast<unsigned char>(b)]);
        return text;
    }

private:
    std::vector<TokenId> encode_ids(std::string_view text, SpecialTokens special) const override {
        std::vector<TokenId> ids;
        WordCache cache;
        if (special == SpecialTokens::allowed && eos_id()) {
            // Split on the special token; encode the text between occurrences.
            const TokenId eos = *eos_id();
            std::size_t start = 0;
            for (std::size_t hit = text.find(end_of_text); hit != std::string_view::npos;
                 hit = text.find(end_of_text, start)) {
                encode_text(text.substr(start, hit - start), ids, cache);
                ids.push_back(eos);
                start = hit + end_of_text.size();
            }
            encode_text(text.substr(start), ids, cache);
        } else {
            encode_text(text, ids, cache);
        }
        return ids;
    }

public:
    // The merges as merges.txt writes them ("Ġ t"), highest priority first.
    std::vector<std::string> merge_texts() const {
        std::vector<std::pair<std::int32_t, std::string>> ranked;
        ranked.reserve(merges_.size());
        for (const auto& [key, merge] : merges_) {
            ranked.emplace_back(merge.rank, token_text(static_cast<TokenId>(key >> 32)) + " " +
                                                token_text(static_cast<TokenId>(key & 0xffffffffu)));
        }
        std::sort(ranked.begin(), ranked.end());
        std::vector<std::string> out;
        out.reserve(ranked.size());
        for (auto& [rank, text] : ranked) out.push_back(std::move(text));
        return out;
    }

private:
    struct Merge {
        std::int32_t rank;
        TokenId result;
    };
    using WordCache = std::unordered_map<std::string_view, std::vector<TokenId>>;

    static std::uint64_t pair_key(TokenId a, TokenId b) noexcept {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    }

    // GPT-2's vocab.json is 1 MB and merges.txt 0.5 MB; vocabularies of 250,000 tokens stay
    // under 20 MB. Anything larger (or a device such as /dev/zero) is not a tokenizer file.
    static constexpr std::size_t max_file_bytes = std::size_t{64} << 20;
    static std::string read_file(const std::filesystem::path& path) { return io::read_whole_file(path, max_file_bytes); }

    void load_vocab(std::string_view text, const std::string& name) {
        const io::JsonValue json = io::parse_json(text, name);
        if (!json.is_object() || json.members().empty()) throw FormatError(name + ": expected a JSON object of token -> id");
        std::vector<std::pair<std::string_view, std::int64_t>> vocab;
        vocab.reserve(json.members().size());
        for (const auto& [token, id_json] : json.members()) {
            if (!id_json.as_signed()) throw FormatError(name + ": the id of token \"" + token + "\" is not an integer");
            vocab.emplace_back(token, *id_json.as_signed());
        }
        add_vocabulary(vocab, name);
    }

    // Tokens in byte-level text with their ids, which must be 0 .. n-1 each once.
    void add_vocabulary(std::span<const std::pair<std::string_view, std::int64_t>> vocab, const std::string& name) {
        if (vocab.empty()) throw FormatError(name + ": no tokens");
        // byte-level character -> byte
        std::unordered_map<char32_t, char> char_to_byte;
        for (unsigned b = 0; b < 256; ++b) char_to_byte[byte_level::byte_to_char[b]] = static_cast<char>(b);
        bytes_.assign(vocab.size(), {});
        std::vector<bool> seen(vocab.size(), false);
        for (const auto& [token_view, id] : vocab) {
            const std::string token(token_view);
            if (id < 0 || static_cast<std::size_t>(id) >= vocab.size() || seen[static_cast<std::size_t>(id)]) {
                throw FormatError(name + ": token \"" + token + "\" has id " + std::to_string(id) +
                                  ", but ids must be distinct and below the vocabulary size " + std::to_string(vocab.size()));
            }
            const auto index = static_cast<std::size_t>(id);
            seen[index] = true;
            if (!ids_.emplace(token, static_cast<TokenId>(id)).second) {
                throw FormatError(name + ": token \"" + token + "\" appears twice");
            }
            if (token == end_of_text) {
                bytes_[index] = token;  // a special token decodes to its own text
                continue;
            }
            for (std::size_t i = 0; i < token.size();) {
                const utf8::Decoded d = utf8::decode_one(token, i);
                const auto it = d.status == utf8::Status::ok ? char_to_byte.find(d.code_point) : char_to_byte.end();
                if (it == char_to_byte.end()) {
                    throw FormatError(name + ": token \"" + token + "\" (id " + std::to_string(id) +
                                      ") has a character outside GPT-2's byte-level alphabet");
                }
                bytes_[index] += it->second;
                i += d.length;
            }
        }
        for (unsigned b = 0; b < 256; ++b) {
            std::string ch;
            utf8::append(ch, byte_level::byte_to_char[b]);
            const auto it = ids_.find(ch);
            if (it == ids_.end()) throw FormatError(name + ": the byte-level token for byte " + std::to_string(b) + " is missing");
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
        const std::string left(line.substr(0, space)), right(line.substr(space + 1));
        const auto a = ids_.find(left), b = ids_.find(right), merged = ids_.find(left + right);
        if (a == ids_.end() || b == ids_.end() || merged == ids_.end()) {
            throw FormatError(where + ": \"" + std::string(line) + "\" uses or makes a token that the vocabulary does not have");
        }
        merges_.emplace(pair_key(a->second, b->second), Merge{static_cast<std::int32_t>(merges_.size()), merged->second});
    }

    void encode_text(std::string_view text, std::vector<TokenId>& ids, WordCache& cache) const {
        pretokenize(text, [&](std::string_view piece) {
            if (const auto hit = cache.find(piece); hit != cache.end()) {
                ids.insert(ids.end(), hit->second.begin(), hit->second.end());
                return;
            }
            const std::size_t before = ids.size();
            merge(piece, ids);
            // Words repeat; long pieces hardly ever do, and copying them would double their cost.
            if (piece.size() <= 256) cache.emplace(piece, std::vector<TokenId>(ids.begin() + static_cast<std::ptrdiff_t>(before), ids.end()));
        });
    }

    // Appends the BPE tokens of one piece. Each symbol keeps at most one candidate merge, the
    // pair it forms with its right neighbour, in an indexed min-heap ordered by (rank, position):
    // a merge updates the two candidates it touches in place, so nothing stale accumulates and
    // memory stays at 24 bytes per byte of the piece (for a piece of many megabytes, one long
    // run of a repeated character, say).
    void merge(std::string_view piece, std::vector<TokenId>& out) const {
        const std::size_t n = piece.size();
        if (n == 1) {
            out.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
            return;
        }
        if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
            throw TokenizerError("a single pre-token of " + std::to_string(n) + " bytes is longer than the " +
                                 std::to_string(std::numeric_limits<std::int32_t>::max()) + " bytes BPE can index");
        }
        constexpr std::int32_t none = -1;
        struct Symbol {
            TokenId id;
            std::int32_t prev, next;  // none at the ends
        };
        std::vector<Symbol> symbols(n);
        for (std::size_t i = 0; i < n; ++i) {
            symbols[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], static_cast<std::int32_t>(i) - 1,
                          i + 1 < n ? static_cast<std::int32_t>(i + 1) : none};
        }
        MergeHeap heap(n);
        const auto candidate = [&](std::int32_t left) {  // refreshes the pair starting at `left`
            if (left == none) return;
            const std::int32_t right = symbols[static_cast<std::size_t>(left)].next;
            const auto it = right == none ? merges_.end()
                                          : merges_.find(pair_key(symbols[static_cast<std::size_t>(left)].id,
                                                                  symbols[static_cast<std::size_t>(right)].id));
            heap.set(left, it == merges_.end() ? MergeHeap::no_rank : it->second.rank);
        };
        for (std::size_t i = 0; i + 1 < n; ++i) candidate(static_cast<std::int32_t>(i));
        while (!heap.empty()) {
            const std::int32_t l = heap.top();
            Symbol& left = symbols[static_cast<std::size_t>(l)];
            Symbol& right = symbols[static_cast<std::size_t>(left.next)];
            left.id = merges_.find(pair_key(left.id, right.id))->second.result;
            heap.set(left.next, MergeHeap::no_rank);  // the right symbol is gone, and its pair with it
            left.next = right.next;
            if (right.next != none) symbols[static_cast<std::size_t>(right.next)].prev = l;
            candidate(left.prev);
            candidate(l);
        }
        for (std::int32_t i = 0; i != none; i = symbols[static_cast<std::size_t>(i)].next) {
            out.push_back(symbols[static_cast<std::size_t>(i)].id);
        }
    }

    // A binary min-heap of symbol positions keyed by (rank of the symbol's pair, position),
    // with each position's slot recorded so that its key can change in place.
    class MergeHeap {
    public:
        static constexpr std::int32_t no_rank = -1;
        explicit MergeHeap(std::size_t n) : rank_(n, no_rank), slot_(n, -1) { heap_.reserve(n); }
        bool empty() const noexcept { return heap_.empty(); }
        std::int32_t top() const noexcept { return heap_.front(); }
        // Gives position i the rank `rank`, or takes it out of the heap with no_rank.
        void set(std::int32_t i, std::int32_t rank) {
            const auto at = static_cast<std::size_t>(i);
            const std::int32_t slot = slot_[at];
            rank_[at] = rank;
            if (rank == no_rank) {
                if (slot < 0) return;
                slot_[at] = -1;
                const std::int32_t last = heap_.back();
                heap_.pop_back();
                if (last == i) return;
                place(static_cast<std::size_t>(slot), last);
                restore(static_cast<std::size_t>(slot));
            } else if (slot < 0) {
                heap_.push_back(i);
                slot_[at] = static_cast<std::int32_t>(heap_.size() - 1);
                restore(heap_.size() - 1);
            } else {
                restore(static_cast<std::size_t>(slot));
            }
        }

    private:
        bool before(std::int32_t a, std::int32_t b) const noexcept {
            const std::int32_t ra = rank_[static_cast<std::size_t>(a)], rb = rank_[static_cast<std::size_t>(b)];
            return ra != rb ? ra < rb : a < b;  // lowest rank first, leftmost among equals
        }
        void place(std::size_t slot, std::int32_t i) noexcept {
            heap_[slot] = i;
            slot_[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(slot);
        }
        void restore(std::size_t slot) noexcept {  // sift the entry at `slot` up or down
            const std::int32_t i = heap_[slot];
            while (slot > 0 && before(i, heap_[(slot - 1) / 2])) {
                place(slot, heap_[(slot - 1) / 2]);
                slot = (slot - 1) / 2;
            }
            for (;;) {
                std::size_t child = 2 * slot + 1;
                if (child >= heap_.size()) break;
                if (child + 1 < heap_.size() && before(heap_[child + 1], heap_[child])) ++child;
                if (!before(heap_[child], i)) break;
                place(slot, heap_[child]);
                slot = child;
            }
            place(slot, i);
        }

        std::vector<std::int32_t> rank_, slot_, heap_;
    };

    std::vector<std::string> bytes_;   // id -> raw bytes
    std::unordered_map<std::string, TokenId> ids_;
    std::unordered_map<std::uint64_t, Merge> merges_;  // (left id, right id) -> rank, result
    TokenId byte_ids_[256] = {};
};

}  // namespace tessera
