// The server's HTTP request parser on any bytes, split across reads in any way: the result (a
// request, a refusal with its status, or a need for more) must not depend on the split, and no
// request may hold more than the limits allow.
#include <cstdint>
#include <string>
#include <string_view>

#include "../../examples/server/http_request.hpp"

namespace {

using tessera::server::http::Limits;
using tessera::server::http::RequestParser;

// Feeds in pieces whose sizes come from `sizes` (cycled; 0: the rest at once).
RequestParser feed(std::string_view bytes, std::string_view sizes, const Limits& limits, std::size_t& used) {
    RequestParser p(limits);
    used = 0;
    for (std::size_t i = 0; used < bytes.size() && !p.complete() && !p.failed(); ++i) {
        const std::size_t step = sizes.empty() ? 0 : static_cast<unsigned char>(sizes[i % sizes.size()]) % 17;
        const std::size_t n = step == 0 ? bytes.size() - used : std::min(step, bytes.size() - used);
        const std::size_t took = p.feed(bytes.substr(used, n));
        if (took > n) __builtin_trap();
        used += took;
        if (took < n && !p.complete() && !p.failed()) __builtin_trap();  // it stops only at an end
    }
    return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const std::size_t split = size == 0 ? 0 : data[0] % 8;  // the first bytes choose the pieces
    const std::string_view sizes = all.substr(std::min<std::size_t>(1, size), std::min<std::size_t>(split, size > 0 ? size - 1 : 0));
    const std::string_view bytes = all.substr(std::min(size, 1 + sizes.size()));
    Limits limits;
    limits.request_line = 200;
    limits.head = 600;
    limits.headers = 8;
    limits.body = 300;
    std::size_t used_whole = 0, used_split = 0;
    const RequestParser whole = feed(bytes, {}, limits, used_whole);
    const RequestParser pieces = feed(bytes, sizes, limits, used_split);
    if (whole.state() != pieces.state() || whole.error_status() != pieces.error_status() ||
        whole.error_message() != pieces.error_message())
        __builtin_trap();
    if (whole.complete()) {
        const auto& a = whole.request();
        const auto& b = pieces.request();
        if (used_whole != used_split || a.method != b.method || a.target != b.target || a.headers != b.headers || a.body != b.body)
            __builtin_trap();
        if (a.body.size() > limits.body || a.headers.size() > limits.headers || a.method.empty() || a.target.empty()) __builtin_trap();
    }
    if (whole.failed() && (whole.error_status() < 400 || whole.error_message().empty())) __builtin_trap();
    return 0;
}
