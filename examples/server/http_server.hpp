// A small HTTP/1.1 server that slow, oversized and departing clients cannot take down.
//
// One event-loop thread (epoll) owns every socket: it accepts, reads and parses requests
// (http_request.hpp bounds the memory a request may take), enforces the read and write deadlines
// and the connection limits, and notices a client leaving. Only whole requests reach the worker
// threads, so a client that sends slowly holds a few bytes of memory and no thread; a handler that
// answers at once and never blocks (/health, /metrics) runs on the loop itself and answers under
// any load. A handler answers through its Exchange: one response, or a stream of pieces (chunked
// for HTTP/1.1, delimited by the connection's end for HTTP/1.0). A client that leaves before its
// response is done calls the exchange's on_gone, which is how a completion nobody waits for is
// cancelled.
//
// Telling a half-closed client (done sending, still reading) from a departed one: both arrive as
// a FIN. The loop then sends "HTTP/1.1 ", the first bytes of any response it will give: a client
// that is still there reads on, one that has closed its socket answers with a reset, which the
// loop sees at once. Why not cpp-httplib (Debian's 0.11.4): a thread per connection, bodies read
// whole, and no way to learn that a client has gone (docs/architecture.md, "The server").
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http_request.hpp"

namespace tessera::server::http {

using Clock = std::chrono::steady_clock;

inline const char* reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 414: return "URI Too Long";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
    }
}

struct Response {
    int status = 200;
    std::string content_type = "application/json";
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;

    void set_header(std::string name, std::string value) {
        for (auto& [n, v] : headers) {
            if (equals_ignoring_case(n, name)) {
                v = std::move(value);
                return;
            }
        }
        headers.emplace_back(std::move(name), std::move(value));
    }
    bool has_header(std::string_view name) const {
        for (const auto& [n, v] : headers)
            if (equals_ignoring_case(n, name)) return true;
        return false;
    }
};

struct Options {
    std::string host = "127.0.0.1";
    int port = 0;  // 0: any free port (Server::port() says which)
    Limits limits;
    double read_timeout = 30;   // seconds to receive a whole request, from when the connection waits for one (idle included)
    double write_timeout = 30;  // seconds a client may take no byte of a response it is owed before it is dropped
    std::size_t max_connections = 1024, max_connections_per_client = 256;
    std::size_t workers = 16;
    // The body of a refusal the loop makes itself (a malformed or oversized request, too many connections).
    std::function<Response(int status, const std::string& message)> refusal = [](int status, const std::string& message) {
        return Response{status, "text/plain", {}, message + "\n"};
    };
    // Told of each such refusal, for the log; status 0: a connection dropped without an answer.
    std::function<void(const std::string& client, int status, const std::string& message)> refused;
};

namespace detail {

inline std::chrono::steady_clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

inline std::string http_date() {
    char text[64];
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    return {text, std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc)};
}

// A response's status line and header fields.
inline std::string head_of(const Response& r, const std::string& framing, bool keep_alive, int minor_version) {
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + ' ' + reason_phrase(r.status) + "\r\nDate: " + http_date() + "\r\n";
    if (!r.content_type.empty()) head += "Content-Type: " + r.content_type + "\r\n";
    for (const auto& [name, value] : r.headers) head += name + ": " + value + "\r\n";
    head += framing;
    if (!keep_alive) head += "Connection: close\r\n";
    else if (minor_version == 0) head += "Connection: keep-alive\r\n";
    return head + "\r\n";
}

}  // namespace detail

class Server;

// One client connection. The loop alone reads it and owns its parser; writes come from the loop
// or a worker, under the mutex.
class Connection {
public:
    enum class Phase { reading, serving, lingering };
    enum class Answer { none, streaming, done };

    Connection(Server& server, int fd, std::string client, const Limits& limits)
        : server_(server), fd_(fd), client_(std::move(client)), parser_(limits) {}

private:
    friend class Server;
    friend class Exchange;

