#pragma once
// A parsed template: expression and statement nodes, each of which knows how to run. Scopes
// follow Jinja2's: a for loop's body gets a fresh scope every iteration (a `set` inside it is
// gone at the next one, hence `namespace`), `if` makes none, a macro call gets its own whose
// parent is the template's top level (free names resolve there when the macro is called).
#include <memory>       // std::unique_ptr
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair, std::move
#include <vector>       // std::vector

#include <tessera/chat/jinja/builtins.hpp>
#include <tessera/chat/jinja/value.hpp>

namespace tessera::chat::jinja {

// A scope's names, then its parent's.
struct Scope {
    Object vars;
    const Scope* parent = nullptr;

    const Value* find(std::string_view name) const {
        for (const Scope* s = this; s; s = s->parent)
            if (const Value* v = s->vars.find(name)) return v;
        return nullptr;
    }
    void set(std::string name, Value value) { vars.set(std::move(name), std::move(value)); }
};

struct Context {
    Scope* scope = nullptr;  // the innermost
    Scope* top = nullptr;    // the template's top level
    int call_depth = 0;      // macros within macros, bounded: a recursive template must not exhaust the stack
    static constexpr int max_call_depth = 64;
    // Loop iterations and macro calls so far, bounded: a template must not run for hours
    // (real ones take thousands).
    std::uint64_t steps = 0;
    static constexpr std::uint64_t max_steps = 1'000'000;
    void step(int line) {
        if (++steps > max_steps)
            fail(line, "the template ran more than " + std::to_string(max_steps) + " loop iterations and macro calls");
    }
};

struct Expr {
    int line = 1;
    virtual ~Expr() = default;
    virtual Value eval(Context& ctx) const = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct CallArgs {
    std::vector<ExprPtr> positional;
    std::vector<std::pair<std::string, ExprPtr>> named;

    Arguments eval(Context& ctx) const {
        Arguments a;
        for (const auto& e : positional) a.positional.push_back(e->eval(ctx));
        for (const auto& [k, e] : named) a.named.emplace_back(k, e->eval(ctx));
        return a;
    }
};

struct Literal final : Expr {
    Value value;
    Value eval(Context&) const override { return value; }
};

struct Name final : Expr {
    std::string name;
    Value eval(Context& ctx) const override {
        const Value* v = ctx.scope->find(name);
        return v ? *v : Value::undefined(name);
    }
};

struct ListExpr final : Expr {
    std::vector<ExprPtr> items;
    bool tuple = false;  // (a, b) rather than [a, b]
    Value eval(Context& ctx) const override {
        Array out;
        for (const auto& e : items) out.push_back(e->eval(ctx));
        return tuple ? Value::tuple(std::move(out)) : Value(std::move(out));
    }
};

struct DictExpr final : Expr {
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
    Value eval(Context& ctx) const override {
        Object out;
        for (const auto& [k, v] : items) {
            const Value key = k->eval(ctx);
            if (!key.is_string()) fail(line, std::string("dict keys must be strings here, not ") + key.type_name());
            out.set(key.as_string(), v->eval(ctx));
        }
        return Value(std::move(out));
    }
};

struct GetAttr final : Expr {
    ExprPtr object;
    std::string name;
    Value eval(Context& ctx) const override { return attribute(object->eval(ctx), name, line); }
};

struct GetItem final : Expr {
    ExprPtr object, key;
    Value eval(Context& ctx) const override { return item(object->eval(ctx), key->eval(ctx), line); }
};

struct SliceExpr final : Expr {
    ExprPtr object, start, stop, step;  // any of the bounds may be null
    Value eval(Context& ctx) const override {
        const auto bound = [&](const ExprPtr& e) { return e ? e->eval(ctx) : Value(); };
        return slice(object->eval(ctx), bound(start), bound(stop), bound(step), line);
    }
};

struct Call final : Expr {
    ExprPtr callee;
    CallArgs args;
    Value eval(Context& ctx) const override {
        const Value f = callee->eval(ctx);
        if (f.is_undefined()) fail(line, "'" + f.undefined_name() + "' is undefined");
        if (!f.is_function()) fail(line, std::string("'") + f.type_name() + "' object is not callable");
        return f.call()(args.eval(ctx));
    }
};

struct FilterExpr final : Expr {
    ExprPtr value;
    std::string name;
    CallArgs args;
    Value eval(Context& ctx) const override { return apply_filter(name, value->eval(ctx), args.eval(ctx), line); }
};

struct TestExpr final : Expr {
    ExprPtr value;
    std::string name;
    CallArgs args;
    bool negated = false;
    Value eval(Context& ctx) const override { return Value(apply_test(name, value->eval(ctx), args.eval(ctx), line) != negated); }
};

struct Unary final : Expr {
    std::string op;  // "-", "+", "not"
    ExprPtr operand;
    Value eval(Context& ctx) const override {
        const Value v = operand->eval(ctx);
        if (op == "not") return Value(!v.truthy());
        if (!v.is_number()) fail(line, "bad operand type for unary " + op + ": '" + v.type_name() + "'");
        if (op == "+") return v.is_bool() ? Value(v.as_integer()) : v;
        return v.is_real() ? Value(-v.as_real()) : Value(-v.as_integer());
    }
};

struct Binary final : Expr {
    std::string op;  // "and", "or", or an operator of binary()
    ExprPtr a, b;
    Value eval(Context& ctx) const override {
        Value x = a->eval(ctx);
        if (op == "and") return x.truthy() ? b->eval(ctx) : x;  // Python's and / or give an operand
        if (op == "or") return x.truthy() ? x : b->eval(ctx);
        return binary(op, x, b->eval(ctx), line);
    }
};

// a < b <= c ...: Python's chained comparison.
struct Compare final : Expr {
    ExprPtr first;
    std::vector<std::pair<std::string, ExprPtr>> rest;
    Value eval(Context& ctx) const override {
        Value left = first->eval(ctx);
        for (const auto& [op, e] : rest) {
            Value right = e->eval(ctx);
            bool ok;
            if (op == "==") ok = left == right;
            else if (op == "!=") ok = !(left == right);
            else if (op == "in") ok = contains(right, left, line);
            else if (op == "not in") ok = !contains(right, left, line);
            else {
                const int c = compare(left, right, line);
                ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
            }
            if (!ok) return Value(false);
            left = std::move(right);
        }
        return Value(true);
    }
};

struct CondExpr final : Expr {
    ExprPtr condition, yes, no;  // no may be null: undefined
    Value eval(Context& ctx) const override {
        if (condition->eval(ctx).truthy()) return yes->eval(ctx);
        return no ? no->eval(ctx) : Value::undefined("the else branch");
    }
};

enum class Flow { normal, break_loop, continue_loop };

struct Stmt {
    int line = 1;
    virtual ~Stmt() = default;
    virtual Flow run(Context& ctx, std::string& out) const = 0;
};
using Body = std::vector<std::unique_ptr<Stmt>>;

inline Flow run_body(const Body& body, Context& ctx, std::string& out) {
    for (const auto& s : body)
        if (const Flow f = s->run(ctx, out); f != Flow::normal) return f;
    return Flow::normal;
}

struct TextStmt final : Stmt {
    std::string text;
    Flow run(Context&, std::string& out) const override {
        out += text;
        return Flow::normal;
    }
};

struct OutputStmt final : Stmt {
    ExprPtr value;
    Flow run(Context& ctx, std::string& out) const override {
        out += value->eval(ctx).str();
        if (out.size() > max_built_size) fail(line, "the output passed " + std::to_string(max_built_size) + " bytes");
        return Flow::normal;
    }
};

// {% generation %} (transformers' marker of the assistant's tokens) and other bodies that
// only group.
struct BlockStmt final : Stmt {
    Body body;
    Flow run(Context& ctx, std::string& out) const override { return run_body(body, ctx, out); }
};

struct IfStmt final : Stmt {
    std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
    Body otherwise;
    Flow run(Context& ctx, std::string& out) const override {
        for (const auto& [condition, body] : branches)
            if (condition->eval(ctx).truthy()) return run_body(body, ctx, out);
        return run_body(otherwise, ctx, out);
    }
};

struct LoopControl final : Stmt {
    Flow flow = Flow::break_loop;
    Flow run(Context&, std::string&) const override { return flow; }
};

struct ForStmt final : Stmt {
    std::vector<std::string> targets;  // for a, b in ...
    ExprPtr sequence, filter;          // filter may be null
    Body body, otherwise;

