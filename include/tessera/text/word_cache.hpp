#pragma once
// WordCache: the ids of pieces already encoded during one encode call. Words repeat, so each
// distinct one is merged once; pieces longer than 256 bytes hardly ever repeat and are not kept
// (copying them would double their cost). Keys point into the text, which must outlive the cache.
//
// Open addressing over one flat array of ids, with a multiply-xor hash eight bytes at a time:
// std::unordered_map<std::string_view, std::vector<TokenId>> spent a fifth of encoding time in
// its byte-at-a-time hash, a node and a vector allocated per distinct word, and pointer chases.
#include <cstdint>      // std::uint64_t, std::uint32_t
#include <cstring>      // std::memcpy
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

class WordCache {
public:
    // Appends the ids of `word` to out: cached, or encode(word, out) and remembered.
    template <class Encode>
    void append(std::string_view word, std::vector<TokenId>& out, Encode&& encode) {
        if (word.size() > max_word_bytes) return encode(word, out);
        const std::uint64_t h = hash(word);
        if (!slots_.empty()) {
            const Slot& slot = find(h, word);
            if (slot.word.data() != nullptr) {
                const auto begin = ids_.begin() + slot.begin;
                out.insert(out.end(), begin, begin + slot.count);
                return;
            }
        }
        const std::size_t before = out.size();
        encode(word, out);
        if ((used_ + 1) * 2 > slots_.size()) grow();
        Slot& slot = find(h, word);
        slot = {h, word, static_cast<std::uint32_t>(ids_.size()), static_cast<std::uint32_t>(out.size() - before)};
        ids_.insert(ids_.end(), out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
        ++used_;
    }

private:
    static constexpr std::size_t max_word_bytes = 256;
    struct Slot {
        std::uint64_t hash = 0;
        std::string_view word;  // data() == nullptr: empty
        std::uint32_t begin = 0, count = 0;  // the word's ids in ids_
    };

    static std::uint64_t hash(std::string_view s) noexcept {
        constexpr std::uint64_t k = 0x9E3779B97F4A7C15ull;
        std::uint64_t h = s.size() * k;
        std::size_t at = 0;
        for (; at + 8 <= s.size(); at += 8) {
            std::uint64_t v;
            std::memcpy(&v, s.data() + at, 8);
            h = (h ^ v) * k;
            h ^= h >> 29;
        }
        if (at < s.size()) {
            std::uint64_t v = 0;
            std::memcpy(&v, s.data() + at, s.size() - at);
            h = (h ^ v) * k;
            h ^= h >> 29;
        }
        return h * k;
    }
    // The slot holding word, or the empty slot where it would go (the table is never full).
    Slot& find(std::uint64_t h, std::string_view word) noexcept {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t at = static_cast<std::size_t>(h >> 32) & mask;; at = (at + 1) & mask) {
            Slot& slot = slots_[at];
            if (slot.word.data() == nullptr || (slot.hash == h && slot.word == word)) return slot;
        }
    }
    void grow() {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(old.empty() ? 256 : old.size() * 2, Slot{});
        for (const Slot& s : old) {
            if (s.word.data() != nullptr) find(s.hash, s.word) = s;
        }
    }

    std::vector<Slot> slots_;
    std::vector<TokenId> ids_;
    std::size_t used_ = 0;
};

}  // namespace tessera