    // Sends what is buffered; the caller holds the mutex. False when the client has gone.
    bool flush_locked() {
        while (out_pos_ < out_.size() && !closed_) {
            const ssize_t n = ::send(fd_, out_.data() + out_pos_, out_.size() - out_pos_, MSG_NOSIGNAL);
            if (n > 0) {
                out_pos_ += static_cast<std::size_t>(n);
                last_progress_ = Clock::now();
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                break;
            } else {
                broken_ = true;
                break;
            }
        }
        if (out_pos_ == out_.size()) {
            out_.clear();
            out_pos_ = 0;
        } else if (out_pos_ > (1 << 16) && out_pos_ > out_.size() / 2) {
            out_.erase(0, out_pos_);
            out_pos_ = 0;
        }
        return !broken_ && !closed_;
    }
    std::size_t pending_locked() const { return out_.size() - out_pos_; }

    // Queues bytes to send. The write deadline counts from when the client is first owed bytes.
    void queue_locked(std::string_view bytes) {
        if (pending_locked() == 0) last_progress_ = Clock::now();
        out_.append(bytes);
    }
    // Queues the start of a response, less the "HTTP/1.1 " a probe has sent already.
    void queue_head_locked(std::string_view head) { queue_locked(head.substr(probed_ ? 9 : 0)); }

    Server& server_;
    int fd_;
    const std::string client_;

    // The loop's own.
    std::string in_;
    RequestParser parser_;
    Phase phase_ = Phase::reading;
    Clock::time_point deadline_;  // reading: the request's; lingering: the close's
    bool fin_ = false;            // a FIN arrived: the client sends nothing more
    bool eof_ = false;            // and everything before it has been read
    bool continue_sent_ = false;
    std::uint32_t events_ = 0;
    bool watched_ = false;  // added to the epoll set
    bool counted_ = true;   // in the connection limits
    std::uint64_t serial_ = 0;  // 1, 2, ...: which connection an event is for

    // Shared with the worker that serves the current request.
    std::mutex mutex_;
    std::condition_variable drained_;
    std::string out_;
    std::size_t out_pos_ = 0;
    Clock::time_point last_progress_ = Clock::now();
    bool closed_ = false, broken_ = false, probed_ = false, keep_alive_ = true;
    Answer answer_ = Answer::none;
    std::function<void()> on_gone_;
};

// One request and its response, handed to a handler.
class Exchange {
public:
    Exchange(std::shared_ptr<Connection> c, Request r) : connection_(std::move(c)), request_(std::move(r)) {}

    const Request& request() const { return request_; }
    const std::string& client() const { return connection_->client_; }
    int status() const { return status_; }
    bool responded() const { return status_ != 0; }

    // The whole response. False when the client has gone.
    bool respond(const Response& r) {
        Connection& c = *connection_;
        std::unique_lock lock(c.mutex_);
        if (responded() || c.closed_) return false;
        status_ = r.status;
        c.keep_alive_ = c.keep_alive_ && request_.keep_alive();
        c.queue_head_locked(detail::head_of(r, "Content-Length: " + std::to_string(r.body.size()) + "\r\n", c.keep_alive_, request_.minor_version));
        c.queue_locked(r.body);
        c.answer_ = Connection::Answer::done;
        return finish_write(lock);
    }

    // A response whose body follows in write()s and ends with finish(): chunked for HTTP/1.1,
    // for HTTP/1.0 (which has no chunks) ended by closing the connection.
    bool start_stream(const Response& head) {
        Connection& c = *connection_;
        std::unique_lock lock(c.mutex_);
        if (responded() || c.closed_) return false;
        status_ = head.status;
        chunked_ = request_.minor_version >= 1;
        c.keep_alive_ = c.keep_alive_ && chunked_ && request_.keep_alive();
        c.queue_head_locked(detail::head_of(head, chunked_ ? "Transfer-Encoding: chunked\r\n" : "", c.keep_alive_, request_.minor_version));
        c.answer_ = Connection::Answer::streaming;
        return finish_write(lock);
    }

