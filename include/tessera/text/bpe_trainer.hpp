#pragma once
// Training a byte-level BPE vocabulary: count the pieces a pre-tokenizer cuts from a corpus,
// then repeatedly merge the most frequent adjacent pair of symbols into a new token, until the
// vocabulary has the size asked for or no pair occurs twice.
//
// Pair counts are kept incrementally: a merge touches only the words that hold its pair (an
// index from pair to words), adjusting the counts of the pairs around each occurrence, and the
// most frequent pair comes from a max-heap whose stale entries are re-checked when they surface.
// So a merge costs the occurrences it rewrites, not a recount of the corpus: 10 MB of text into
// 32,000 tokens takes seconds (bench/RESULTS.md). Ties go to the pair whose left then right id
// is smallest, so training is deterministic.
//
// The result is what BpeTokenizer's general constructor takes: vocabulary, added tokens, merges.
#include <algorithm>      // std::sort, std::max
#include <exception>      // std::exception_ptr
#include <cstdint>        // std::int64_t, std::int32_t, std::uint64_t
#include <queue>          // std::priority_queue
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <thread>         // std::thread
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include <tessera/core/error.hpp>         // ArgumentError
#include <tessera/text/byte_level.hpp>    // byte_to_char
#include <tessera/text/pretokenizer.hpp>  // pretokenize, PreTokenizer
#include <tessera/text/utf8.hpp>          // append

