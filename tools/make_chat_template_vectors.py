#!/usr/bin/env python3
"""Renders tests/data/chat/templates/*.jinja over generated conversations with Jinja2 itself,
configured as Hugging Face transformers' apply_chat_template configures it, and writes what it
rendered (or the error it raised) to tests/data/chat/vectors.json for tests/test_chat.cpp.

The environment, as transformers (utils/chat_template_utils.py) builds it:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker,
loopcontrols]); filters["tojson"] = json.dumps(x, ensure_ascii=False, indent=..., sort_keys=...);
globals raise_exception (raises TemplateError(message)) and strftime_now (datetime.now().strftime;
here a fixed moment, which the test passes to the C++ side as well).

Regenerate: /usr/bin/python3 tools/make_chat_template_vectors.py   (Debian: python3-jinja2)
"""
import json
import pathlib
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "chat"
NOW = datetime(2026, 12, 3, 14, 5, 9)  # the test passes the same fields as its std::tm


class Generation(Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: NOW.strftime(fmt)
    return env


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather now, in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Current time in a time zone.",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}


def call(name, args, i=0):
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}


CONVERSATIONS = {
    "one_user": {"messages": [{"role": "user", "content": "Hello!"}]},
    "system_multi": {"messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And 3+3?"}]},
    "no_system_multi": {"messages": [
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "  Blue.\n"},
        {"role": "user", "content": "Another one?"},
        {"role": "assistant", "content": "Green."}]},
    "unicode": {"messages": [
        {"role": "system", "content": "Réponds en français. 你好 🌍"},
        {"role": "user", "content": "Quote \"this\" and 'that', a back\\slash, a tab\there,\nnew line, emoji 👩‍💻, ü, 北京"},
        {"role": "assistant", "content": "«D'accord» — 好的 ✅"},
        {"role": "user", "content": "   spaces around   "}]},
    "tool_use": {"messages": [
        {"role": "system", "content": "You can check the weather."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Zürich", "unit": "celsius"})]},
        {"role": "tool", "content": "{\"temperature\": 3.5, \"sky\": \"cloudy\"}"},
        {"role": "assistant", "content": "3.5 °C and cloudy."},
        {"role": "user", "content": "Thanks"}], "tools": [WEATHER, TIME]},
    "two_tool_calls": {"messages": [
        {"role": "user", "content": "Weather and time in Tokyo?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            call("get_weather", {"city": "Tokyo"}, 0), call("get_time", {"tz": "Asia/Tokyo"}, 1)]},
        {"role": "tool", "content": "sunny, 12"},
        {"role": "tool", "content": "09:30"}], "tools": [WEATHER, TIME]},
    "tools_no_calls": {"messages": [
        {"role": "user", "content": "Just say hi."}], "tools": [TIME]},
    "parts": {"messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be kind."}]},
        {"role": "user", "content": [{"type": "text", "text": "First part."}, {"type": "text", "text": " Second part. "}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "user", "content": [{"type": "text", "text": "Again"}]}]},
    "thinking": {"messages": [
        {"role": "user", "content": "Is 7 prime?"},
        {"role": "assistant", "content": "<think>\nDivisors of 7: 1 and 7.\n</think>\n\nYes, 7 is prime."},
        {"role": "user", "content": "And 9?"},
        {"role": "assistant", "content": "<think>3 x 3</think>No: 9 = 3 x 3."}]},
    "not_alternating": {"messages": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"}]},
    "empty": {"messages": []},
}

# Which conversations each template is written for (others are allowed to fail in Jinja2 too,
# and are compared as errors), and the extra variables it reads.
TEMPLATES = {
    "chatml": {"bos": "", "eos": "<|im_end|>"},
    "qwen2_5": {"bos": "", "eos": "<|im_end|>"},
    "qwen3": {"bos": "", "eos": "<|im_end|>", "extra": [{}, {"enable_thinking": False}, {"enable_thinking": True}]},
    "llama3_1": {"bos": "<|begin_of_text|>", "eos": "<|eot_id|>",
                 "extra": [{}, {"date_string": "01 Jan 2025"}, {"tools_in_user_message": False}]},
    "mistral_inst": {"bos": "<s>", "eos": "</s>"},
    "gemma": {"bos": "<bos>", "eos": "<eos>"},
    "phi3": {"bos": "<s>", "eos": "<|endoftext|>"},
    "deepseek_r1": {"bos": "<｜begin▁of▁sentence｜>", "eos": "<｜end▁of▁sentence｜>"},
    "zephyr": {"bos": "<s>", "eos": "</s>"},
    "features": {"bos": "<s>", "eos": "</s>"},
}


def main():
    env = environment()
    cases = []
    for name, spec in TEMPLATES.items():
        source = (DATA / "templates" / f"{name}.jinja").read_text(encoding="utf-8")
        template = env.from_string(source)
        for conv_name, conv in CONVERSATIONS.items():
            for extra in spec.get("extra", [{}]):
                for add_generation_prompt in (True, False):
                    variables = {"messages": conv["messages"], "add_generation_prompt": add_generation_prompt,
                                 "bos_token": spec["bos"], "eos_token": spec["eos"], **extra}
                    if "tools" in conv:
                        variables["tools"] = conv["tools"]
                    case = {"template": name, "conversation": conv_name, "variables": variables}
                    try:
                        case["expected"] = template.render(**variables)
                    except jinja2.exceptions.UndefinedError as e:
                        case["error"] = ""  # any error: Jinja2's wording of undefined names is its own
                        case["jinja2_says"] = str(e)
                    except jinja2.exceptions.TemplateError as e:
                        case["error"] = str(e)  # raise_exception's message, compared exactly
                    except (TypeError, IndexError, KeyError) as e:
                        case["error"] = ""
                        case["jinja2_says"] = f"{type(e).__name__}: {e}"
                    cases.append(case)
    out = DATA / "vectors.json"
    out.write_text(json.dumps({"jinja2": jinja2.__version__, "now": NOW.isoformat(), "cases": cases},
                              ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    rendered = sum("expected" in c for c in cases)
    print(f"{out}: {len(cases)} cases, {rendered} rendered, {len(cases) - rendered} errors")


if __name__ == "__main__":
    main()
