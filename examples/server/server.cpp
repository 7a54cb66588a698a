// server: an OpenAI-compatible HTTP server for any model tessera runs, decoding many requests together.
//
//   server --model models/gpt2 --parallel 8 --port 8080
//   curl http://127.0.0.1:8080/v1/completions -d '{"prompt": "Hello", "max_tokens": 16, "stream": true}'
//   curl http://127.0.0.1:8080/v1/chat/completions -d '{"messages": [{"role": "user", "content": "Hi"}]}'
//
// POST /v1/completions and /v1/chat/completions (OpenAI's fields; streamed as server-sent
// events; chat through the model's own template or --chat-template-file), POST /apply-template,
// GET /v1/models, GET /health, POST /tokenize, POST /detokenize. Requests are decoded together by one engine
// thread (engine.hpp); HTTP threads parse, wait and write. The port opens before the model is
// loaded, so that /health can say "loading". SIGTERM or SIGINT: stop accepting, let what runs
// finish for --shutdown-grace seconds, cancel the rest, exit 0.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <pthread.h>  // pthread_sigmask
#include <signal.h>   // sigwait, SIGTERM, SIGINT, SIGPIPE

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../command_line.hpp"
#include "engine.hpp"
#include "http_server.hpp"
#include "metrics.hpp"
#include "openai_api.hpp"
#include "tool_calls.hpp"

#include <tessera/backend/cpu.hpp>
#include <tessera/models/open_chat_template.hpp>
#include <tessera/models/open_model.hpp>
#include <tessera/models/open_tokenizer.hpp>

