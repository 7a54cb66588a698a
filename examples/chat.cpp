// chat: an interactive chat in the terminal with any chat model tessera runs, through the
// model's own chat template (or --chat-template-file).
//
//   chat --model SmolLM2-135M-Instruct-Q8_0.gguf --system "You are terse." --temperature 0.7
//
// Type a message and Enter: the reply streams as it is generated. Ctrl-C stops the reply in
// progress (what was shown stays in the conversation) and leaves the program running; /reset
// starts a new conversation; /quit or Ctrl-D ends. Each turn re-sends the conversation through
// the template, as a chat client does, and the batch generator's prompt cache runs only the new
// part. Exit codes: 0 at the end of input, 1 bad input (model, template), 2 bad flags.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <signal.h>  // sigaction, SIGINT
#include <unistd.h>  // read, isatty, STDIN_FILENO

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <limits>
#include <thread>
#include <optional>
#include <string>

#include "command_line.hpp"

#include <tessera/chat/chat_template.hpp>
#include <tessera/generation/batch_generator.hpp>
#include <tessera/models/open_chat_template.hpp>
#include <tessera/models/open_model.hpp>
#include <tessera/models/open_tokenizer.hpp>

namespace {

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted = true; }

enum class Input { line, end, interrupted };

// One line of standard input (without its newline). Reads byte by byte so that Ctrl-C during
// the read (EINTR: the handler is installed without SA_RESTART) is told apart from the end.
Input read_line(std::string& line) {
    line.clear();
    for (;;) {
        char c;
        const ssize_t n = ::read(STDIN_FILENO, &c, 1);
        if (n == 1) {
            if (c == '\n') return Input::line;
            line += c;
        } else if (n == 0) {
            return line.empty() ? Input::end : Input::line;
        } else if (errno == EINTR) {
            if (interrupted.exchange(false)) return Input::interrupted;
        } else {
            throw tessera::Error(std::string("reading standard input: ") + std::strerror(errno));
        }
    }
}

void write(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Chat in the terminal with a chat model, through its own template"};
    std::string model_path = "models/gpt2", template_file, system;
    tessera::SamplingParams sampling;
    tessera::GenerationOptions generation;
    generation.max_new_tokens = std::numeric_limits<std::size_t>::max();  // until the end of the turn or a full context
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());  // as the CPU backend's default
    std::optional<std::size_t> context;
    std::optional<tessera::WeightFormatId> weights;
    tessera::KvPrecision kv_cache = tessera::KvPrecision::f32;
    using tessera::cli::whole_number;
    app.add_option("--model", model_path, "a GGUF file, or a Hugging Face directory")->required();
    app.add_option("--chat-template-file", template_file, "a Jinja chat template, instead of the model's own");
    app.add_option("--system", system, "a system message to start each conversation with");
    app.add_flag("--ignore-eos", generation.ignore_eos, "keep generating past the end of the turn (to measure, or to try Ctrl-C)");
    app.add_option("--max-new-tokens,-n", generation.max_new_tokens, "tokens per reply at most (default: until the turn ends)")
        ->check(whole_number<std::size_t>(1, std::numeric_limits<std::size_t>::max()));
    tessera::cli::add_sampling_options(app, sampling);
    app.add_option("--ctx-size,-c", context, "positions of the conversation (default: the model's context)")
        ->check(whole_number<std::size_t>(1, std::size_t{1} << 30));
    app.add_option("--threads", threads, "CPU threads")->check(whole_number(1U, std::numeric_limits<unsigned>::max()));
    tessera::cli::add_weights_option(app, weights);
    tessera::cli::add_kv_cache_option(app, kv_cache);
    try {
        app.parse(argc, argv);
        (void)tessera::make_sampler(sampling);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    } catch (const tessera::ArgumentError& e) {
        std::cerr << "chat: " << e.what() << "\nRun with --help for more information.\n";
        return 2;
    }

    struct sigaction action {};
    action.sa_handler = on_interrupt;  // no SA_RESTART: a read in progress returns EINTR
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);

    try {
        const auto tokenizer = tessera::open_any_tokenizer(model_path);
        const auto chat = tessera::open_chat_template(model_path, template_file, *tokenizer);
        if (!chat) throw tessera::ArgumentError("model " + model_path + " has no chat template: give one with --chat-template-file");
        const auto model = tessera::open_model_on("cpu", model_path, threads, weights, 0, context);
        model->use_kv_cache(kv_cache);
        tessera::BatchOptions options;
        options.sequences = 1;  // one conversation; its cache is kept between turns
        tessera::BatchGenerator<tessera::LanguageModel> batch(*model, *tokenizer, options);

        const auto fresh = [&] {
            nlohmann::json m = nlohmann::json::array();
            if (!system.empty()) m.push_back({{"role", "system"}, {"content", system}});
            return m;
        };
        nlohmann::json messages = fresh();
        const bool terminal = ::isatty(STDIN_FILENO);
        if (terminal) std::fprintf(stderr, "%s\nCtrl-C stops a reply, /reset starts again, /quit or Ctrl-D ends.\n", model->description().c_str());
        for (std::string line;;) {
            write("> ");
            const Input got = read_line(line);
            if (got == Input::end) break;
            if (got == Input::interrupted) {
                write("\n(Ctrl-D or /quit to leave)\n");
                continue;
            }
            if (line == "/quit") break;
            if (line == "/reset") {
                messages = fresh();
                write("(a new conversation)\n");
                continue;
            }
            if (line.empty()) continue;
            messages.push_back({{"role", "user"}, {"content", line}});
            std::string prompt;
            try {
                prompt = chat->apply(tessera::io::parse_json(messages.dump(), "the conversation"));
            } catch (const tessera::chat::jinja::TemplateError& e) {  // the template's own refusal: say it, go on
                messages.erase(messages.end() - 1);
                std::fprintf(stderr, "(the chat template refused the message: %s)\n", e.what());
                continue;
            }
            std::vector<tessera::TokenId> ids = tokenizer->encode(prompt, tessera::SpecialTokens::allowed);
            if (ids.size() >= batch.options().context) {
                messages.erase(messages.end() - 1);
                std::fprintf(stderr, "(the conversation would be %zu tokens, more than the %zu the context holds: /reset to start again)\n",
                             ids.size(), batch.options().context);
                continue;
            }
            std::optional<tessera::Completion> reply;
            interrupted = false;
            const auto id = batch.add(
                std::move(ids), generation, tessera::make_sampler(sampling), [](std::string_view piece) { write(piece); },
                [&](tessera::Completion&& c) { reply = std::move(c); });
            while (!batch.idle()) {
                if (interrupted.exchange(false)) batch.cancel(id);
                batch.step();
            }
            if (reply->stop_reason == tessera::StopReason::cancelled) write(" [stopped]");
            if (reply->stop_reason == tessera::StopReason::context_full) write(" [the context is full: /reset to start again]");
            if (reply->stop_reason == tessera::StopReason::error) throw tessera::Error(reply->error);
            write("\n");
            messages.push_back({{"role", "assistant"}, {"content", reply->text}});
        }
        if (terminal) write("\n");
        return 0;
    } catch (const tessera::chat::jinja::TemplateError& e) {
        std::cerr << "chat: the chat template: " << e.what() << '\n';
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "chat: " << e.what() << '\n';
        return 1;
    }
}
