// Hugging Face's JavaScript tokenizers (@huggingface/tokenizers) as the reference for tessera's
// tokenizer.json support: generated texts, encoded by both, must give the same ids, and
// tessera's decode must give the text back (byte-level BPE is lossless).
//
//   node tests/tokenizers/compare.mjs TOKENIZE_BINARY TOKENIZER_DIR [COUNT] [SEED] [GGUF_FILE]
//
// With GGUF_FILE (what quantize wrote from a model with this tokenizer.json), that file's
// tokenizer.ggml.* must give the same ids too: tessera's GGUF tokenizers, written and read back.
//
// Texts mix CJK, emoji with ZWJ sequences and skin tones, combining marks, runs of every kind
// of white space, digits of many scripts, code, contractions in any case, the vocabulary's
// added tokens with spaces around them, and random code points of every plane. Code points
// whose class (\p{L}, \p{N}, White_Space) differs between node's Unicode version and
// tessera's tables (include/tessera/text/unicode_tables.hpp) are left out and counted: they
// measure the Unicode versions, not the algorithm.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const [binary, dir, countArg, seedArg, gguf] = process.argv.slice(2);
if (!binary || !dir) {
  console.error("usage: compare.mjs TOKENIZE_BINARY TOKENIZER_DIR [COUNT] [SEED]");
  process.exit(2);
}
const count = Number(countArg ?? 10000);
let state = BigInt(seedArg ?? 1) | 1n;
const random = () => {  // xorshift64*, deterministic across runs
  state ^= state >> 12n; state ^= (state << 25n) & 0xffffffffffffffffn; state ^= state >> 27n;
  return Number(((state * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 11n) / 2 ** 53;
};
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

// tessera's character classes, read from its generated tables.
const tables = readFileSync(new URL("../../include/tessera/text/unicode_tables.hpp", import.meta.url), "utf8");
const ranges = (name) => {
  const body = tables.slice(tables.indexOf(name + "[] = {"));
  const end = body.indexOf("};");
  return [...body.slice(0, end).matchAll(/\{0x([0-9A-Fa-f]+), 0x([0-9A-Fa-f]+)\}/g)].map((m) => [parseInt(m[1], 16), parseInt(m[2], 16)]);
};
const ours = { letter: ranges("letter_ranges"), number: ranges("number_ranges"), space: ranges("white_space_ranges") };
const inRanges = (rs, cp) => rs.some(([a, b]) => cp >= a && cp <= b);
const oursClass = (cp) => inRanges(ours.letter, cp) ? "L" : inRanges(ours.number, cp) ? "N" : inRanges(ours.space, cp) ? "S" : "O";
const nodeClass = (ch) => /\p{L}/u.test(ch) ? "L" : /\p{N}/u.test(ch) ? "N" : /\p{White_Space}/u.test(ch) ? "S" : "O";
// Code points assigned by the Unicode version of tessera's tables (DerivedAge.txt of Debian's
// unicode-data, where installed): those node's newer version assigned since are left out too,
// as NFC's data for them differs between the versions.
const assigned = (() => {
  try {
    const age = readFileSync("/usr/share/unicode/DerivedAge.txt", "utf8");
    const version = Number(/Version ([0-9]+\.[0-9]+)/.exec(tables)?.[1] ?? "15.0");
    return [...age.matchAll(/^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*([0-9.]+)/gm)]
      .filter((m) => Number(m[3]) <= version).map((m) => [parseInt(m[1], 16), parseInt(m[2] ?? m[1], 16)]);
  } catch { return null; }
})();
let versionSkips = 0;
const randomCodePoint = () => {
  for (;;) {
    const plane = random();
    const cp = plane < 0.6 ? int(0x20, 0xffff) : plane < 0.85 ? int(0x10000, 0x1ffff) : plane < 0.97 ? int(0x20000, 0x3ffff) : int(0xe0000, 0x10ffff);
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    const newer = assigned && !/\p{Cn}/u.test(ch) && !inRanges(assigned, cp);  // assigned since tessera's version
    if (nodeClass(ch) !== oursClass(cp) || newer) { versionSkips++; continue; }
    return ch;
  }
};

const json = JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8"));
const config = JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
const reference = new Tokenizer(json, config);
const added = json.added_tokens.map((t) => t.content);
// White space beside an lstrip / rstrip token is taken into it: such texts do not come back.
const stripping = json.added_tokens.filter((t) => t.lstrip || t.rstrip).map((t) => t.content);
// With an NFC normalizer the text comes back normalized; with SentencePiece's ▁ before each
// part, a space comes back after each control token: both decode as the reference decodes.
const lossyDecode = json.normalizer?.type === "NFC" || json.normalizer?.type === "Sequence" || json.pre_tokenizer?.type === "Metaspace";
// tokenizers.js's Digits splits off ASCII digits only; Rust's tokenizers (char::is_numeric) and
// llama.cpp (\p{N}) every number character, as tessera does.
const digitsStep = JSON.stringify(json.pre_tokenizer ?? null).includes('"Digits"');
// tokenizers.js runs ByteLevel's own pattern and lstrip / rstrip with JavaScript's \s, which
// leaves out U+0085 and takes in U+FEFF, unlike Rust's tokenizers (Oniguruma's \s,
// char::is_whitespace), Python's regex and llama.cpp; its Split patterns are translated to
// Oniguruma's \s and agree.
const jsSpace = JSON.stringify(json.pre_tokenizer ?? null).includes('"use_regex":true') || stripping.length > 0;
const explain = (text) =>
  digitsStep && /[^\P{N}0-9]/u.test(text) ? "digits" : jsSpace && /[\u0085\ufeff]/.test(text) ? "space" : null;
// A GGUF file has no normalizer: llama.cpp encodes a Qwen2 file's text as it comes, without
// tokenizer.json's NFC, and so does tessera; texts that NFC changes are left out there.
const nfc = json.normalizer?.type === "NFC";

const parts = [
  () => pick(["北京今天天气怎么样？", "自然语言处理", "東京の天気は晴れです。", "서울은 한국의 수도입니다.", "ひらがなカタカナ", "春眠不觉晓"]),
  () => pick(["👍🏽", "👩‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "👨🏿‍💻", "😀", "❤️", "🧑🏻‍🤝‍🧑🏿", "#️⃣"]),
  () => pick(["e\u0301", "a\u0300\u0316", "a\u0316\u0300", "नमस्ते", "ก\u0e34", "Å", "A\u030a", "\u212b", "ﬁ", "Ǆ", "\u0338=",
              "\u200b", "\u200d", "\u1100\u1161\u11a8", "\uac00\u11a8", "\u0344", "\u0958", "e\u0301\u0301", "\u0301"]),
  () => pick([" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n ", "\u00a0", "\u3000", "\u2028", "\u0085", "\u000b", "\u000c", "\t \t", "   \n\t  "]),
  () => pick(["0", "12", "123", "1234567", "٣٤٥", "１２３", "²", "½", "Ⅻ", "3.14159", "1,000,000", "v2.0"]),
  () => pick(["int main() { return 0; }", "for (auto& x : xs) {", "def f(x):\n    return x**2", "if (a && b || !c)", "<div class=\"x\">", "#include <vector>", "a->b", "x += 1;"]),
  () => pick(["'s", "'S", "'re", "'RE", "'Ll", "'ve", "'m", "'D", "'t", "'ſ", "don't", "I'M", "we'Re"]),
  () => pick(["Hello", "world", "The", "quick", "brown", "fox", "tokenizer", "Ünïcödé", "naïve", "word", "words", "_word"]),
  () => pick(["!", "?", "...", "--", "\"", "(", ")", "[", "]", "{", "}", "$", "€", "@", "#", "%", "^", "&", "*", "~", "`", "|"]),
  () => (added.length ? pick(added) : ""),
  () => randomCodePoint(),
];
const texts = [];
for (let i = 0; i < count; i++) {
  let s = "";
  const n = int(0, 24);
  for (let k = 0; k < n; k++) s += pick(parts)();
  texts.push(s);
}

const run = (args, input, model = dir) => execFileSync(binary, ["--model", model, "--jsonl", ...args], { input, maxBuffer: 1 << 30 }).toString().split("\n");
const ids = run(["--allow-special"], texts.map((t) => JSON.stringify(t)).join("\n") + "\n");
const ggufIds = gguf ? run(["--allow-special"], texts.map((t) => JSON.stringify(t)).join("\n") + "\n", gguf) : null;
const theirs = texts.map((t) => reference.encode(t, { add_special_tokens: false }).ids);
const decoded = run(["--decode"], theirs.map((x) => JSON.stringify(x)).join("\n") + "\n");
let differ = 0, lossy = 0;
const explained = { digits: 0, space: 0 };
for (let i = 0; i < texts.length; i++) {
  const mine = JSON.parse(ids[i]);
  if (JSON.stringify(mine) !== JSON.stringify(theirs[i])) {
    const why = explain(texts[i]);
    if (why) explained[why]++;
    else if (++differ <= 5) console.log("DIFFERENT ids for", JSON.stringify(texts[i]), "\n  tessera:", JSON.stringify(mine), "\n  reference:", JSON.stringify(theirs[i]));
  }
  if (ggufIds && ggufIds[i] !== ids[i] && !(nfc && texts[i].normalize("NFC") !== texts[i]) && ++differ <= 5) {
    console.log("DIFFERENT ids through", gguf, "for", JSON.stringify(texts[i]), "\n  gguf:", ggufIds[i], "\n  tokenizer.json:", ids[i]);
  }
  // There, what the reference itself decodes its ids to.
  const expected = lossyDecode && theirs[i].length ? reference.decode(theirs[i]) : texts[i];
  if (JSON.parse(decoded[i]) !== expected && !stripping.some((t) => texts[i].includes(t))) {
    if (++lossy <= 5) console.log("decode(encode(x)) != x for", JSON.stringify(texts[i]), "->", decoded[i]);
  }
}
// BOS where the file's template puts one: the reference's own post-processing.
const bos = run(["--bos", "--allow-special"], JSON.stringify("Hello world") + "\n")[0];
const theirBos = JSON.stringify(reference.encode("Hello world").ids);
if (bos !== theirBos) { differ++; console.log("DIFFERENT prompt start:", bos, "reference:", theirBos); }
if (gguf) {
  const ggufBos = run(["--bos", "--allow-special"], JSON.stringify("Hello world") + "\n", gguf)[0];
  if (ggufBos !== theirBos) { differ++; console.log("DIFFERENT prompt start through", gguf, ":", ggufBos, "reference:", theirBos); }
}
console.log(`${dir}${gguf ? " and " + gguf : ""}: ${texts.length} texts, ${texts.length - differ - explained.digits - explained.space} identical ids, ` +
            `${differ} differ unexplained, ${explained.digits} where tokenizers.js's Digits ignores non-ASCII numbers, ` +
            `${explained.space} where its \\s leaves out U+0085 or takes in U+FEFF; ` +
            `decode(encode(x)) == x for ${texts.length - lossy}; ${versionSkips} code points left out (Unicode versions differ)`);
process.exit(differ === 0 && lossy === 0 ? 0 : 1);
