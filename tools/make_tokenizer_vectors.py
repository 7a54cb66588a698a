#!/usr/bin/env python3
"""Writes tests/data/tokenizer/vectors.jsonl: test strings and their GPT-2 token ids computed by
tools/gpt2_encoder.py (OpenAI's algorithm with the regex module). Deterministic:

    apt-get install python3-regex
    /usr/bin/python3 tools/make_tokenizer_vectors.py

Each line: {"text": "...", "ids": [...]}. Strings cover prose, code, whitespace runs, numbers,
contractions in mixed case, CJK, Arabic, Hindi, emoji sequences, control and special white
space characters, and seeded random Unicode.
"""
import json
import pathlib
import random

from gpt2_encoder import Encoder

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/data/tokenizer/vectors.jsonl"

PROSE = [
    "Hello world", "Hello, world!", "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "In 1869, Dmitri Mendeleev published the first periodic table.",
    "She said: \"Don't go there!\" -- and he went anyway...",
    "GPT-2 is a large transformer-based language model with 1.5 billion parameters.",
    "Mr. O'Neil's dog barked at 3:45 a.m. (again).", "e-mail: someone@example.com, https://example.org/path?q=1&x=2",
    "Prices rose 12.5% to $1,234.56 in Q3 2024.", "  leading spaces", "trailing spaces   ", "multiple   inner    spaces",
    "Tabs\tbetween\twords", "Line one\nLine two\n\nLine four", "Windows\r\nline\r\nendings", "ALL CAPS SENTENCE HERE",
    "camelCaseIdentifier and snake_case_identifier", "A", "a", " ", "", "!", "?!?!", "...", "—", "–", "“quoted”",
    "Naïve café résumé façade coöperate", "Straße, Größe, Übermaß", "Ångström, Øresund, Æsir",
    "Ελληνικά γράμματα", "Русский текст, привет мир", "עברית כתובה מימין לשמאל", "ქართული ენა",
]

CODE = [
    "int main() { return 0; }", "for (int i = 0; i < n; ++i) {\n    sum += a[i];\n}",
    "def f(x):\n    return x ** 2\n", "    if (x == nullptr) throw std::runtime_error(\"null\");",
    "#include <vector>\n#include <string>\n", "const auto [a, b] = std::pair{1, 2};",
    "SELECT * FROM users WHERE id = 42;", "<div class=\"main\"><p>Hi</p></div>",
    "x = {'a': 1, 'b': [1, 2, 3]}", "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "$ ls -la | grep '^d' > out.txt 2>&1", "let s = `template ${x}`;", "a+=b;c-=d;e*=f;g/=h;",
    "// comment\n/* block */\n# hash", "if x>=0 and y<=1 or not z: pass", "0x1F 0b1010 1e-9 3.14159f",
    "std::vector<std::vector<float>> m(3, std::vector<float>(4));", "@decorator\nclass Foo(Bar):\n\tpass",
    "\t\tindented with tabs", "        eight spaces of indent", "}\n\n\n}", "\"\"\"docstring\"\"\"",
    "path/to/file.cpp:123:45: error: expected ';'", "{\"key\": \"value\", \"n\": [1, 2.5, null, true]}",
]

CONTRACTIONS = [
    "'s", "'S", "'t", "'T", "'re", "'Re", "'RE", "'ve", "'Ve", "'VE", "'m", "'M", "'ll", "'Ll", "'LL", "'d", "'D",
    "We'Ve", "we've", "WE'VE", "I'm", "I'M", "you'd", "YOU'D", "don't", "DON'T", "Don'T", "it's", "IT'S", "It'S",
    "they'll", "They'Ll", "she'd've", "y'all", "o'clock", "rock 'n' roll", "'tis", "'twas", "ma'am", "'", "''", "'''",
    "'s'S's", "'sam", "' s", "don''t", "’s", "it’s", "l'été", "aujourd'hui",
    # An upper-case letter after the apostrophe is no contraction: "'" + "Sam", not "'S" + "am".
    "'Sam", "'Tom", "'Mary", "'Dave", "'Rex", "'Vera", "'Lloyd", "'REd", "'VEry", "'LLama", "O'Reilly's",
    "WE'RE HERE", "THEY'LL GO", "I'D SAY", "IT'S TIME", "'Sup", "'stead", "'tween", "'mid", "'dose", "'review",
    "'very", "'llama", "x'sy", "x'Sy", "'s's's", "'S'S'S",
]

SPECIAL_CHARS = [
    "\u0085", "a\u0085b", "\u0085\u0085", " \u0085 ", "\u00a0", "a\u00a0b", "\u00a0\u00a0x", "\u2028", "a\u2028b",
    "\u2029", "\ufeff", "\ufeffhello", "a\ufeffb", " \ufeff ", "\u200b", "a\u200bb", "\u3000", "x\u3000\u3000y",
    "\u1680", "\u202f", "\u205f", "\u2000\u2001\u2002", "\x00", "a\x00b", "\x01\x02\x03", "\x1b[31mred\x1b[0m",
    "\x7f", "\x1c\x1d\x1e\x1f", "a\x1cb", "\x0b\x0c", "bell\x07", "\u200d", "\u200e\u200f", "\ufffd", "\U0010ffff",
    "\ue000", "<|endoftext|>", "Hello<|endoftext|>World", "<|endoftext|><|endoftext|>", "<|endoftext", "|>",
]