    // A piece of the stream. Waits while the client is more than 256 KiB behind (it has
    // --write-timeout to catch up); false once the client has gone.
    bool write(std::string_view piece) {
        Connection& c = *connection_;
        std::unique_lock lock(c.mutex_);
        if (c.answer_ != Connection::Answer::streaming || c.closed_) return false;
        if (piece.empty()) return !c.broken_;
        if (chunked_) {
            char size[20];
            c.queue_locked({size, static_cast<std::size_t>(std::snprintf(size, sizeof size, "%zx\r\n", piece.size()))});
        }
        c.queue_locked(piece);
        if (chunked_) c.queue_locked("\r\n");
        constexpr std::size_t behind = 256 * 1024;
        const bool sent = c.flush_locked();
        if (!sent || c.pending_locked() > 0) wake_loop(lock);  // the loop closes it, or sends the rest
        if (!sent) return false;
        while (c.pending_locked() > behind && !c.closed_ && !c.broken_) c.drained_.wait_for(lock, std::chrono::milliseconds(100));
        return !c.closed_ && !c.broken_;
    }

    void finish() {
        Connection& c = *connection_;
        std::unique_lock lock(c.mutex_);
        if (c.answer_ != Connection::Answer::streaming) return;
        if (chunked_) c.queue_locked("0\r\n\r\n");
        c.answer_ = Connection::Answer::done;
        finish_write(lock);
    }

    bool gone() const {
        std::lock_guard lock(connection_->mutex_);
        return connection_->closed_ || connection_->broken_;
    }
    // Called once from the event loop when the client leaves before the response is done; at
    // once if it has left already.
    void on_gone(std::function<void()> f) {
        {
            std::lock_guard lock(connection_->mutex_);
            if (!connection_->closed_) {
                connection_->on_gone_ = std::move(f);
                return;
            }
        }
        f();
    }

private:
    bool finish_write(std::unique_lock<std::mutex>& lock) {
        const bool ok = connection_->flush_locked();
        wake_loop(lock);
        return ok;
    }
    inline void wake_loop(std::unique_lock<std::mutex>& lock);

    std::shared_ptr<Connection> connection_;
    Request request_;
    int status_ = 0;
    bool chunked_ = false;
};

class Server {
public:
    using Handler = std::function<void(Exchange&)>;
    using Quick = std::function<bool(Exchange&)>;  // answers on the loop and says true, or says false

    // Binds and listens (throws std::runtime_error naming the address when it cannot); serving
    // starts with run(). `serve` runs on a worker; `quick` first, on the loop.
    Server(Options options, Handler serve, Quick quick = {}) : options_(std::move(options)), serve_(std::move(serve)), quick_(std::move(quick)) {
        raise_file_limit();
        listen_on(options_.host, options_.port);
        epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
        wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (epoll_ < 0 || wake_fd_ < 0) throw std::runtime_error(std::string("the event loop cannot start: ") + std::strerror(errno));
        watch(listen_fd_, EPOLLIN);
        watch(wake_fd_, EPOLLIN);
    }
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    ~Server() {
        for (const int fd : {listen_fd_, wake_fd_, epoll_})
            if (fd >= 0) ::close(fd);
    }

    int port() const { return port_; }

    // Serves until stop(); then closes every connection (a handler still running sees its client
    // gone) and returns once every worker has finished.
    void run() {
        for (std::size_t i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
        loop();
        {
            std::lock_guard lock(queue_mutex_);
            queue_.clear();
            workers_stop_ = true;
        }
        queued_.notify_all();
        for (auto& t : workers_) t.join();
        workers_.clear();
    }
    void stop() {
        stopping_ = true;
        wake();
    }

    std::size_t connections() const { return connection_count_; }

private:
    friend class Exchange;

    static void raise_file_limit() {  // a connection is a file descriptor
        rlimit limit{};
        if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
            limit.rlim_cur = limit.rlim_max;
            ::setrlimit(RLIMIT_NOFILE, &limit);
        }
    }

