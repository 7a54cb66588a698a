#!/usr/bin/env python3
"""Compiles every ```cpp block of the README as a program, and runs it unless it is marked
<!-- snippet: compile-only (why) --> on the line before the block.

A block becomes a program: its #include lines at the top, the rest as the body of main().
"models/gpt2" in a block is replaced by --model (a small checkpoint in Hugging Face's layout
with GPT-2's tokenizer), so the loading examples run without a download. Programs run in the
repository root, where the README's relative paths (tests/data/gpt2) point.

  tools/check_readme_snippets.py --readme README.md --out DIR --model DIR -- c++ -std=c++20 -I include ...
"""
import argparse
import pathlib
import re
import subprocess
import sys


def blocks(readme):
    lines = readme.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            marker = lines[i - 1] if i > 0 else ""
            end = lines.index("```", i + 1)
            yield i + 1, lines[i + 1:end], "snippet: compile-only" in marker
            i = end
        i += 1


def program(body_lines, model):
    includes = [l for l in body_lines if l.startswith("#include")]
    body = [l.replace("models/gpt2", model) for l in body_lines if not l.startswith("#include")]
    return "\n".join(includes + ["int main() {"] + ["    " + l for l in body] + ["}", ""])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--readme", required=True, type=pathlib.Path)
    p.add_argument("--out", required=True, type=pathlib.Path)
    p.add_argument("--model", required=True)
    p.add_argument("compiler", nargs="+", help="compiler command line (after --)")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    root = a.readme.resolve().parent
    failed = 0
    found = list(blocks(a.readme))
    for line, body, compile_only in found:
        src = a.out / f"readme_line_{line}.cpp"
        src.write_text(program(body, a.model), encoding="utf-8")
        exe = a.out / f"readme_line_{line}"
        cmd = a.compiler + ([str(src), "-fsyntax-only"] if compile_only else [str(src), "-o", str(exe), "-pthread"])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            print(f"README line {line}: does not compile\n{r.stderr[-4000:]}")
            failed += 1
            continue
        if compile_only:
            print(f"README line {line}: compiles (compile-only)")
            continue
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, cwd=root)
        if r.returncode != 0:
            print(f"README line {line}: exits {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
            failed += 1
            continue
        print(f"README line {line}: compiles and runs")
    print(f"{len(found)} cpp blocks, {failed} failed")
    return 1 if failed or not found else 0


if __name__ == "__main__":
    sys.exit(main())
