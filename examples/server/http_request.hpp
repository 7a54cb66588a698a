// An HTTP/1.1 request parser that holds bytes a client has not earned: the head is bounded
// (request line, header bytes, header count), and so is the body however it is framed
// (Content-Length or chunked), so a hostile client costs at most the limits in memory.
//
// Incremental: feed() consumes bytes as they arrive and stops at the end of one request, so that
// pipelined requests stay in the caller's buffer for the next parse. Refusals carry the status
// to answer (400, 411, 413, 414, 431, 501, 505) and a message that says what was wrong.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::server::http {

struct Limits {
    std::size_t request_line = 8 * 1024;  // method, target and version (more: 414)
    std::size_t head = 32 * 1024;         // request line and header lines together (more: 431)
    std::size_t headers = 100;            // header fields (more: 431)
    std::size_t body = 1 << 20;           // however framed (more: 413)
};

inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

// Whether a comma-separated header value (Connection, Expect) holds `token`, in any case.
inline bool has_token(std::string_view list, std::string_view token) {
    while (!list.empty()) {
        const std::size_t comma = std::min(list.find(','), list.size());
        std::string_view item = list.substr(0, comma);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (equals_ignoring_case(item, token)) return true;
        list.remove_prefix(std::min(comma + 1, list.size()));
    }
    return false;
}

struct Request {
    std::string method, target, path;
    int minor_version = 1;  // HTTP/1.<minor>
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    bool body_framed = false;  // a Content-Length or chunked body, even an empty one

    // The first value of a header, in any case; empty when absent.
    std::string_view header(std::string_view name) const {
        for (const auto& [n, v] : headers)
            if (equals_ignoring_case(n, name)) return v;
        return {};
    }
    bool has_header(std::string_view name) const {
        return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return equals_ignoring_case(h.first, name); });
    }
    // HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes unless told to keep it.
    bool keep_alive() const {
        const std::string_view connection = header("Connection");
        return minor_version >= 1 ? !has_token(connection, "close") : has_token(connection, "keep-alive");
    }
    bool expects_continue() const { return minor_version >= 1 && has_token(header("Expect"), "100-continue"); }
};

class RequestParser {
public:
    enum class State { head, body, chunk_size, chunk_data, chunk_end, trailers, complete, failed };

    explicit RequestParser(Limits limits = {}) : limits_(limits) {}

    // Consumes what it can of `data`: up to the end of one request (then state() is complete),
    // or all of it. Returns the bytes consumed.
    std::size_t feed(std::string_view data) {
        std::size_t used = 0;
        while (used < data.size() && state_ != State::complete && state_ != State::failed) {
            const std::string_view rest = data.substr(used);
            switch (state_) {
                case State::head: used += feed_head(rest); break;
                case State::body: used += feed_body(rest, State::complete); break;
                case State::chunk_size:
                case State::chunk_end:
                case State::trailers: used += feed_line(rest); break;
                case State::chunk_data: used += feed_body(rest, State::chunk_end); break;
                case State::complete:
                case State::failed: break;
            }
        }
        return used;
    }

    State state() const { return state_; }
    bool complete() const { return state_ == State::complete; }
    bool failed() const { return state_ == State::failed; }
    // The head is parsed (the body may still be coming): where `Expect: 100-continue` is answered.
    bool head_complete() const { return state_ != State::head && state_ != State::failed; }
    // Whether any byte of a request has arrived.
    bool started() const { return state_ != State::head || head_bytes_ > 0; }
    int error_status() const { return error_status_; }
    const std::string& error_message() const { return error_message_; }
    const Request& request() const { return request_; }

