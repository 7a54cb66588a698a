#pragma once
// Pieces to a tree: Jinja2's grammar, by recursive descent with its precedence (lowest first):
// `x if c else y`, or, and, not, comparisons (==, !=, <, <=, >, >=, in, not in; chained),
// + and -, ~, * / // %, **, unary - and +, then a primary with its postfixes (.name, [key],
// [a:b:c], (args)) and filters and tests (| f(args), is [not] t(args)). Statements: if / elif /
// else, for (with unpacking, an `if` filter and else), set (also of a namespace's attribute and
// as a block), macro, break, continue, generation. Anything else (extends, include, import,
// block, call, filter, raw, with, do) is refused by name, with its line.
#include <initializer_list>  // std::initializer_list
#include <memory>            // std::make_unique
#include <string>            // std::string
#include <string_view>       // std::string_view
#include <vector>            // std::vector

#include <tessera/chat/jinja/ast.hpp>
#include <tessera/chat/jinja/lexer.hpp>

namespace tessera::chat::jinja {

class Parser {
public:
    explicit Parser(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {}

    Body parse() {
        std::string end;
        Body body = parse_body({}, end);
        return body;
    }

private:
    // Statements until one whose keyword is in `ends` (its name goes to `found`; its tokens
    // are then current), or the end of the template when `ends` is empty.
    Body parse_body(std::initializer_list<std::string_view> ends, std::string& found) {
        const Nested nested(*this);
        Body body;
        while (index_ < pieces_.size()) {
            Piece& piece = pieces_[index_];
            if (piece.kind == Piece::Kind::text) {
                auto s = std::make_unique<TextStmt>();
                s->line = piece.line;
                s->text = std::move(piece.text);
                body.push_back(std::move(s));
                ++index_;
                continue;
            }
            tokens_ = &piece.tokens;
            at_ = 0;
            if (piece.kind == Piece::Kind::output) {
                ++index_;
                auto s = std::make_unique<OutputStmt>();
                s->line = piece.line;
                s->value = parse_expression();
                expect_end();
                body.push_back(std::move(s));
                continue;
            }
            const Token& keyword = current();
            if (keyword.kind != Token::Kind::name) fail(keyword.line, "a statement must start with a keyword");
            for (const auto e : ends)
                if (keyword.text == e) {
                    found = keyword.text;
                    ++index_;
                    ++at_;
                    return body;
                }
            ++index_;
            ++at_;
            body.push_back(parse_statement(keyword));
        }
        if (ends.size() != 0) {
            std::string names;
            for (const auto e : ends) names += (names.empty() ? "" : " or ") + std::string(e);
            fail(last_line(), "the template ended where " + names + " was expected");
        }
        return body;
    }

    std::unique_ptr<Stmt> parse_statement(const Token& keyword) {
        const int line = keyword.line;
        const std::string& k = keyword.text;
        std::string end;
        if (k == "if") {
            auto s = std::make_unique<IfStmt>();
            s->line = line;
            ExprPtr condition = parse_expression();
            expect_end();
            while (true) {
                Body body = parse_body({"elif", "else", "endif"}, end);
                s->branches.emplace_back(std::move(condition), std::move(body));
                if (end == "elif") {
                    condition = parse_expression();
                    expect_end();
                    continue;
                }
                if (end == "else") {
                    expect_end();
                    s->otherwise = parse_body({"endif"}, end);
                }
                expect_end();
                return s;
            }
        }
        if (k == "for") {
            auto s = std::make_unique<ForStmt>();
            s->line = line;
            do s->targets.push_back(expect_name());
            while (skip_op(","));
            if (!skip_name("in")) fail(line, "for: 'in' expected");
            s->sequence = parse_tuple(false);
            if (skip_name("if")) s->filter = parse_expression();
            if (skip_name("recursive")) fail(line, "recursive for loops are not supported");
            expect_end();
            s->body = parse_body({"else", "endfor"}, end);
            if (end == "else") {
                expect_end();
                s->otherwise = parse_body({"endfor"}, end);
            }
            expect_end();
            return s;
        }
        if (k == "set") {
            auto s = std::make_unique<SetStmt>();
            s->line = line;
            s->name = expect_name();
            if (skip_op(".")) s->attribute = expect_name();
            if (current().kind == Token::Kind::op && current().text == ",")
                fail(line, "set: assigning to several names at once is not supported");
            if (skip_op("=")) {
                s->value = parse_tuple(true);
                expect_end();
            } else {
                expect_end();
                s->body = parse_body({"endset"}, end);
                expect_end();
            }
            return s;
        }
        if (k == "macro") {
            auto s = std::make_unique<MacroStmt>();
            s->line = line;
            s->name = expect_name();
            expect_op("(");
            while (!skip_op(")")) {
                if (!s->parameters.empty()) expect_op(",");
                if (skip_op(")")) break;
                std::string p = expect_name();
                ExprPtr dflt;
                if (skip_op("=")) dflt = parse_expression();
                s->parameters.emplace_back(std::move(p), std::move(dflt));
            }
            expect_end();
            s->body = parse_body({"endmacro"}, end);
            if (current().kind == Token::Kind::name) ++at_;  // {% endmacro name %}
            expect_end();
            return s;
        }
        if (k == "break" || k == "continue") {
            auto s = std::make_unique<LoopControl>();
            s->line = line;
            s->flow = k == "break" ? Flow::break_loop : Flow::continue_loop;
            expect_end();
            return s;
        }
        if (k == "generation") {
            auto s = std::make_unique<BlockStmt>();
            s->line = line;
            expect_end();
            s->body = parse_body({"endgeneration"}, end);
            expect_end();
            return s;
        }
        fail(line, "the statement '" + k + "' is not supported");
    }

    // Nesting is bounded, so that a template of a million "(" or "if"s cannot exhaust the stack.
    static constexpr int max_nesting = 100;
    struct Nested {
        Parser& p;
        explicit Nested(Parser& parser) : p(parser) {
            if (++p.nesting_ > max_nesting)
                fail(p.tokens_ ? p.current().line : 1, "expressions or statements nested deeper than " + std::to_string(max_nesting));
        }
        ~Nested() { --p.nesting_; }
        Nested(const Nested&) = delete;
        Nested& operator=(const Nested&) = delete;
    };

    // Expressions, lowest precedence first.
    ExprPtr parse_expression(bool with_condition = true) {
        const Nested nested(*this);
        ExprPtr e = parse_or();
        while (with_condition && skip_name("if")) {
            auto c = std::make_unique<CondExpr>();
            c->line = e->line;
            c->yes = std::move(e);
            c->condition = parse_or();
            if (skip_name("else")) c->no = parse_expression();
            e = std::move(c);
        }
        return e;
    }

    // a, b, c as a list (a tuple in Python) where a statement allows it.
    ExprPtr parse_tuple(bool with_condition) {
        ExprPtr first = parse_expression(with_condition);
        if (!(current().kind == Token::Kind::op && current().text == ",")) return first;
        auto list = std::make_unique<ListExpr>();
        list->line = first->line;
        list->tuple = true;
        list->items.push_back(std::move(first));
        while (skip_op(",")) {
            if (at_end() || (current().kind == Token::Kind::op && current().text == ")")) break;  // (1,)
            list->items.push_back(parse_expression(with_condition));
        }
        return list;
    }

    ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
        auto e = std::make_unique<Binary>();
        e->line = a->line;
        e->op = std::move(op);
        e->a = std::move(a);
        e->b = std::move(b);
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (skip_name("or")) e = binary("or", std::move(e), parse_and());
        return e;
    }
    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (skip_name("and")) e = binary("and", std::move(e), parse_not());
        return e;
    }
    ExprPtr parse_not() {
        const Nested nested(*this);
        if (current().kind == Token::Kind::name && current().text == "not") {
            const int line = current().line;
            ++at_;
            auto u = std::make_unique<Unary>();
            u->line = line;
            u->op = "not";
            u->operand = parse_not();
            return u;
        }
        return parse_compare();
    }
    ExprPtr parse_compare() {
        ExprPtr first = parse_math1();
        std::unique_ptr<Compare> c;
        while (true) {
            std::string op;
            const Token& t = current();
            if (t.kind == Token::Kind::op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" ||
                                              t.text == ">" || t.text == ">=")) {
                op = t.text;
                ++at_;
            } else if (skip_name("in")) {
                op = "in";
            } else if (t.kind == Token::Kind::name && t.text == "not" && peek(1).kind == Token::Kind::name && peek(1).text == "in") {
                at_ += 2;
                op = "not in";
            } else {
                break;
            }
            if (!c) {
                c = std::make_unique<Compare>();
                c->line = first->line;
                c->first = std::move(first);
            }
            c->rest.emplace_back(std::move(op), parse_math1());
        }
        if (c) return c;
        return first;
    }
    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (current().kind == Token::Kind::op && (current().text == "+" || current().text == "-")) {
            std::string op = current().text;
            ++at_;
            e = binary(std::move(op), std::move(e), parse_concat());
        }
        return e;
    }
    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (skip_op("~")) e = binary("~", std::move(e), parse_math2());
        return e;
    }
    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (current().kind == Token::Kind::op &&
               (current().text == "*" || current().text == "/" || current().text == "//" || current().text == "%")) {
            std::string op = current().text;
            ++at_;
            e = binary(std::move(op), std::move(e), parse_pow());
        }
        return e;
    }
    ExprPtr parse_pow() {
        ExprPtr e = parse_unary();
        while (skip_op("**")) e = binary("**", std::move(e), parse_unary());
        return e;
    }
    ExprPtr parse_unary(bool with_filter = true) {
        const Nested nested(*this);
        ExprPtr e;
        if (current().kind == Token::Kind::op && (current().text == "-" || current().text == "+")) {
            auto u = std::make_unique<Unary>();
            u->line = current().line;
            u->op = current().text;
            ++at_;
            u->operand = parse_unary(false);
            e = std::move(u);
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        return with_filter ? parse_filters(std::move(e)) : std::move(e);
    }

    ExprPtr parse_primary() {
        const Token& t = current();
        const int line = t.line;
        auto literal = [&](Value v) {
            auto l = std::make_unique<Literal>();
            l->line = line;
            l->value = std::move(v);
            return l;
        };
        switch (t.kind) {
            case Token::Kind::name: {
                ++at_;
                if (t.text == "true" || t.text == "True") return literal(Value(true));
                if (t.text == "false" || t.text == "False") return literal(Value(false));
                if (t.text == "none" || t.text == "None") return literal(Value::none());
                auto n = std::make_unique<Name>();
                n->line = line;
                n->name = t.text;
                return n;
            }
            case Token::Kind::string: {
                std::string s;
                while (current().kind == Token::Kind::string) s += current().text, ++at_;  // "a" "b" is "ab"
                return literal(Value(std::move(s)));
            }
            case Token::Kind::integer: ++at_; return literal(Value(t.integer));
            case Token::Kind::real: ++at_; return literal(Value(t.real));
            case Token::Kind::op:
                if (t.text == "(") {
                    ++at_;
                    if (skip_op(")")) {
                        auto empty = std::make_unique<ListExpr>();
                        empty->tuple = true;
                        return empty;
                    }
                    ExprPtr e = parse_tuple(true);
                    expect_op(")");
                    return e;
                }
                if (t.text == "[") {
                    ++at_;
                    auto list = std::make_unique<ListExpr>();
                    list->line = line;
                    while (!skip_op("]")) {
                        if (!list->items.empty()) expect_op(",");
                        if (skip_op("]")) break;
                        list->items.push_back(parse_expression());
                    }
                    return list;
                }
                if (t.text == "{") {
                    ++at_;
                    auto dict = std::make_unique<DictExpr>();
                    dict->line = line;
                    while (!skip_op("}")) {
                        if (!dict->items.empty()) expect_op(",");
                        if (skip_op("}")) break;
                        ExprPtr k = parse_expression();
                        expect_op(":");
                        dict->items.emplace_back(std::move(k), parse_expression());
                    }
                    return dict;
                }
                break;
            case Token::Kind::end: fail(line, "an expression was expected at the end of the tag");
        }
        fail(line, "unexpected '" + t.text + "'");
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            const int line = current().line;
            if (skip_op(".")) {
                auto a = std::make_unique<GetAttr>();
                a->line = line;
                a->object = std::move(e);
                if (current().kind == Token::Kind::integer) {  // x.0 is x[0]
                    auto i = std::make_unique<GetItem>();
                    i->line = line;
                    i->object = std::move(a->object);
                    auto l = std::make_unique<Literal>();
                    l->value = Value(current().integer);
                    ++at_;
                    i->key = std::move(l);
                    e = std::move(i);
                    continue;
                }
                a->name = expect_name();
                e = std::move(a);
            } else if (skip_op("[")) {
                ExprPtr parts[3];
                int n = 0;
                bool is_slice = false;
                while (true) {
                    if (current().kind == Token::Kind::op && (current().text == ":" || current().text == "]")) {
                    } else {
                        parts[n] = parse_expression();
                    }
                    if (skip_op(":")) {
                        is_slice = true;
                        if (++n > 2) fail(line, "too many ':' in a slice");
                        continue;
                    }
                    expect_op("]");
                    break;
                }
                if (is_slice) {
                    auto s = std::make_unique<SliceExpr>();
                    s->line = line;
                    s->object = std::move(e);
                    s->start = std::move(parts[0]);
                    s->stop = std::move(parts[1]);
                    s->step = std::move(parts[2]);
                    e = std::move(s);
                } else {
                    if (!parts[0]) fail(line, "an index was expected in []");
                    auto i = std::make_unique<GetItem>();
                    i->line = line;
                    i->object = std::move(e);
                    i->key = std::move(parts[0]);
                    e = std::move(i);
                }
            } else if (current().kind == Token::Kind::op && current().text == "(") {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto c = std::make_unique<Call>();
        c->line = current().line;
        c->callee = std::move(callee);
        c->args = parse_arguments();
        return c;
    }

    CallArgs parse_arguments() {
        CallArgs args;
        expect_op("(");
        bool first = true;
        while (!skip_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (skip_op(")")) break;
            if (current().kind == Token::Kind::op && (current().text == "*" || current().text == "**"))
                fail(current().line, "*args and **kwargs in calls are not supported");
            if (current().kind == Token::Kind::name && peek(1).kind == Token::Kind::op && peek(1).text == "=") {
                std::string name = current().text;
                at_ += 2;
                args.named.emplace_back(std::move(name), parse_expression());
            } else {
                if (!args.named.empty()) fail(current().line, "a positional argument follows a named one");
                args.positional.push_back(parse_expression());
            }
        }
        return args;
    }

    ExprPtr parse_filters(ExprPtr e) {
        while (true) {
            const int line = current().line;
            if (skip_op("|")) {
                auto f = std::make_unique<FilterExpr>();
                f->line = line;
                f->value = std::move(e);
                f->name = expect_name();
                while (skip_op(".")) {  // (two appends: GCC 12 warns falsely of overlap on "." + name)
                    f->name += '.';
                    f->name += expect_name();
                }
                if (current().kind == Token::Kind::op && current().text == "(") f->args = parse_arguments();
                e = std::move(f);
            } else if (skip_name("is")) {
                auto t = std::make_unique<TestExpr>();
                t->line = line;
                t->value = std::move(e);
                t->negated = skip_name("not");
                t->name = expect_name();
                const Token& next = current();
                if (next.kind == Token::Kind::op && next.text == "(") {
                    t->args = parse_arguments();
                } else if ((next.kind == Token::Kind::string || next.kind == Token::Kind::integer ||
                            next.kind == Token::Kind::real ||
                            (next.kind == Token::Kind::op && (next.text == "[" || next.text == "{")) ||
                            (next.kind == Token::Kind::name && next.text != "else" && next.text != "or" &&
                             next.text != "and" && next.text != "if" && next.text != "is" && next.text != "in" &&
                             next.text != "not"))) {
                    t->args.positional.push_back(parse_postfix(parse_primary()));  // `is divisibleby 3`
                }
                e = std::move(t);
            } else if (current().kind == Token::Kind::op && current().text == "(") {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    // Token helpers.
    const Token& current() const { return (*tokens_)[at_]; }
    const Token& peek(std::size_t k) const {
        const std::size_t i = at_ + k;
        return i < tokens_->size() ? (*tokens_)[i] : tokens_->back();
    }
    bool at_end() const { return current().kind == Token::Kind::end; }
    bool skip_op(std::string_view op) {
        if (current().kind == Token::Kind::op && current().text == op) {
            ++at_;
            return true;
        }
        return false;
    }
    bool skip_name(std::string_view name) {
        if (current().kind == Token::Kind::name && current().text == name) {
            ++at_;
            return true;
        }
        return false;
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) fail(current().line, "'" + std::string(op) + "' expected, found " + describe(current()));
    }
    std::string expect_name() {
        if (current().kind != Token::Kind::name) fail(current().line, "a name expected, found " + describe(current()));
        return (*tokens_)[at_++].text;
    }
    void expect_end() {
        if (!at_end()) fail(current().line, "end of tag expected, found " + describe(current()));
    }
    static std::string describe(const Token& t) {
        switch (t.kind) {
            case Token::Kind::end: return "the end of the tag";
            case Token::Kind::string: return "a string";
            default: return "'" + t.text + "'";
        }
    }
    int last_line() const { return pieces_.empty() ? 1 : pieces_.back().line; }

    std::vector<Piece> pieces_;
    int nesting_ = 0;
    std::size_t index_ = 0;
    const std::vector<Token>* tokens_ = nullptr;
    std::size_t at_ = 0;
};

}  // namespace tessera::chat::jinja
