#!/usr/bin/env python3
"""Writes a deterministic ~1 MB mixed English / source code / CJK text for tokenizer speed runs:

    python3 tools/make_tokenizer_corpus.py OUT [--bytes 1048576]

English from the project's Markdown, code from its headers, CJK from fixed sentences,
interleaved in blocks (roughly 40% English, 40% code, 20% CJK by bytes).
"""
import argparse
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
CJK = [
    "北京今天天气怎么样？我们明天去长城吧。", "自然语言处理是人工智能的一个重要分支。", "这个模型在中文文本上表现很好。",
    "東京の天気は晴れです。明日は雨が降るかもしれません。", "日本語の文章をトークン化するのは難しいです。",
    "서울은 한국의 수도입니다. 오늘 날씨가 좋네요.", "한국어 형태소 분석은 흥미로운 주제입니다.",
    "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。", "ひらがなとカタカナと漢字が混ざっています。",
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bytes", type=int, default=1 << 20)
    args = parser.parse_args()
    english = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("docs/*.md")) + [ROOT / "README.md"])
    code = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "include").rglob("*.hpp"))
                     if "unicode_tables" not in p.name)
    cjk = "\n".join(CJK * 40)
    pieces, size, i = [], 0, 0
    while size < args.bytes:
        for source, length in ((english, 8000), (code, 8000), (cjk, 4000)):
            start = (i * length) % max(1, len(source) - length)
            block = source[start:start + length] + "\n"
            pieces.append(block)
            size += len(block.encode("utf-8"))
        i += 1
    text = "".join(pieces).encode("utf-8")[: args.bytes].decode("utf-8", errors="ignore")
    pathlib.Path(args.out).write_text(text, encoding="utf-8")
    print(f"wrote {len(text.encode('utf-8'))} bytes to {args.out}")


if __name__ == "__main__":
    main()