    void listen_on(const std::string& host, int port) {
        addrinfo hints{}, *found = nullptr;
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        const std::string where = host + ":" + std::to_string(port);
        if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
            throw std::runtime_error("cannot listen on " + where + ": " + ::gai_strerror(rc));
        std::string error = "no address";
        for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
            const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) continue;
            const int one = 1;
            ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
                listen_fd_ = fd;
            } else {
                error = std::strerror(errno);
                ::close(fd);
            }
        }
        ::freeaddrinfo(found);
        if (listen_fd_ < 0) throw std::runtime_error("cannot listen on " + where + ": " + error);
        sockaddr_storage bound{};
        socklen_t size = sizeof bound;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &size);
        port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port : reinterpret_cast<sockaddr_in&>(bound).sin_port);
    }

    void watch(int fd, std::uint32_t events) {
        epoll_event e{};
        e.events = events;
        e.data.fd = fd;
        ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &e);
    }
    void set_events(Connection& c, std::uint32_t events) {
        if (events == c.events_) return;
        epoll_event e{};
        e.events = events;
        e.data.u64 = c.serial_ << 32 | static_cast<std::uint32_t>(c.fd_);
        ::epoll_ctl(epoll_, c.events_ == 0 && !c.watched_ ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd_, &e);
        c.watched_ = true;
        c.events_ = events;
    }

    void wake() {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
    }
    void wake_for(std::shared_ptr<Connection> c) {
        {
            std::lock_guard lock(woken_mutex_);
            woken_.push_back(std::move(c));
        }
        wake();
    }

    void loop() {
        std::vector<epoll_event> events(256);
        auto next_sweep = Clock::now();
        std::optional<Clock::time_point> stop_by;
        for (;;) {
            if (stopping_) {  // what is answered goes out (for a moment); the rest closes
                if (!stop_by) {
                    stop_by = Clock::now() + std::chrono::seconds(2);
                    set_listening(false);
                }
                std::vector<std::shared_ptr<Connection>> idle;
                for (const auto& [fd, c] : connections_) {
                    std::lock_guard lock(c->mutex_);
                    if (c->phase_ != Connection::Phase::serving && c->pending_locked() == 0) idle.push_back(c);
                }
                for (auto& c : idle) close(c);
                if (connections_.empty() || Clock::now() > *stop_by) break;
            }
            const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 100);
            for (int i = 0; i < n; ++i) {
                // A connection's events carry its serial number as well as its descriptor: one
                // closed earlier in this batch may have had its number reused by an accept since.
                const std::uint64_t data = events[static_cast<std::size_t>(i)].data.u64;
                const int fd = static_cast<int>(data & 0xffffffffU);
                const std::uint32_t what = events[static_cast<std::size_t>(i)].events;
                if (data >> 32 == 0 && fd == listen_fd_) {
                    accept_all();
                } else if (data >> 32 == 0 && fd == wake_fd_) {
                    std::uint64_t count;
                    [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &count, sizeof count);
                } else if (const auto it = connections_.find(fd); it != connections_.end() && it->second->serial_ == data >> 32) {
                    on_event(it->second, what);
                }
            }
            std::vector<std::shared_ptr<Connection>> woken;
            {
                std::lock_guard lock(woken_mutex_);
                woken.swap(woken_);
            }
            for (auto& c : woken)
                if (connections_.count(c->fd_) && connections_.at(c->fd_) == c) progress(c);
            if (Clock::now() >= next_sweep && !stopping_) {
                sweep();
                next_sweep = Clock::now() + std::chrono::milliseconds(100);
            }
        }
        while (!connections_.empty()) close(connections_.begin()->second);
    }

    void accept_all() {
        for (;;) {
            sockaddr_storage peer{};
            socklen_t size = sizeof peer;
            const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &size, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno == EMFILE || errno == ENFILE) {  // out of descriptors: stop accepting until a sweep
                    set_listening(false);
                }
                return;
            }
            char address[INET6_ADDRSTRLEN] = "?";
            if (peer.ss_family == AF_INET) ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in&>(peer).sin_addr, address, sizeof address);
            if (peer.ss_family == AF_INET6) ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6&>(peer).sin6_addr, address, sizeof address);
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // a streamed token goes out at once
            auto c = std::make_shared<Connection>(*this, fd, address, options_.limits);
            c->serial_ = ++serials_;
            connections_[fd] = c;
            ++connection_count_;
            c->deadline_ = Clock::now() + detail::seconds(options_.read_timeout);
            set_events(*c, EPOLLIN | EPOLLRDHUP);
            std::size_t& mine = per_client_[c->client_];
            ++mine;
            if (connection_count_ > options_.max_connections || mine > options_.max_connections_per_client) {
                const bool all = connection_count_ > options_.max_connections;
                --connection_count_;  // a refused connection holds no place while it closes
                if (--mine == 0) per_client_.erase(c->client_);
                c->counted_ = false;
                refuse(c, 503, all ? "the server has too many connections (--max-connections); retry later"
                                   : "this client has too many connections (--max-connections-per-client); close some or retry later");
            }
        }
    }
    void set_listening(bool on) {
        if (on == listening_) return;
        listening_ = on;
        epoll_event e{};
        e.events = EPOLLIN;
        e.data.fd = listen_fd_;
        ::epoll_ctl(epoll_, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listen_fd_, &e);
    }

    void on_event(const std::shared_ptr<Connection>& c, std::uint32_t what) {
        if (what & (EPOLLERR | EPOLLHUP)) return close(c);  // reset, or both directions closed
        if ((what & EPOLLRDHUP) && !c->fin_) {  // the client sends nothing more (what it sent may still wait)
            c->fin_ = true;
            if (c->phase_ == Connection::Phase::serving) probe(*c);
        }
        if ((what & (EPOLLIN | EPOLLRDHUP)) && !read_from(c)) return;
        progress(c);
    }

    // Reads what the connection has; false when it was closed.
    bool read_from(const std::shared_ptr<Connection>& c) {
        Connection& k = *c;
        char buffer[64 * 1024];
        // While a request is served, pipelined bytes wait in the kernel beyond one buffer's worth.
        while (!k.eof_ && (k.phase_ != Connection::Phase::serving || k.in_.size() < sizeof buffer)) {
            const ssize_t n = ::recv(k.fd_, buffer, sizeof buffer, 0);
            if (n > 0) {
                if (k.phase_ == Connection::Phase::lingering) continue;  // discarded: the answer is given
                k.in_.append(buffer, static_cast<std::size_t>(n));
                if (k.phase_ == Connection::Phase::reading && !parse(c)) return false;
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            if (n < 0) return close(c), false;
            k.eof_ = k.fin_ = true;
            // Between requests a clean close; within one, a request that will never end.
            if (k.phase_ != Connection::Phase::serving) return close(c), false;
            probe(k);
        }
        return true;
    }

    // A FIN while a request is served: the first bytes of its answer find out whether the client
    // still reads (half-closed) or has gone (then a reset comes back).
    static void probe(Connection& c) {
        std::lock_guard lock(c.mutex_);
        if (c.answer_ != Connection::Answer::none || c.probed_) return;
        c.probed_ = true;
        c.queue_locked("HTTP/1.1 ");
        c.flush_locked();
    }

    // Feeds the parser from what is buffered; dispatches a whole request, refuses a bad one.
    // False when the connection was closed.
    bool parse(const std::shared_ptr<Connection>& c) {
        Connection& k = *c;
        const std::size_t used = k.parser_.feed(k.in_);
        k.in_.erase(0, used);
        if (k.parser_.failed()) {
            refuse(c, k.parser_.error_status(), k.parser_.error_message());
            return connections_.count(k.fd_) > 0;
        }
        if (!k.parser_.complete()) {
            if (k.parser_.head_complete() && !k.continue_sent_ && k.parser_.request().expects_continue()) {
                k.continue_sent_ = true;
                std::lock_guard lock(k.mutex_);
                k.queue_locked("HTTP/1.1 100 Continue\r\n\r\n");
                k.flush_locked();
            }
            return true;
        }
        k.phase_ = Connection::Phase::serving;
        auto x = std::make_shared<Exchange>(c, k.parser_.take());
        if (x->request().method == "POST" && !x->request().body_framed) {
            refuse(c, 411, "a POST needs a body with Content-Length or Transfer-Encoding: chunked");
            return connections_.count(k.fd_) > 0;
        }
        if (quick_ && quick_(*x)) return true;
        {
            std::lock_guard lock(queue_mutex_);
            queue_.push_back(std::move(x));
        }
        queued_.notify_one();
        return true;
    }

    Response refusal(int status, const std::string& message) const {
        Response r = options_.refusal(status, message);
        r.status = status;
        return r;
    }

    // Answers from the loop and closes after: the rest of what the client sends is not read.
    void refuse(const std::shared_ptr<Connection>& c, int status, const std::string& message) {
        if (options_.refused) options_.refused(c->client_, status, message);
        const Response r = refusal(status, message);
        {
            std::lock_guard lock(c->mutex_);
            c->keep_alive_ = false;
            if (c->answer_ == Connection::Answer::none) {
                c->queue_head_locked(detail::head_of(r, "Content-Length: " + std::to_string(r.body.size()) + "\r\n", false, 1));
                c->queue_locked(r.body);
                c->answer_ = Connection::Answer::done;
            }
        }
        linger(c);
    }

    // Half-closes after the answer and reads (discarding) for a moment, so that the client reads
    // the answer before the close: closing with its bytes unread would reset the connection.
    void linger(const std::shared_ptr<Connection>& c) {
        c->phase_ = Connection::Phase::lingering;
        c->in_.clear();
        c->deadline_ = Clock::now() + std::chrono::seconds(2);
        progress(c);
    }

    // After a read or a write: sends what waits, and moves on when the response is done.
    void progress(const std::shared_ptr<Connection>& c) {
        Connection& k = *c;
        bool done = false, broken = false, keep = false;
        std::size_t pending = 0;
        {
            std::lock_guard lock(k.mutex_);
            k.flush_locked();
            broken = k.broken_;
            pending = k.pending_locked();
            done = k.answer_ == Connection::Answer::done && pending == 0;
            keep = k.keep_alive_;
        }
        k.drained_.notify_all();
        if (broken) return close(c);
        if (k.phase_ == Connection::Phase::lingering) {
            if (pending == 0 && k.eof_) return close(c);
            if (pending == 0) ::shutdown(k.fd_, SHUT_WR);
            if (pending > 0) k.deadline_ = std::max(k.deadline_, Clock::now() + std::chrono::seconds(2));
            set_events(k, (k.eof_ ? 0u : EPOLLIN) | (pending ? EPOLLOUT : 0u));
            return;
        }
        if (k.phase_ == Connection::Phase::serving && done) {
            if (!keep || stopping_) return linger(c);
            next_request(c);
            return;
        }
        const bool reads = !k.eof_ && (k.phase_ == Connection::Phase::reading || (!k.fin_ && k.in_.size() < 64 * 1024));
        set_events(k, (reads ? EPOLLIN : 0u) | (k.fin_ ? 0u : EPOLLRDHUP) | (pending ? EPOLLOUT : 0u));
    }

    void next_request(const std::shared_ptr<Connection>& c) {
        Connection& k = *c;
        {
            std::lock_guard lock(k.mutex_);
            k.answer_ = Connection::Answer::none;
            k.probed_ = false;
            k.on_gone_ = nullptr;
        }
        k.phase_ = Connection::Phase::reading;
        k.continue_sent_ = false;
        k.deadline_ = Clock::now() + detail::seconds(options_.read_timeout);
        if (!k.in_.empty() && !parse(c)) return;  // a pipelined request
        if (k.phase_ == Connection::Phase::reading && k.eof_) return close(c);  // no more requests will come
        if (connections_.count(k.fd_)) progress(c);
    }

    void sweep() {
        const auto now = Clock::now();
        std::vector<std::shared_ptr<Connection>> late, slow;
        for (const auto& [fd, c] : connections_) {
            bool stalled = false;
            {
                std::lock_guard lock(c->mutex_);
                stalled = c->pending_locked() > 0 && now - c->last_progress_ > detail::seconds(options_.write_timeout);
            }
            if (stalled || (c->phase_ == Connection::Phase::lingering && now > c->deadline_)) slow.push_back(c);
            else if (c->phase_ == Connection::Phase::reading && now > c->deadline_) late.push_back(c);
        }
        for (auto& c : slow) {
            if (c->phase_ != Connection::Phase::lingering && options_.refused)
                options_.refused(c->client_, 0, "dropped: it read nothing of its answer for --write-timeout");
            close(c);
        }
        for (auto& c : late) {
            if (!c->parser_.started()) close(c);  // an idle connection
            else refuse(c, 408, "the request did not arrive within --read-timeout");
        }
        if (!listening_ && connection_count_ < options_.max_connections) set_listening(true);
    }

    void close(const std::shared_ptr<Connection>& c) {
        std::function<void()> gone;
        {
            std::lock_guard lock(c->mutex_);
            if (c->closed_) return;
            c->closed_ = true;
            if (c->answer_ != Connection::Answer::done) gone = std::move(c->on_gone_);
            c->on_gone_ = nullptr;
            ::close(c->fd_);
        }
        c->drained_.notify_all();
        connections_.erase(c->fd_);
        if (!c->counted_) return gone ? gone() : void();
        --connection_count_;
        if (const auto it = per_client_.find(c->client_); it != per_client_.end() && --it->second == 0) per_client_.erase(it);
        if (gone) gone();
    }

    void work() {
        for (;;) {
            std::shared_ptr<Exchange> x;
            {
                std::unique_lock lock(queue_mutex_);
                queued_.wait(lock, [&] { return workers_stop_ || !queue_.empty(); });
                if (queue_.empty()) return;
                x = std::move(queue_.front());
                queue_.pop_front();
            }
            try {
                serve_(*x);
            } catch (const std::exception& e) {
                if (!x->responded()) x->respond(refusal(500, e.what()));
            }
            if (!x->responded()) x->respond(refusal(500, "the request was not answered"));
            x->finish();
        }
    }

    Options options_;
    Handler serve_;
    Quick quick_;
    int listen_fd_ = -1, epoll_ = -1, wake_fd_ = -1, port_ = 0;
    bool listening_ = true;
    std::atomic<bool> stopping_{false};
    std::unordered_map<int, std::shared_ptr<Connection>> connections_;  // by descriptor
    std::uint64_t serials_ = 0;
    std::unordered_map<std::string, std::size_t> per_client_;
    std::atomic<std::size_t> connection_count_{0};
    std::mutex woken_mutex_;
    std::vector<std::shared_ptr<Connection>> woken_;
    std::mutex queue_mutex_;
    std::condition_variable queued_;
    std::deque<std::shared_ptr<Exchange>> queue_;
    bool workers_stop_ = false;
    std::vector<std::thread> workers_;
};

inline void Exchange::wake_loop(std::unique_lock<std::mutex>&) { connection_->server_.wake_for(connection_); }

}  // namespace tessera::server::http