namespace tessera {

struct BpeTrainingOptions {
    PreTokenizer pre = PreTokenizer::gpt2;
    std::size_t vocab_size = 32000;            // special tokens, the 256 bytes and the merges together
    std::vector<std::string> special_tokens;   // ids 0, 1, ... in this order
    std::int64_t min_frequency = 2;            // a pair rarer than this is never merged
    unsigned threads = 2;                      // for counting the pieces
};

struct TrainedBpe {
    std::vector<std::pair<std::string, std::int64_t>> vocab;  // byte-level text -> id
    std::vector<std::pair<std::string, std::string>> merges;  // byte-level text, highest priority first
    std::vector<std::string> special_tokens;                  // ids 0 .. n-1
};

// Counts of each piece of `texts` (each pre-tokenized on its own), on `threads` threads.
inline std::unordered_map<std::string, std::int64_t> count_pieces(const std::vector<std::string_view>& texts, PreTokenizer pre,
                                                                   unsigned threads) {
    threads = std::max(1u, threads);
    std::vector<std::unordered_map<std::string, std::int64_t>> counts(threads);
    std::vector<std::exception_ptr> errors(threads);
    const auto work = [&](unsigned t) {
        try {
            for (std::size_t i = t; i < texts.size(); i += threads) {
                pretokenize(pre, texts[i], [&](std::string_view piece) { ++counts[t][std::string(piece)]; });
            }
        } catch (...) {
            errors[t] = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (std::thread& th : pool) th.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
    for (unsigned t = 1; t < threads; ++t) {
        for (auto& [piece, n] : counts[t]) counts[0][piece] += n;
    }
    return std::move(counts[0]);
}

// Trains on `texts` (documents, each pre-tokenized alone). Throws ArgumentError when the
// vocabulary asked for cannot hold the special tokens and the 256 bytes.
inline TrainedBpe train_bpe(const std::vector<std::string_view>& texts, const BpeTrainingOptions& options) {
    const std::size_t base = options.special_tokens.size() + 256;
    if (options.vocab_size < base) {
        throw ArgumentError("a vocabulary of " + std::to_string(options.vocab_size) + " tokens cannot hold the " +
                            std::to_string(options.special_tokens.size()) + " special tokens and the 256 bytes");
    }
    TrainedBpe out;
    out.special_tokens = options.special_tokens;
    // Token texts in byte-level characters; ids after the special tokens.
    std::vector<std::string> token_text;
    for (unsigned b = 0; b < 256; ++b) {
        std::string ch;
        utf8::append(ch, byte_level::byte_to_char[b]);
        token_text.push_back(std::move(ch));
    }

    struct Word {
        std::vector<std::int32_t> symbols;  // indices into token_text
        std::int64_t count;
    };
    std::vector<Word> words;
    for (auto& [piece, n] : count_pieces(texts, options.pre, options.threads)) {
        Word w{{}, n};
        for (const char c : piece) w.symbols.push_back(static_cast<unsigned char>(c));
        if (w.symbols.size() > 1) words.push_back(std::move(w));
    }
    std::sort(words.begin(), words.end(), [](const Word& a, const Word& b) { return a.symbols < b.symbols; });  // deterministic order

    const auto key = [](std::int32_t a, std::int32_t b) {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    };
    std::unordered_map<std::uint64_t, std::int64_t> pair_count;
    std::unordered_map<std::uint64_t, std::vector<std::int32_t>> pair_words;  // may repeat a word; checked when used
    for (std::size_t w = 0; w < words.size(); ++w) {
        const auto& s = words[w].symbols;
        for (std::size_t i = 0; i + 1 < s.size(); ++i) {
            const std::uint64_t k = key(s[i], s[i + 1]);
            pair_count[k] += words[w].count;
            pair_words[k].push_back(static_cast<std::int32_t>(w));
        }
    }
    struct Candidate {
        std::int64_t count;
        std::uint64_t pair;
        bool operator<(const Candidate& o) const noexcept {  // the heap's top: most frequent, then smallest ids
            return count != o.count ? count < o.count : pair > o.pair;
        }
    };
    std::priority_queue<Candidate> heap;
    for (const auto& [k, n] : pair_count) heap.push({n, k});

    std::unordered_map<std::string, std::int32_t> id_of_text;  // two merges may make the same text: one token
    for (std::size_t i = 0; i < token_text.size(); ++i) id_of_text.emplace(token_text[i], static_cast<std::int32_t>(i));
    std::vector<std::int64_t> last_seen(words.size(), -1);  // the merge that last rewrote each word
    while (token_text.size() + options.special_tokens.size() < options.vocab_size && !heap.empty()) {
        const Candidate top = heap.top();
        heap.pop();
        const auto it = pair_count.find(top.pair);
        const std::int64_t now = it == pair_count.end() ? 0 : it->second;
        if (now != top.count) {  // stale: counted again since it was pushed
            if (now > 0) heap.push({now, top.pair});
            continue;
        }
        if (now < options.min_frequency) break;
        const auto a = static_cast<std::int32_t>(top.pair >> 32), b = static_cast<std::int32_t>(top.pair & 0xffffffffu);
        const auto step = static_cast<std::int64_t>(out.merges.size());
        std::string text = token_text[static_cast<std::size_t>(a)] + token_text[static_cast<std::size_t>(b)];
        const auto [found, added] = id_of_text.emplace(text, static_cast<std::int32_t>(token_text.size()));
        if (added) token_text.push_back(std::move(text));
        const std::int32_t merged = found->second;
        out.merges.emplace_back(token_text[static_cast<std::size_t>(a)], token_text[static_cast<std::size_t>(b)]);
        std::unordered_map<std::uint64_t, std::int64_t> changed;  // pairs whose count this merge changed
        const auto add = [&](std::uint64_t k, std::int64_t delta, std::int32_t w) {
            pair_count[k] += delta;
            changed[k] = pair_count[k];
            if (delta > 0) pair_words[k].push_back(w);
        };
        const std::vector<std::int32_t> holders = std::move(pair_words[top.pair]);
        pair_words.erase(top.pair);
        for (const std::int32_t w : holders) {
            if (last_seen[static_cast<std::size_t>(w)] == step) continue;  // listed twice
            last_seen[static_cast<std::size_t>(w)] = step;
            Word& word = words[static_cast<std::size_t>(w)];
            std::vector<std::int32_t>& s = word.symbols;
            std::vector<std::int32_t> next;
            next.reserve(s.size());
            for (std::size_t i = 0; i < s.size();) {
                if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
                    // The pairs around the occurrence change: (prev, a) -> (prev, merged), (b, after) -> (merged, after).
                    if (!next.empty()) {
                        add(key(next.back(), a), -word.count, w);
                        add(key(next.back(), merged), word.count, w);
                    }
                    if (i + 2 < s.size()) {
                        add(key(b, s[i + 2]), -word.count, w);
                        add(key(merged, s[i + 2]), word.count, w);
                    }
                    next.push_back(merged);
                    i += 2;
                } else {
                    next.push_back(s[i]);
                    ++i;
                }
            }
            s = std::move(next);
        }
        pair_count.erase(top.pair);
        for (const auto& [k, n] : changed) {
            if (k == top.pair) continue;
            if (n <= 0) pair_count.erase(k);
            else heap.push({n, k});
        }
    }

    for (std::size_t i = 0; i < options.special_tokens.size(); ++i) out.vocab.emplace_back(options.special_tokens[i], static_cast<std::int64_t>(i));
    for (std::size_t i = 0; i < token_text.size(); ++i) {
        out.vocab.emplace_back(token_text[i], static_cast<std::int64_t>(options.special_tokens.size() + i));
    }
    return out;
}

}  // namespace tessera
