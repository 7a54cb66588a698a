// examples/server/http_request.hpp: the HTTP/1.1 request parser the server reads every byte
// through. Parses must not depend on how the bytes are split across reads, and every limit must
// hold at its byte.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../examples/server/http_request.hpp"

using tessera::server::http::Limits;
using tessera::server::http::Request;
using tessera::server::http::RequestParser;

namespace {

struct Parsed {
    RequestParser parser;
    std::size_t used = 0;
};

// Feeds `bytes` in pieces of `step` bytes (0: all at once), as reads would deliver them.
Parsed parse(const std::string& bytes, std::size_t step = 0, Limits limits = {}) {
    Parsed p{RequestParser(limits)};
    while (p.used < bytes.size() && !p.parser.complete() && !p.parser.failed()) {
        const std::size_t n = step == 0 ? bytes.size() - p.used : std::min(step, bytes.size() - p.used);
        const std::size_t used = p.parser.feed(std::string_view(bytes).substr(p.used, n));
        REQUIRE(used <= n);
        p.used += used;
        if (used < n) break;  // stopped at the end of a request or at a refusal
    }
    return p;
}

void check_refused(const std::string& bytes, int status, const std::string& words, Limits limits = {}) {
    for (const std::size_t step : {std::size_t{0}, std::size_t{1}, std::size_t{7}}) {
        INFO("step " << step << ": " << bytes.substr(0, 120));
        const Parsed p = parse(bytes, step, limits);
        REQUIRE(p.parser.failed());
        CHECK(p.parser.error_status() == status);
        CHECK_THAT(p.parser.error_message(), Catch::Contains(words));
    }
}

}  // namespace

TEST_CASE("requests parse the same fed whole, byte by byte or in odd pieces, and stop where the next begins") {
    const std::string first =
        "POST /v1/completions?x=1 HTTP/1.1\r\nHost: test\r\nContent-Type:application/json \r\nContent-Length: 11\r\n\r\n{\"a\": true}";
    const std::string chunked =
        "POST /tokenize HTTP/1.1\nTransfer-Encoding: chunked\n\n4;ext=1\r\nabcd\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n";
    const std::string next = "GET /health HTTP/1.1\r\n\r\n";
    for (const std::size_t step : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{13}}) {
        INFO("step " << step);
        Parsed p = parse(first + next, step);
        REQUIRE(p.parser.complete());
        CHECK(p.used == first.size());
        Request r = p.parser.take();
        CHECK(r.method == "POST");
        CHECK(r.target == "/v1/completions?x=1");
        CHECK(r.path == "/v1/completions");
        CHECK(r.header("content-type") == "application/json");  // any case; the value trimmed
        CHECK(r.body == "{\"a\": true}");
        CHECK(r.body_framed);
        CHECK(r.keep_alive());

        Parsed c = parse(chunked + next, step);
        REQUIRE(c.parser.complete());
        CHECK(c.used == chunked.size());
        CHECK(c.parser.request().body == "abcd0123456789");
        CHECK(!c.parser.request().has_header("Trailer"));  // trailers are dropped
    }
    // The parser starts over after take(): the next request parses from where the first ended.
    RequestParser parser;
    const std::string both = first + next;
    const std::size_t used = parser.feed(both);
    parser.take();
    CHECK(parser.feed(std::string_view(both).substr(used)) == next.size());
    CHECK(parser.complete());
    CHECK(parser.request().path == "/health");
    CHECK(!parser.request().body_framed);
}

TEST_CASE("every limit holds at its byte: request line 414, head and header count 431, body 413 however framed") {
    Limits limits;
    limits.request_line = 64;
    limits.head = 256;
    limits.headers = 4;
    limits.body = 100;
    const std::string line = "GET /" + std::string(64 - 14, 'a') + " HTTP/1.1";  // exactly 64
    REQUIRE(line.size() == 64);
    CHECK(parse(line + "\r\n\r\n", 1, limits).parser.complete());
    check_refused("GET /a" + std::string(64 - 14, 'a') + " HTTP/1.1\r\n\r\n", 414, "longer than 64 bytes", limits);
    check_refused("GET / HTTP/1.1\r\nX: " + std::string(300, 'b') + "\r\n\r\n", 431, "larger than 256 bytes", limits);
    check_refused("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n", 431, "more than 4 header fields", limits);
    check_refused(std::string(300, '\n') + "GET / HTTP/1.1\r\n\r\n", 431, "larger than 256", limits);  // leading empty lines count

    CHECK(parse("POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x'), 3, limits).parser.complete());
    check_refused("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413, "larger than the server accepts (100 bytes", limits);
    check_refused("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999999\r\n\r\n", 413, "--max-body", limits);
    const std::string chunks = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n32\r\n" + std::string(50, 'x') + "\r\n32\r\n" + std::string(50, 'y') + "\r\n";
    CHECK(parse(chunks + "0\r\n\r\n", 1, limits).parser.complete());
    check_refused(chunks + "1\r\nz\r\n0\r\n\r\n", 413, "--max-body", limits);
    check_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n", 413, "--max-body", limits);
    check_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;" + std::string(2000, 'e') + "\r\n", 400, "chunk-size line", limits);
}

TEST_CASE("framing that a proxy could read another way, and malformed heads, are refused by name") {
    check_refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both Content-Length and Transfer-Encoding");
    check_refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400, "disagree");
    check_refused("POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\n", 400, "not a number");
    check_refused("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, "Content-Length is empty");
    check_refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "only chunked");
    check_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501, "only chunked");
    check_refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0 has no chunked");
    check_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", 400, "longer than its size");
    check_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-3\r\n", 400, "not hexadecimal");
    check_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n;x\r\n", 400, "no size");
    check_refused("GET / HTTP/2.0\r\n\r\n", 505, "only HTTP/1.0 and HTTP/1.1");
    check_refused("GET / HTTP/1.12\r\n\r\n", 400, "HTTP/x.y");
    check_refused("GET /\r\n\r\n", 400, "METHOD target HTTP/1.x");
    check_refused("GET  / HTTP/1.1\r\n\r\n", 400, "METHOD target HTTP/1.x");
    check_refused("G(T / HTTP/1.1\r\n\r\n", 400, "method is not a token");
    check_refused("GET /\x01 HTTP/1.1\r\n\r\n", 400, "control characters");
    check_refused("GET / HTTP/1.1\r\nHost: a\r\n  folded\r\n\r\n", 400, "folded");
    check_refused("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "token");
    check_refused("GET / HTTP/1.1\r\n: a\r\n\r\n", 400, "no 'name:'");
    check_refused(std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26), 400, "'X' holds control characters");
}

TEST_CASE("keep-alive and 100-continue follow the version and the Connection and Expect tokens") {
    const auto request = [](const std::string& head) {
        Parsed p = parse(head + "\r\n\r\n");
        REQUIRE(p.parser.complete());
        return p.parser.take();
    };
    CHECK(request("GET / HTTP/1.1").keep_alive());
    CHECK(!request("GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE").keep_alive());
    CHECK(!request("GET / HTTP/1.0").keep_alive());
    CHECK(request("GET / HTTP/1.0\r\nConnection: keep-alive").keep_alive());
    CHECK(request("GET / HTTP/1.1\r\nConnection: closed").keep_alive());  // a token, not a prefix

    Parsed p = parse("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n");
    CHECK(p.parser.head_complete());
    CHECK(!p.parser.complete());
    CHECK(p.parser.request().expects_continue());
    CHECK(!parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n").parser.request().expects_continue());
    CHECK(!RequestParser().started());
    RequestParser started;
    started.feed("G");
    CHECK(started.started());
}