    Flow run(Context& ctx, std::string& out) const override {
        Scope* outer = ctx.scope;
        const auto bind = [&](Scope& scope, const Value& element) {
            if (targets.size() == 1) return scope.set(targets[0], element);
            if (!element.is_array() || element.array().size() != targets.size())
                fail(line, "cannot unpack " + element.repr() + " into " + std::to_string(targets.size()) + " names");
            for (std::size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], element.array()[i]);
        };
        Array items;
        for (const Value& e : iterate(sequence->eval(ctx), line)) {
            if (filter) {
                Scope probe{{}, outer};
                bind(probe, e);
                ctx.scope = &probe;
                const bool keep = filter->eval(ctx).truthy();
                ctx.scope = outer;
                if (!keep) continue;
            }
            items.push_back(e);
        }
        if (items.empty()) return run_body(otherwise, ctx, out);
        const auto n = static_cast<std::int64_t>(items.size());
        for (std::int64_t i = 0; i < n; ++i) {
            Object loop;
            loop.set("index", Value(i + 1));
            loop.set("index0", Value(i));
            loop.set("revindex", Value(n - i));
            loop.set("revindex0", Value(n - i - 1));
            loop.set("first", Value(i == 0));
            loop.set("last", Value(i == n - 1));
            loop.set("length", Value(n));
            loop.set("depth", Value(1));
            loop.set("depth0", Value(0));
            loop.set("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value::undefined("loop.previtem"));
            loop.set("nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value::undefined("loop.nextitem"));
            loop.set("cycle", Value::function("loop.cycle", [i, l = line](const Arguments& a) {
                         if (a.positional.empty()) fail(l, "loop.cycle() needs at least one value");
                         return a.positional[static_cast<std::size_t>(i) % a.positional.size()];
                     }));
            ctx.step(line);
            Scope scope{{}, outer};
            scope.set("loop", Value(std::move(loop)));
            bind(scope, items[static_cast<std::size_t>(i)]);
            ctx.scope = &scope;
            const Flow f = run_body(body, ctx, out);
            ctx.scope = outer;
            if (f == Flow::break_loop) break;
        }
        return Flow::normal;
    }
};

struct SetStmt final : Stmt {
    std::string name, attribute;  // set name = ..., or set name.attribute = ... (a namespace)
    ExprPtr value;                // null: {% set name %}body{% endset %}
    Body body;
    Flow run(Context& ctx, std::string&) const override {
        Value v;
        if (value) {
            v = value->eval(ctx);
        } else {
            std::string captured;
            run_body(body, ctx, captured);
            v = Value(std::move(captured));
        }
        if (attribute.empty()) {
            ctx.scope->set(name, std::move(v));
            return Flow::normal;
        }
        const Value* target = ctx.scope->find(name);
        if (!target || !target->is_object() || !target->object().is_namespace)
            fail(line, "cannot assign attribute on non-namespace object '" + name + "'");
        target->object().set(attribute, std::move(v));
        return Flow::normal;
    }
};

struct MacroStmt final : Stmt {
    std::string name;
    std::vector<std::pair<std::string, ExprPtr>> parameters;  // a default may be null
    Body body;