    // The complete request; the parser starts over for the next one.
    Request take() {
        Request r = std::move(request_);
        *this = RequestParser(limits_);
        return r;
    }

private:
    // Body bytes, up to the `remaining_` the length or the chunk's size allows; then `next`.
    std::size_t feed_body(std::string_view data, State next) {
        const std::size_t n = std::min(data.size(), remaining_);
        request_.body.append(data.data(), n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = next;
        return n;
    }

    // Lines end at LF (a CR before it is dropped), as RFC 9112 lets a server accept. Appends to
    // the line being read, keeping at most `limit` bytes of it (line_too_long_ says when there were
    // more); returns the bytes used and whether the line is whole.
    std::pair<std::size_t, bool> take_line(std::string_view data, std::size_t limit) {
        const std::size_t lf = data.find('\n');
        const std::size_t n = lf == std::string_view::npos ? data.size() : lf + 1;
        const std::size_t room = limit + 2 > line_.size() ? limit + 2 - line_.size() : 0;  // the line, CR and LF
        line_.append(data.data(), std::min(n, room));
        if (lf == std::string_view::npos) {
            line_too_long_ = line_.size() > limit + 1;
            return {n, false};
        }
        if (n > room) {
            line_too_long_ = true;
            return {n, false};
        }
        line_.pop_back();
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        line_too_long_ = line_.size() > limit;
        return {n, !line_too_long_};
    }

    std::size_t feed_head(std::string_view data) {
        const bool first = request_.method.empty();
        const auto [n, whole] = take_line(data, first ? limits_.request_line : limits_.head);
        head_bytes_ += n;
        if (first && line_too_long_) {
            fail(414, "the request line is longer than " + std::to_string(limits_.request_line) + " bytes");
        } else if (line_too_long_ || head_bytes_ > limits_.head) {
            fail(431, "the request's header is larger than " + std::to_string(limits_.head) + " bytes");
        } else if (whole) {
            const std::string line = std::exchange(line_, {});
            if (first && line.empty()) return n;  // RFC 9112: empty lines before a request are ignored (they count to the limit)
            if (first) request_line(line);
            else if (line.empty()) end_of_head();
            else header_line(line);
        }
        return n;
    }

    void request_line(std::string_view line) {
        const std::size_t a = line.find(' ');
        const std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
        if (b == std::string_view::npos || line.find(' ', b + 1) != std::string_view::npos)
            return fail(400, "the request line is not 'METHOD target HTTP/1.x'");
        const std::string_view method = line.substr(0, a), target = line.substr(a + 1, b - a - 1), version = line.substr(b + 1);
        if (method.empty() || !std::all_of(method.begin(), method.end(), is_token_char)) return fail(400, "the request method is not a token");
        if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) { return c > ' ' && c != 0x7f; }))
            return fail(400, "the request target is empty or holds control characters");
        if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' || version[5] > '9' ||
            version[7] < '0' || version[7] > '9')
            return fail(400, "the request line's version is not HTTP/x.y");
        if (version[5] != '1') return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
        request_.method = method;
        request_.target = target;
        request_.path = target.substr(0, target.find('?'));
        request_.minor_version = version[7] - '0';
    }

    void header_line(std::string_view line) {
        if (line.front() == ' ' || line.front() == '\t') return fail(400, "a header line is folded (obsolete line folding is refused)");
        if (request_.headers.size() >= limits_.headers)
            return fail(431, "the request has more than " + std::to_string(limits_.headers) + " header fields");
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) return fail(400, "a header line has no 'name:'");
        const std::string_view name = line.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), is_token_char)) return fail(400, "a header name holds characters other than a token's");
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
        if (std::any_of(value.begin(), value.end(), [](char c) { return (c >= 0 && c < ' ' && c != '\t') || c == 0x7f; }))
            return fail(400, "the header '" + std::string(name) + "' holds control characters");
        request_.headers.emplace_back(name, value);
    }

    // Decides how the body is framed. Both framings at once, or lengths that disagree, are
    // refused: a proxy in front could read them another way (request smuggling).
    void end_of_head() {
        std::string_view length;
        bool chunked = false;
        for (const auto& [name, value] : request_.headers) {
            if (equals_ignoring_case(name, "Content-Length")) {
                if (!length.empty() && value != length) return fail(400, "the request has Content-Length headers that disagree");
                length = value;
                if (length.empty()) return fail(400, "Content-Length is empty");
            } else if (equals_ignoring_case(name, "Transfer-Encoding")) {
                if (chunked || !equals_ignoring_case(value, "chunked"))
                    return fail(501, "Transfer-Encoding '" + value + "' is not served (only chunked)");
                chunked = true;
            }
        }
        if (chunked && !length.empty()) return fail(400, "the request has both Content-Length and Transfer-Encoding");
        if (chunked && request_.minor_version == 0) return fail(400, "HTTP/1.0 has no chunked transfer coding");
        request_.body_framed = chunked || !length.empty();
        if (chunked) {
            state_ = State::chunk_size;
            return;
        }
        std::uint64_t n = 0;
        for (const char c : length) {
            if (c < '0' || c > '9') return fail(400, "Content-Length '" + std::string(length) + "' is not a number");
            if (n > limits_.body) break;  // already too large; no overflow
            n = n * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (n > limits_.body) return fail(413, "the request body is larger than the server accepts (" + std::to_string(limits_.body) + " bytes, --max-body)");
        remaining_ = static_cast<std::size_t>(n);
        state_ = remaining_ == 0 ? State::complete : State::body;
    }

    std::size_t feed_line(std::string_view data) {
        constexpr std::size_t chunk_line_limit = 1024;  // a size and its extensions
        const bool trailers = state_ == State::trailers;
        const auto [n, whole] = take_line(data, trailers ? limits_.head : chunk_line_limit);
        head_bytes_ += trailers ? n : 0;
        if (line_too_long_ || head_bytes_ > limits_.head) {
            fail(trailers ? 431 : 400, trailers ? "the request's trailers are too large" : "a chunk-size line is longer than 1024 bytes");
            return n;
        }
        if (!whole) return n;
        const std::string line = std::exchange(line_, {});
        if (state_ == State::chunk_end) {
            if (!line.empty()) fail(400, "a chunk's data is longer than its size");
            else state_ = State::chunk_size;
        } else if (trailers) {
            if (line.empty()) state_ = State::complete;  // trailer fields are read and dropped
        } else {
            chunk_size(line);
        }
        return n;
    }

    void chunk_size(std::string_view line) {
        const std::string_view digits = line.substr(0, line.find(';'));
        std::uint64_t size = 0;
        if (digits.empty()) return fail(400, "a chunk has no size");
        for (const char c : digits) {
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) return fail(400, "a chunk size is not hexadecimal");
            size = size * 16 + static_cast<std::uint64_t>(d);
            if (size > limits_.body) break;
        }
        if (size > limits_.body - request_.body.size())
            return fail(413, "the request body is larger than the server accepts (" + std::to_string(limits_.body) + " bytes, --max-body)");
        remaining_ = static_cast<std::size_t>(size);
        state_ = size == 0 ? State::trailers : State::chunk_data;
    }

    static bool is_token_char(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    }

    void fail(int status, std::string message) {
        if (state_ == State::failed) return;
        state_ = State::failed;
        error_status_ = status;
        error_message_ = std::move(message);
    }

    Limits limits_;
    State state_ = State::head;
    Request request_;
    std::string line_;
    bool line_too_long_ = false;
    std::size_t head_bytes_ = 0, remaining_ = 0;
    int error_status_ = 0;
    std::string error_message_;
};

}  // namespace tessera::server::http