namespace {

using namespace tessera::server;
using http::Exchange, http::Response;
using std::chrono::milliseconds;

struct Settings {
    std::string model_path = "models/gpt2", host = "127.0.0.1", api_key, alias, chat_template_file;
    int port = 8080;
    std::size_t parallel = 8, queue = 64, context = 0, max_body = 1 << 20;
    unsigned threads = tessera::Cpu::default_threads();
    double timeout = 600, read_timeout = 30, write_timeout = 30, shutdown_grace = 10;
    std::size_t max_connections = 1024, max_connections_per_client = 256;
    bool context_shift = false, no_prompt_cache = false;
    std::optional<tessera::WeightFormatId> weights;
    tessera::KvPrecision kv_cache = tessera::KvPrecision::f32;
    RequestLimits limits;
};

// Everything a request needs once the model is loaded.
struct Service {
    std::unique_ptr<tessera::LanguageModel> model;
    std::unique_ptr<tessera::Tokenizer> tokenizer;  // the kind the model file holds
    std::optional<tessera::chat::ChatTemplate> chat_template;  // the model's, or --chat-template-file
    ToolCallSyntax tool_calls = ToolCallSyntax::none;          // how the template writes a call
    std::unique_ptr<Engine> engine;
};

// The message of the error this thread answered last, for the log line.
thread_local std::string last_error;

void send_error(Response& res, int status, std::string_view message, std::string_view type, std::string_view param = {}) {
    res.status = status;
    res.content_type = "application/json";
    res.body = dump(error_body(message, type, param));
    last_error = message;
}
void send_error(Response& res, const ApiError& e) { send_error(res, e.status, e.what(), e.type, e.param); }

void send_json(Response& res, const nlohmann::json& j) {
    res.content_type = "application/json";
    res.body = dump(j);
}

// The body as a JSON value; invalid JSON (including invalid UTF-8) is a 400 naming where.
nlohmann::json parse_body(const http::Request& req) {
    try {
        return nlohmann::json::parse(req.body);
    } catch (const nlohmann::json::exception& e) {  // a syntax error, invalid UTF-8, a number beyond double (1e999)
        throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
    }
}

// The key check in constant time for keys of the same length: the time does not tell how many
// leading characters of a guess were right.
bool same_key(std::string_view given, std::string_view key) {
    unsigned char diff = given.size() == key.size() ? 0 : 1;
    for (std::size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
    return diff == 0;
}

std::string completion_id(bool chat) {
    static std::atomic<std::uint64_t> next{0};
    static const std::uint64_t start = static_cast<std::uint64_t>(std::time(nullptr));
    char id[48];
    std::snprintf(id, sizeof id, "%s-%llx%06llx", chat ? "chatcmpl" : "cmpl", static_cast<unsigned long long>(start),
                  static_cast<unsigned long long>(next++));
    return id;
}

// The ids of a choice's tool calls: the completion's id, the choice (then "_" and the call's index).
std::string call_id(const std::string& completion, std::size_t choice) {
    return "call_" + completion.substr(completion.find('-') + 1) + "_" + std::to_string(choice);
}

// The model's chat template, or a 400 saying how to give one.
const tessera::chat::ChatTemplate& chat_template_of(const Service& service) {
    if (!service.chat_template) {
        throw ApiError(400, "this model has no chat template (tokenizer.chat_template, tokenizer_config.json or chat_template.jinja): "
                            "start the server with --chat-template-file, or use /v1/completions", "messages");
    }
    return *service.chat_template;
}

// Completion requests not yet answered in full (a stream until its last byte is written).
std::atomic<int> in_flight{0};
Metrics metrics;

// Every route and the method it takes: what /metrics counts by name (any other path counts as
// "other": no label per stray path) and what answers 405 to another method.
constexpr std::pair<const char*, const char*> routes[] = {
    {"/health", "GET"},          {"/metrics", "GET"},          {"/v1/models", "GET"},
    {"/v1/completions", "POST"}, {"/completions", "POST"},     {"/v1/chat/completions", "POST"},
    {"/chat/completions", "POST"}, {"/apply-template", "POST"}, {"/tokenize", "POST"},
    {"/detokenize", "POST"}};

std::string route_label(const std::string& path) {
    for (const auto& [route, method] : routes)
        if (path == route) return route;
    return "other";
}
std::atomic<bool> stopping{false};

// A completion that failed or was cancelled: its answer is an error, not text.
bool ended_badly(const tessera::Completion& c) {
    return c.stop_reason == tessera::StopReason::error || c.stop_reason == tessera::StopReason::cancelled;
}

// One completion request in flight: its choices' progress, for the response and the log line.
struct InFlight {
    InFlight() { ++in_flight; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    ~InFlight() { --in_flight; }

    std::string id, model;
    CompletionRequest request;
    std::shared_ptr<Channel> channel = std::make_shared<Channel>();
    std::vector<std::optional<tessera::Completion>> done;  // per choice
    std::vector<std::size_t> sent_bytes;                  // per choice: text streamed so far
    Clock::time_point start = Clock::now();
    std::optional<Clock::time_point> first_token;
    std::int64_t created = std::time(nullptr);
    std::size_t finished = 0;

    // Applies the events; true while choices are still running.
    bool apply(std::vector<Event>& events) {
        for (Event& e : events) {
            if (!first_token) first_token = Clock::now();
            if (e.done) {
                done[e.choice] = std::move(e.done);
                ++finished;
            }
        }
        return finished < done.size();
    }
    const std::string& prompt_text(std::size_t choice) const { return request.prompt_texts[choice / request.n]; }
    std::size_t prompt_tokens() const {
        std::size_t n = 0;
        for (const auto& p : request.prompts) n += p.size();
        return n;
    }
    // Prompt tokens found in a sequence's cache, counted as prompt_tokens counts: once per
    // prompt (its first choice's).
    std::size_t cached_tokens() const {
        std::size_t n = 0;
        for (std::size_t i = 0; i < done.size(); i += request.n) n += done[i] ? done[i]->cached_prompt_tokens : 0;
        return n;
    }
    std::size_t completion_tokens() const {
        std::size_t n = 0;
        for (const auto& c : done) n += c ? c->tokens.size() : 0;
        return n;
    }
    nlohmann::json usage() const {
        return {{"prompt_tokens", prompt_tokens()},
                {"completion_tokens", completion_tokens()},
                {"total_tokens", prompt_tokens() + completion_tokens()},
                {"prompt_tokens_details", {{"cached_tokens", cached_tokens()}}}};
    }
    // The first choice that did not end well, if any.
    const tessera::Completion* failure() const {
        for (const auto& c : done)
            if (c && ended_badly(*c)) return &*c;
        return nullptr;
    }
    nlohmann::json chunk(nlohmann::json choices, bool streamed = false) const {
        const char* object = !request.chat ? "text_completion" : streamed ? "chat.completion.chunk" : "chat.completion";
        return {{"id", id},       {"object", object},           {"created", created},
                {"model", model}, {"seed", *request.sampling.seed}, {"choices", std::move(choices)}};
    }
    void log(int status) const {
        const double total = std::chrono::duration<double>(Clock::now() - start).count();
        const double ttft = first_token ? 1e3 * std::chrono::duration<double>(*first_token - start).count() : 0;
        metrics.request(request.chat ? "/v1/chat/completions" : "/v1/completions", status);
        metrics.completion(prompt_tokens(), cached_tokens(), completion_tokens(), ttft / 1e3, total);
        std::fprintf(stderr, "%s: status %d, %zu choice%s, prompt %zu tokens (%zu cached), completion %zu tokens, first token %.0f ms, %.1f tokens/s, %.2f s, seed %llu%s\n",
                     id.c_str(), status, done.size(), done.size() == 1 ? "" : "s", prompt_tokens(), cached_tokens(), completion_tokens(), ttft,
                     total > 0 ? static_cast<double>(completion_tokens()) / total : 0.0, total,
                     static_cast<unsigned long long>(*request.sampling.seed), request.stream ? ", streamed" : "");
    }
};

int failure_status(const tessera::Completion& c) { return c.stop_reason == tessera::StopReason::error ? 500 : 503; }

void complete(Service& service, const Settings& settings, Exchange& exchange, Response& res, bool chat) {
    const http::Request& req = exchange.request();
    auto x = std::make_shared<InFlight>();
    x->id = completion_id(chat);
    x->model = settings.alias;
    const std::size_t context = service.engine->options().context;
    x->request = chat ? parse_chat_request(parse_body(req), *service.tokenizer, chat_template_of(service), context, settings.limits)
                      : parse_completion_request(parse_body(req), *service.tokenizer, context, settings.limits);
    x->request.generation.context_shift = settings.context_shift;
    // A request without a seed gets one, returned and logged, so that any completion can be made
    // again; under 2^53, so that a JavaScript client reads it back exactly.
    if (!x->request.sampling.seed) {
        std::random_device random;
        x->request.sampling.seed = (random() | (std::uint64_t{random()} << 32)) & ((std::uint64_t{1} << 53) - 1);
    }
    const CompletionRequest& r = x->request;
    x->done.resize(r.choices());
    x->sent_bytes.resize(r.choices());
    std::vector<Job> jobs;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(settings.timeout));
    for (std::size_t i = 0; i < r.choices(); ++i) {
        Job job{r.prompts[i / r.n], r.generation, r.sampling, i, x->channel, deadline};
        if (job.sampling.seed) *job.sampling.seed += i % r.n;  // n choices of one seeded prompt differ, reproducibly
        jobs.push_back(std::move(job));
    }
    if (r.stream && r.echo) {  // before the engine can push the first generated piece
        for (std::size_t i = 0; i < r.choices(); ++i) x->channel->push({i, x->prompt_text(i), {}});
    }
    if (r.choices() > service.engine->capacity()) {
        throw ApiError(400, "the request asks for " + std::to_string(r.choices()) + " choices; this server runs at most " +
                                std::to_string(service.engine->capacity()) + " at once (--parallel + --queue)", "n");
    }
    if (!service.engine->submit(std::move(jobs))) {
        res.set_header("Retry-After", "1");
        throw ApiError(503, "the server is busy (" + std::to_string(service.engine->capacity()) +
                                " choices run or wait; see --parallel and --queue) or shutting down; retry later",
                       "", "server_error");
    }
    res.set_header("X-Request-Id", x->id);  // logged by InFlight::log
    exchange.on_gone([channel = x->channel] { channel->cancel(); });  // nobody waits for it any more

    if (!r.stream) {
        for (bool running = true; running;) {
            auto events = x->channel->wait(milliseconds(1000));
            running = x->apply(events);
        }
        if (const auto* failed = x->failure()) {
            x->log(exchange.gone() ? 499 : failure_status(*failed));
            // The same request would run past the limit again: OpenAI's clients retry a 503
            // unless told not to.
            if (failed->error == timed_out) res.set_header("x-should-retry", "false");
            return send_error(res, failure_status(*failed), failed->error, "server_error");
        }
        nlohmann::json choices = nlohmann::json::array();
        for (std::size_t i = 0; i < x->done.size(); ++i) {
            const tessera::Completion& c = *x->done[i];
            if (r.chat) {
                nlohmann::json message = {{"role", "assistant"}, {"content", c.text}};
                const char* finish = finish_reason(c.stop_reason);
                if (SplitReply split = split_tool_calls(c.text, r.tools ? service.tool_calls : ToolCallSyntax::none); !split.calls.empty()) {
                    message["content"] = split.content.empty() ? nlohmann::json(nullptr) : nlohmann::json(split.content);
                    message["tool_calls"] = tool_calls_json(split.calls, call_id(x->id, i));
                    finish = "tool_calls";
                }
                choices.push_back({{"index", i},
                                   {"message", std::move(message)},
                                   {"logprobs", r.generation.logprobs ? chat_logprobs_json(c, *service.tokenizer) : nlohmann::json(nullptr)},
                                   {"finish_reason", finish}});
                continue;
            }
            const std::string prefix = r.echo ? x->prompt_text(i) : std::string();
            choices.push_back({{"text", prefix + c.text},
                               {"index", i},
                               {"logprobs", r.generation.logprobs
                                                ? logprobs_json(c, 0, c.tokens.size(), prefix.size(), *service.tokenizer)
                                                : nlohmann::json(nullptr)},
                               {"finish_reason", finish_reason(c.stop_reason)}});
        }
        nlohmann::json body = x->chunk(std::move(choices));
        body["usage"] = x->usage();
        x->log(200);
        return send_json(res, body);
    }

    // Streamed: one event per piece of text, the finish_reason with each choice's last event,
    // usage if asked, then [DONE]. A chat stream opens each choice with its role and ends it with
    // an empty delta that carries the finish_reason. A failed write (the client left) cancels the choices.
    const auto& tokenizer = *service.tokenizer;
    const auto send = [&](const nlohmann::json& j) { return exchange.write("data: " + dump(j) + "\n\n"); };
    const auto delta = [&](std::size_t choice, nlohmann::json d) {
        return nlohmann::json{{"index", choice}, {"delta", std::move(d)}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    };
    // Per choice: what of its text may go out while it could still be a tool call.
    std::vector<ToolCallStream> calls(x->done.size(), ToolCallStream(r.tools ? service.tool_calls : ToolCallSyntax::none));
    res.content_type = "text/event-stream";
    res.set_header("Cache-Control", "no-cache");
    // Every event goes out as it is made: a write that fails (the client left) ends the loop.
    const auto stream = [&]() -> bool {
        if (!exchange.start_stream(res)) return false;
        if (r.chat) {
            for (std::size_t i = 0; i < x->done.size(); ++i)
                if (!send(x->chunk(nlohmann::json::array({delta(i, {{"role", "assistant"}, {"content", ""}})}), true))) return false;
        }
        for (bool running = true; running;) {
            auto events = x->channel->wait(milliseconds(1000));
            if (events.empty()) {  // a comment keeps the connection alive and finds a client gone
                if (!exchange.write(": ping\n\n")) return false;
                continue;
            }
            running = x->apply(events);
            for (const Event& e : events) {
                const tessera::Completion* c = e.done ? &*x->done[e.choice] : nullptr;
                const auto content = [&](const std::string& text) {
                    return text.empty() || send(x->chunk(nlohmann::json::array({delta(e.choice, {{"content", text}})}), true));
                };
                if (c && ended_badly(*c)) {
                    if (r.chat && !content(calls[e.choice].push(e.text))) return false;
                    if (!send(error_body(c->error, "server_error"))) return false;
                    continue;
                }
                if (r.chat) {
                    if (!content(calls[e.choice].push(e.text))) return false;
                    if (!c) continue;
                    ToolCallStream::End end = calls[e.choice].finish();
                    if (!content(end.content)) return false;
                    if (!end.calls.empty() &&
                        !send(x->chunk(nlohmann::json::array({delta(e.choice, {{"tool_calls", tool_calls_json(end.calls, call_id(x->id, e.choice), true)}})}), true)))
                        return false;
                    nlohmann::json last = delta(e.choice, nlohmann::json::object());
                    last["finish_reason"] = end.calls.empty() ? finish_reason(c->stop_reason) : "tool_calls";
                    if (r.generation.logprobs) last["logprobs"] = chat_logprobs_json(*c, tokenizer);
                    if (!send(x->chunk(nlohmann::json::array({std::move(last)}), true))) return false;
                    continue;
                }
                nlohmann::json choice = {{"text", e.text}, {"index", e.choice}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
                if (c) {
                    choice["finish_reason"] = finish_reason(c->stop_reason);
                    if (r.generation.logprobs) {  // the tokens' log-probabilities come with the last event
                        choice["logprobs"] = logprobs_json(*c, 0, c->tokens.size(), r.echo ? x->prompt_text(e.choice).size() : 0, tokenizer);
                    }
                }
                if ((!e.text.empty() || c) && !send(x->chunk(nlohmann::json::array({std::move(choice)})))) return false;
            }
        }
        if (r.include_usage) {
            nlohmann::json last = x->chunk(nlohmann::json::array(), true);
            last["usage"] = x->usage();
            if (!send(last)) return false;
        }
        if (!exchange.write("data: [DONE]\n\n")) return false;
        exchange.finish();
        return true;
    };
    const bool delivered = stream();
    if (!delivered) x->channel->cancel();
    const auto* failed = x->failure();
    x->log(!delivered ? 499 : failed ? failure_status(*failed) : 200);
}

using Handler = std::function<void(Exchange&, Response&)>;

// Routes a request: 404 for an unknown path, 405 with Allow for a known one asked with another
// method, 401 without the API key (except /health); the handler's errors become OpenAI's error
// object. A completion logs its own line (InFlight::log sets X-Request-Id); the rest are logged here.
void serve(Exchange& exchange, const std::unordered_map<std::string, Handler>& handlers, const std::string& api_key) {
    const http::Request& req = exchange.request();
    Response res;
    try {
        const auto route = std::find_if(std::begin(routes), std::end(routes), [&](const auto& r) { return req.path == r.first; });
        if (route == std::end(routes)) throw ApiError(404, "no such endpoint: " + req.path);
        if (req.method != route->second) {
            res.set_header("Allow", route->second);
            throw ApiError(405, req.method + " is not allowed here: this endpoint takes " + route->second);
        }
        if (!api_key.empty() && req.path != "/health") {
            const std::string_view auth = req.header("Authorization");
            const std::string_view given = auth.substr(0, 7) == "Bearer " ? auth.substr(7) : std::string_view();
            if (!same_key(given, api_key))
                throw ApiError(401, auth.empty() ? "no API key given (Authorization: Bearer KEY)" : "incorrect API key");
        }
        handlers.at(req.path)(exchange, res);
    } catch (const ApiError& e) {
        send_error(res, e);
    } catch (const tessera::ArgumentError& e) {
        send_error(res, 400, e.what(), "invalid_request_error");
    } catch (const std::exception& e) {
        send_error(res, 500, e.what(), "server_error");
    }
    if (!res.has_header("X-Request-Id")) {
        metrics.request(route_label(req.path), res.status);
        std::fprintf(stderr, "%s %s: status %d%s%s\n", req.method.c_str(), req.path.c_str(), res.status, res.status >= 400 ? ": " : "",
                     res.status >= 400 ? last_error.substr(0, 200).c_str() : "");
    }
    last_error.clear();
    if (!exchange.responded()) exchange.respond(res);  // a stream has answered already
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"An OpenAI-compatible server for GPT-2 checkpoints (many requests decoded together)"};
    Settings s;
    using tessera::cli::Bound, tessera::cli::real_number, tessera::cli::whole_number;
    constexpr double max_seconds = 1e9;  // about 31 years: any longer overflows the clocks' nanoseconds
    app.add_option("--model", s.model_path, "a GGUF file, or a Hugging Face directory (config.json, model.safetensors, the tokenizer's files)");
    app.add_option("--chat-template-file", s.chat_template_file, "a Jinja chat template for /v1/chat/completions, instead of the model's own");
    tessera::cli::add_weights_option(app, s.weights);
    tessera::cli::add_kv_cache_option(app, s.kv_cache);
    app.add_option("--alias", s.alias, "the model's name in responses and /v1/models (default: the file or directory name)");
    app.add_option("--host", s.host, "the address to listen on");
    app.add_option("--port", s.port, "the port (0: any free port, printed)")->check(whole_number(0, 65535));
    app.add_option("--parallel", s.parallel, "sequences decoded together")->check(whole_number<std::size_t>(1, 256));
    app.add_option("--queue", s.queue, "requests' choices that may wait for a sequence beyond those (more: 503)")
        ->check(whole_number<std::size_t>(0, 100000));
    app.add_option("--ctx", s.context, "positions per sequence (0: the model's context)")->check(whole_number<std::size_t>(0, 1 << 20));
    app.add_flag("--no-prompt-cache", s.no_prompt_cache,
                 "run every prompt whole (else a prompt that begins as a finished one did starts from its sequence's cache)");
    app.add_flag("--context-shift", s.context_shift, "when a sequence is full, drop its older half and go on (else: finish_reason length)");
    app.add_option("--threads", s.threads, "CPU threads")->check(whole_number(1U, std::numeric_limits<unsigned>::max()));
    app.add_option("--api-key", s.api_key, "require 'Authorization: Bearer KEY' (except /health)");
    app.add_option("--max-body", s.max_body, "request body limit in bytes (more: 413)")->check(whole_number<std::size_t>(1, std::size_t{1} << 30));
    app.add_option("--max-tokens", s.limits.max_tokens, "the largest max_tokens a request may ask")->check(whole_number<std::size_t>(1, 1 << 30));
    app.add_option("--max-choices", s.limits.max_choices, "the most choices (prompts x n) in one request")->check(whole_number<std::size_t>(1, 1024));
    app.add_option("--timeout", s.timeout, "seconds a completion may run before it is cancelled")
        ->check(real_number(0, Bound::open, max_seconds, Bound::closed));
    app.add_option("--read-timeout", s.read_timeout, "seconds to receive a whole request, or to wait for the next on an idle connection (more: 408, closed)")
        ->check(real_number(0, Bound::open, max_seconds, Bound::closed));
    app.add_option("--write-timeout", s.write_timeout, "seconds a client may read nothing of a response it is owed (more: dropped, its completion cancelled)")
        ->check(real_number(0, Bound::open, max_seconds, Bound::closed));
    app.add_option("--max-connections", s.max_connections, "open connections in all (more: 503)")->check(whole_number<std::size_t>(1, 1 << 20));
    app.add_option("--max-connections-per-client", s.max_connections_per_client, "open connections from one address (more: 503)")
        ->check(whole_number<std::size_t>(1, 1 << 20));
    app.add_option("--shutdown-grace", s.shutdown_grace, "seconds running completions may finish after SIGTERM/SIGINT")
        ->check(real_number(0, Bound::closed, max_seconds, Bound::closed));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    if (app.count("--api-key") && s.api_key.empty()) {  // would silently turn authentication off
        std::cerr << "server: --api-key is empty: give a key, or leave the flag out to serve without one\n";
        return 2;
    }
    if (s.alias.empty()) s.alias = std::filesystem::path(s.model_path).filename().string();
    if (s.alias.empty()) s.alias = std::filesystem::path(s.model_path).parent_path().filename().string();

    // Signals go to one thread that waits for them (set before any thread starts, so all inherit
    // the mask); a write to a closed socket is an error return, not SIGPIPE.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    Service service;
    std::atomic<Service*> ready{nullptr};
    const auto loaded = [&]() -> Service& {
        Service* p = ready.load();
        if (!p) throw ApiError(503, "the model is loading", "", "server_error");
        return *p;
    };
    std::unordered_map<std::string, Handler> handlers;
    handlers["/health"] = [&](Exchange&, Response& res) {
        if (!ready.load() || stopping) res.status = 503;
        send_json(res, {{"status", stopping ? "stopping" : ready.load() ? "ok" : "loading"}});
    };
    handlers["/metrics"] = [&](Exchange&, Response& res) {
        const Service* sv = ready.load();
        res.content_type = "text/plain; version=0.0.4";
        res.body = metrics.text(sv ? sv->engine->waiting() : 0, sv ? sv->engine->running() : 0, s.parallel);
    };
    handlers["/v1/models"] = [&](Exchange&, Response& res) {
        Service& sv = loaded();
        send_json(res, {{"object", "list"},
                        {"data",
                         {{{"id", s.alias},
                           {"object", "model"},
                           {"created", 0},
                           {"owned_by", "tessera"},
                           {"meta",
                            {{"description", sv.model->description()},
                             {"weights", std::string(sv.model->weight_format())},
                             {"kv_cache", std::string(tessera::kv_precision_name(sv.model->kv_cache()))},
                             {"vocab_size", sv.model->vocabulary_size()},
                             {"context_length", sv.engine->options().context},
                             {"parallel", sv.engine->options().sequences},
                             {"chat_template", sv.chat_template.has_value()}}}}}}});
    };
    handlers["/v1/completions"] = handlers["/completions"] = [&](Exchange& x, Response& res) { complete(loaded(), s, x, res, false); };
    handlers["/v1/chat/completions"] = handlers["/chat/completions"] = [&](Exchange& x, Response& res) { complete(loaded(), s, x, res, true); };
    handlers["/apply-template"] = [&](Exchange& x, Response& res) {
        send_json(res, {{"prompt", chat_prompt(parse_body(x.request()), chat_template_of(loaded()))}});
    };
    handlers["/tokenize"] = [&](Exchange& x, Response& res) {
        const Service& sv = loaded();
        const nlohmann::json body = parse_body(x.request());
        const nlohmann::json* content = body.is_object() ? tessera::server::detail::field(body, "content") : nullptr;
        if (!content || !content->is_string()) throw ApiError(400, "'content' must be a string", "content");
        bool special = false;
        if (const auto* v = tessera::server::detail::field(body, "allow_special")) special = tessera::server::detail::boolean(*v, "allow_special");
        send_json(res, {{"tokens", sv.tokenizer->encode(content->get<std::string>(),
                                                       special ? tessera::SpecialTokens::allowed : tessera::SpecialTokens::as_text)}});
    };
    handlers["/detokenize"] = [&](Exchange& x, Response& res) {
        const Service& sv = loaded();
        const nlohmann::json body = parse_body(x.request());
        const nlohmann::json* tokens = body.is_object() ? tessera::server::detail::field(body, "tokens") : nullptr;
        if (!tokens || !tokens->is_array()) throw ApiError(400, "'tokens' must be an array of token ids", "tokens");
        const auto ids = tessera::server::detail::token_ids(*tokens, "tokens", sv.tokenizer->vocab_size());
        send_json(res, {{"content", sv.tokenizer->decode(ids)}});
    };

    http::Options options;
    options.host = s.host;
    options.port = s.port;
    options.limits.body = s.max_body;
    options.read_timeout = s.read_timeout;
    options.write_timeout = s.write_timeout;
    options.max_connections = s.max_connections;
    options.max_connections_per_client = s.max_connections_per_client;
    options.workers = s.parallel + s.queue + 8;  // a completion holds a worker while it runs
    options.refusal = [](int status, const std::string& message) {
        Response r{status, "application/json", {}, dump(error_body(message, status >= 500 ? "server_error" : "invalid_request_error"))};
        if (status == 503) r.set_header("Retry-After", "1");
        return r;
    };
    options.refused = [](const std::string& client, int status, const std::string& message) {
        if (status == 0) return (void)std::fprintf(stderr, "%s: %s\n", client.c_str(), message.c_str());
        metrics.request("other", status);
        std::fprintf(stderr, "%s: status %d: %s\n", client.c_str(), status, message.c_str());
    };
    std::unique_ptr<http::Server> http;
    try {
        // /health and /metrics answer on the event loop itself: under any load, at once.
        http = std::make_unique<http::Server>(
            options, [&](Exchange& x) { serve(x, handlers, s.api_key); },
            [&](Exchange& x) {
                if (x.request().path != "/health" && x.request().path != "/metrics") return false;
                serve(x, handlers, s.api_key);
                return true;
            });
    } catch (const std::exception& e) {
        std::cerr << "server: " << e.what() << '\n';
        return 1;
    }
    std::thread listener([&] { http->run(); });
    std::fprintf(stderr, "server: listening on http://%s:%d (loading %s)\n", s.host.c_str(), http->port(), s.model_path.c_str());

    std::thread signal_waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        std::fprintf(stderr, "server: %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        // New completions get 503 while those running finish (within the grace); then the port
        // closes (stop() closes every connection, so it comes last).
        stopping = true;
        const auto grace = std::chrono::duration_cast<milliseconds>(std::chrono::duration<double>(s.shutdown_grace));
        if (Service* p = ready.load()) p->engine->drain(grace);
        const auto give_up = Clock::now() + grace + std::chrono::seconds(5);  // for writes to a stalled client
        while (in_flight > 0 && Clock::now() < give_up) std::this_thread::sleep_for(milliseconds(10));
        http->stop();
    });
    int rc = 0;
    try {
        service.tokenizer = tessera::open_any_tokenizer(s.model_path);
        service.chat_template = tessera::open_chat_template(s.model_path, s.chat_template_file, *service.tokenizer);
        if (service.chat_template) service.tool_calls = tool_call_syntax(service.chat_template->source());
        service.model = tessera::open_model_on("cpu", s.model_path, s.threads, s.weights);
        service.model->use_kv_cache(s.kv_cache);
        tessera::BatchOptions batch;
        batch.sequences = s.parallel;
        batch.context = s.context;
        batch.reuse_prompts = !s.no_prompt_cache;
        service.engine = std::make_unique<Engine>(*service.model, *service.tokenizer, batch, s.parallel + s.queue);
        ready = &service;
        std::fprintf(stderr, "server: ready: %s, %zu sequences of %zu positions, %u threads\n", service.model->description().c_str(),
                     s.parallel, service.engine->options().context, s.threads);
    } catch (const std::exception& e) {
        std::cerr << "server: " << e.what() << '\n';
        rc = 1;
        pthread_kill(signal_waiter.native_handle(), SIGTERM);
    }
    listener.join();  // returns once stopped and every handler has finished
    signal_waiter.join();
    service.engine.reset();  // after the handlers: the engine's thread ends when idle
    std::fprintf(stderr, "server: stopped\n");
    return rc;
}