SCRIPTS = [
    "北京今天天气怎么样", "我爱自然语言处理。", "你好，世界！", "中华人民共和国成立于1949年。", "日本語のテキストです。",
    "東京タワーは333メートルです", "ひらがな カタカナ 漢字", "한국어 텍스트입니다", "안녕하세요, 세계!", "العربية لغة جميلة",
    "مرحبا بالعالم", "السلام عليكم ورحمة الله", "हिन्दी भाषा", "नमस्ते दुनिया", "क्षत्रिय ज्ञान श्री", "द्वितीय", "தமிழ் மொழி",
    "ภาษาไทย", "ພາສາລາວ", "မြန်မာ", "ᠮᠣᠩᠭᠣᠯ", "ꦧꦱꦗꦮ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟘𝟙𝟚𝟛", "①②③", "ⅠⅡⅢⅣ", "٠١٢٣٤٥", "१२३", "¼½¾",
    "👍", "👍🏽", "👨‍👩‍👧", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸🇯🇵", "👩🏿‍💻", "❤️", "✌🏻", "😀😃😄😁", "🤦‍♂️", "🧑‍🤝‍🧑",
    "e\u0301", "n\u0303", "a\u0300\u0301\u0302", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319",
    "\u0915\u094d\u0937", "\u0627\u064e\u0644\u0652", "ﬁ ﬂ ﬀ", "Ｆｕｌｌｗｉｄｔｈ", "ｶﾀｶﾅ",
]


def whitespace_cases():
    runs = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", " \n", "\n ", "\r\n", " \t ", "  \n  ", "\u00a0 ",
            " \u3000", "\t\n\t"]
    shapes = ["{w}", "{w}word", "word{w}", "a{w}b", "{w}123", "123{w}", "x{w}!", "!{w}x", "{w}{w}z", "hello{w}world{w}",
              "{w}'s", "{w}\u4e2d"]
    return [s.format(w=w) for w in runs for s in shapes]


def number_cases():
    out = []
    for n in range(1, 41):
        digits = "".join(str((i * 7 + n) % 10) for i in range(n))
        out += [digits, " " + digits, "x" + digits, digits + "th"]
    out += ["3.14", "1,000,000", "1.000.000,00", "-42", "+7", "1e10", "0.000001", "2024-11-30", "12:34:56",
            "v1.2.3", "192.168.0.1", "(555) 123-4567", "١٢٣٤", "๑๒๓"]
    return out


def random_cases(rng, count):
    # Code points drawn from blocks that stress every class of the pattern.
    blocks = [(0x20, 0x7E), (0x20, 0x7E), (0x20, 0x7E), (0x00, 0x1F), (0x80, 0xFF), (0x100, 0x24F), (0x370, 0x3FF),
              (0x400, 0x4FF), (0x590, 0x6FF), (0x900, 0x97F), (0x2000, 0x206F), (0x2070, 0x209F), (0x20A0, 0x20CF),
              (0x2100, 0x214F), (0x2150, 0x218F), (0x2190, 0x22FF), (0x3000, 0x30FF), (0x4E00, 0x9FFF),
              (0xAC00, 0xD7A3), (0xFE00, 0xFE0F), (0xFF00, 0xFFEF), (0x1F300, 0x1FAFF), (0x10000, 0x1007F),
              (0x1D400, 0x1D7FF), (0xE0000, 0xE007F), (0x10FFF0, 0x10FFFF)]
    specials = [" ", " ", " ", "\n", "\t", "'", "'s", "'LL", "\u0085", "\ufeff", "\u00a0", "\u200d", "\r\n", "  "]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 24)):
            if rng.random() < 0.25:
                parts.append(rng.choice(specials))
            else:
                lo, hi = rng.choice(blocks)
                cp = rng.randint(lo, hi)
                if 0xD800 <= cp <= 0xDFFF:
                    cp = 0x41
                parts.append(chr(cp))
        out.append("".join(parts))
    return out


def main():
    rng = random.Random(20261130)
    strings = PROSE + CODE + CONTRACTIONS + SPECIAL_CHARS + SCRIPTS + whitespace_cases() + number_cases()
    strings += [a + " " + b for a, b in zip(PROSE, CODE)]  # mixed
    strings += random_cases(rng, 1600)
    seen = set()
    unique = [s for s in strings if not (s in seen or seen.add(s))]
    enc = Encoder(ROOT / "tests/data/gpt2/vocab.json", ROOT / "tests/data/gpt2/merges.txt")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        for s in unique:
            f.write(json.dumps({"text": s, "ids": enc.encode(s)}, ensure_ascii=True) + "\n")
    print(f"wrote {len(unique)} vectors to {OUT}")


if __name__ == "__main__":
    main()
