#pragma once
// BpeMerges: a BPE vocabulary's merges, (left id, right id) -> (rank, result), and the merge
// loop both BPE kinds run over a piece's symbols: repeatedly join the adjacent pair of lowest
// rank, leftmost among equals, until no adjacent pair has a merge. BpeTokenizer ranks merges by
// their order in the file; SentencePieceTokenizer ranks them by the joined piece's score, which
// makes this loop SentencePiece's (highest score first, leftmost among equals).
//
// The table is open addressing over 64-bit pair keys (linear probing, at most half full): a
// lookup is a multiply, a shift and usually one cache line, where std::unordered_map spent a
// division and a pointer chase (a fifth of encoding time on mixed text).
#include <cstdint>    // std::int32_t, std::uint64_t
#include <limits>     // std::numeric_limits
#include <string>     // std::to_string
#include <vector>     // std::vector

#include <tessera/core/error.hpp>     // TokenizerError
#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

class BpeMerges {
public:
    struct Merge {
        std::int32_t rank;
        TokenId result;
    };

    // Adds the merge of left and right into result with `rank`; a pair already present keeps
    // its first merge (as Hugging Face's tokenizers does with a pair listed twice). Ids are
    // non-negative.
    void add(TokenId left, TokenId right, std::int32_t rank, TokenId result) {
        if ((count_ + 1) * 2 > slots_.size()) grow();
        Slot& slot = probe(key(left, right));
        if (slot.key != empty_key) return;
        slot = {key(left, right), {rank, result}};
        ++count_;
    }
    const Merge* find(TokenId left, TokenId right) const noexcept {
        if (slots_.empty()) return nullptr;
        const Slot& slot = const_cast<BpeMerges*>(this)->probe(key(left, right));
        return slot.key == empty_key ? nullptr : &slot.merge;
    }
    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    // Calls f(left, right, merge) for each merge, in no particular order.
    template <class F>
    void for_each(F&& f) const {
        for (const Slot& s : slots_) {
            if (s.key != empty_key) f(static_cast<TokenId>(s.key >> 32), static_cast<TokenId>(s.key & 0xffffffffu), s.merge);
        }
    }

    // BPE over n symbols (initial(i): the i-th one's token id), their final ids appended to out.
    // Each symbol keeps at most one candidate merge, the pair it forms with its right neighbour,
    // in an indexed min-heap ordered by (rank, position): a merge updates the two candidates it
    // touches in place, so nothing stale accumulates and memory stays at 24 bytes per symbol
    // (for a piece of many megabytes, one long run of a repeated character, say).
    template <class Initial>
    void apply(std::size_t n, Initial initial, std::vector<TokenId>& out) const {
        if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
            throw TokenizerError("a single pre-token of " + std::to_string(n) + " symbols is longer than the " +
                                 std::to_string(std::numeric_limits<std::int32_t>::max()) + " BPE can index");
        }
        if (n <= 1) {
            if (n == 1) out.push_back(initial(std::size_t{0}));
            return;
        }
        if (n <= short_symbols) return apply_short(n, initial, out);
        thread_local Scratch reused;
        Scratch own;
        Scratch& scratch = n <= reused_scratch_symbols ? reused : own;
        constexpr std::int32_t none = -1;
        std::vector<Symbol>& symbols = scratch.symbols;
        symbols.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            symbols[i] = {initial(i), static_cast<std::int32_t>(i) - 1, i + 1 < n ? static_cast<std::int32_t>(i + 1) : none};
        }
        Heap& heap = scratch.heap;
        heap.reset(n);
        const auto candidate = [&](std::int32_t left) {  // refreshes the pair starting at `left`
            if (left == none) return;
            const std::int32_t right = symbols[static_cast<std::size_t>(left)].next;
            const Merge* m = right == none ? nullptr
                                           : find(symbols[static_cast<std::size_t>(left)].id, symbols[static_cast<std::size_t>(right)].id);
            heap.set(left, m ? m->rank : Heap::no_rank);
        };
        for (std::size_t i = 0; i + 1 < n; ++i) candidate(static_cast<std::int32_t>(i));
        while (!heap.empty()) {
            const std::int32_t l = heap.top();
            Symbol& left = symbols[static_cast<std::size_t>(l)];
            Symbol& right = symbols[static_cast<std::size_t>(left.next)];
            left.id = find(left.id, right.id)->result;
            heap.set(left.next, Heap::no_rank);  // the right symbol is gone, and its pair with it
            left.next = right.next;
            if (right.next != none) symbols[static_cast<std::size_t>(right.next)].prev = l;
            candidate(left.prev);
            candidate(l);
        }
        for (std::int32_t i = 0; i != none; i = symbols[static_cast<std::size_t>(i)].next) {
            out.push_back(symbols[static_cast<std::size_t>(i)].id);
        }
    }