    Flow run(Context& ctx, std::string&) const override {
        Context* c = &ctx;
        ctx.scope->set(name, Value::function(name, [this, c](const Arguments& args) { return call(*c, args); }));
        return Flow::normal;
    }

    Value call(Context& ctx, const Arguments& args) const {
        ctx.step(line);
        if (ctx.call_depth >= Context::max_call_depth)
            fail(line, "macro '" + name + "' called more than " + std::to_string(Context::max_call_depth) + " deep");
        Scope scope{{}, ctx.top};
        Array varargs;
        for (std::size_t i = 0; i < args.positional.size(); ++i) {
            if (i < parameters.size()) scope.set(parameters[i].first, args.positional[i]);
            else varargs.push_back(args.positional[i]);
        }
        Object kwargs;
        for (const auto& [k, v] : args.named) {
            bool known = false;
            for (const auto& p : parameters) known |= p.first == k;
            if (known) scope.set(k, v);
            else kwargs.set(k, v);
        }
        Scope* saved = ctx.scope;
        ctx.scope = &scope;
        ++ctx.call_depth;
        for (const auto& parameter : parameters) {
            const std::string& p = parameter.first;
            if (!scope.vars.find(p)) scope.set(p, parameter.second ? parameter.second->eval(ctx) : Value::undefined(p));
        }
        scope.set("varargs", Value(std::move(varargs)));
        scope.set("kwargs", Value(std::move(kwargs)));
        std::string out;
        try {
            run_body(body, ctx, out);
        } catch (...) {
            ctx.scope = saved;
            --ctx.call_depth;
            throw;
        }
        ctx.scope = saved;
        --ctx.call_depth;
        return Value(std::move(out));
    }
};

}  // namespace tessera::chat::jinja
