#pragma once
// WordCache: the ids of pieces already encoded during one encode call. Words repeat, so each
// distinct one is merged once; pieces longer than 256 bytes hardly ever repeat and are not kept
// (copying them would double their cost). Keys point into the text, which must outlive the cache.
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <vector>         // std::vector

#include <tessera/core/token_id.hpp>  // TokenId

namespace tessera {

class WordCache {
public:
    // Appends the ids of `word` to out: cached, or encode(word, out) and remembered.
    template <class Encode>
    void append(std::string_view word, std::vector<TokenId>& out, Encode&& encode) {
        if (const auto hit = ids_.find(word); hit != ids_.end()) {
            out.insert(out.end(), hit->second.begin(), hit->second.end());
            return;
        }
        const std::size_t before = out.size();
        encode(word, out);
        if (word.size() <= 256) ids_.emplace(word, std::vector<TokenId>(out.begin() + static_cast<std::ptrdiff_t>(before), out.end()));
    }

private:
    std::unordered_map<std::string_view, std::vector<TokenId>> ids_;
};

}  // namespace tessera