private:
    // Most words are a few symbols: there a scan of their pairs' ranks for the lowest (leftmost
    // among equals) beats the heap's bookkeeping, with the same merges in the same order.
    static constexpr std::size_t short_symbols = 16;
    template <class Initial>
    void apply_short(std::size_t n, Initial initial, std::vector<TokenId>& out) const {
        constexpr std::int32_t none = std::numeric_limits<std::int32_t>::max();
        TokenId ids[short_symbols]{};  // (zeroed: nvcc cannot see that the loop below sets them)
        Merge pairs[short_symbols]{};  // pairs[i]: the merge of (ids[i], ids[i + 1]), rank none if none
        const auto pair = [&](std::size_t i) {
            const Merge* m = find(ids[i], ids[i + 1]);
            pairs[i] = m ? *m : Merge{none, 0};
        };
        for (std::size_t i = 0; i < n; ++i) ids[i] = initial(i);
        for (std::size_t i = 0; i + 1 < n; ++i) pair(i);
        while (n > 1) {
            std::size_t best = 0;
            for (std::size_t i = 1; i + 1 < n; ++i)
                if (pairs[i].rank < pairs[best].rank) best = i;
            if (pairs[best].rank == none) break;
            ids[best] = pairs[best].result;
            for (std::size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
            for (std::size_t i = best + 1; i + 2 < n; ++i) pairs[i] = pairs[i + 1];
            --n;
            if (best + 1 < n) pair(best);
            if (best > 0) pair(best - 1);
        }
        out.insert(out.end(), ids, ids + n);
    }

    static constexpr std::uint64_t empty_key = ~std::uint64_t{0};
    struct Slot {
        std::uint64_t key = empty_key;
        Merge merge{};
    };
    static std::uint64_t key(TokenId a, TokenId b) noexcept {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    }
    // The slot holding key, or the empty slot where it would go.
    Slot& probe(std::uint64_t k) noexcept {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t at = static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_);; at = (at + 1) & mask) {
            if (slots_[at].key == k || slots_[at].key == empty_key) return slots_[at];
        }
    }
    void grow() {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
        shift_ = 64;
        for (std::size_t s = slots_.size(); s > 1; s >>= 1) --shift_;
        for (const Slot& s : old) {
            if (s.key != empty_key) probe(s.key) = s;
        }
    }

    // A binary min-heap of symbol positions keyed by (rank of the symbol's pair, position),
    // with each position's slot recorded so that its key can change in place.
    class Heap {
    public:
        static constexpr std::int32_t no_rank = -1;
        // Empty, for positions 0 .. n-1.
        void reset(std::size_t n) {
            rank_.assign(n, no_rank);
            slot_.assign(n, -1);
            heap_.clear();
            heap_.reserve(n);
        }
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

    struct Symbol {
        TokenId id;
        std::int32_t prev, next;  // -1 at the ends
    };
    // Scratch for a merge: reused by each thread for pieces up to 4,096 symbols (most are a few),
    // so that a word costs no allocation; a longer piece has its own, freed when it is done.
    struct Scratch {
        std::vector<Symbol> symbols;
        Heap heap;
    };
    static constexpr std::size_t reused_scratch_symbols = 4096;

    std::vector<Slot> slots_;
    std::size_t count_ = 0;
    int shift_ = 64;
};

}  // namespace tessera
