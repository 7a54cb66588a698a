#pragma once
// StopStrings: finds stop strings in text that grows piece by piece, and says how much of it is
// safe to show: everything except a tail that could still become the start of a stop string.
// So streamed pieces never contain a stop string, nor part of one that later completes.
// Stop strings must be valid UTF-8: then a match, and a held-back tail, always begin on a
// character boundary of the (valid) generated text, so no character is ever split.
#include <algorithm>    // std::max, std::min
#include <cstddef>      // std::size_t
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move
#include <vector>       // std::vector

#include <tessera/core/error.hpp>  // ArgumentError
#include <tessera/text/utf8.hpp>   // first_invalid, sanitize

namespace tessera {

class StopStrings {
public:
    explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
        for (const auto& s : stops_) {
            if (s.empty()) throw ArgumentError("stop strings must not be empty");
            if (const std::size_t bad = utf8::first_invalid(s); bad != s.size()) {
                throw ArgumentError("stop string \"" + utf8::sanitize(s) + "\" is not valid UTF-8 (at byte " +
                                    std::to_string(bad) + ")");
            }
            longest_ = std::max(longest_, s.size());
        }
    }

    // The earliest position in `text` where a stop string begins, searching only where a match
    // could be new (from `from - longest + 1` on).
    std::optional<std::size_t> find(std::string_view text, std::size_t from) const {
        std::optional<std::size_t> best;
        const std::size_t start = from + 1 > longest_ ? from + 1 - longest_ : 0;
        for (const auto& s : stops_) {
            const auto at = text.find(s, start);
            if (at != std::string_view::npos && (!best || at < *best)) best = at;
        }
        return best;
    }

    // Length of the prefix of `text` that no future text can turn into a stop string.
    std::size_t safe_length(std::string_view text) const {
        std::size_t hold = 0;
        for (const auto& s : stops_) {
            for (std::size_t k = std::min(s.size() - 1, text.size()); k > hold; --k) {
                if (text.substr(text.size() - k) == std::string_view(s).substr(0, k)) {
                    hold = k;
                    break;
                }
            }
        }
        return text.size() - hold;
    }

private:
    std::vector<std::string> stops_;
    std::size_t longest_ = 0;
};

}  // namespace tessera
