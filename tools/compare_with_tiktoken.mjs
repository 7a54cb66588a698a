// A second opinion on the reference vectors: js-tiktoken's GPT-2 encoding of every string.
//
//   npm install --prefix tools && node tools/compare_with_tiktoken.mjs
//
// js-tiktoken runs the same pattern with JavaScript's regex engine, whose \s differs from
// Unicode White_Space (it includes U+FEFF and excludes U+0085), so strings with those two
// characters may differ; any other difference would point at a bug on one side.
import { readFileSync } from "node:fs";
import { getEncoding } from "js-tiktoken";

const enc = getEncoding("gpt2");
const lines = readFileSync(new URL("../tests/data/tokenizer/vectors.jsonl", import.meta.url), "utf8")
  .split("\n").filter(Boolean).map((l) => JSON.parse(l));
let differ = 0, explained = 0;
for (const { text, ids } of lines) {
  const theirs = enc.encode(text, [], []);  // special tokens are plain text, as in the vectors
  if (JSON.stringify(theirs) !== JSON.stringify(ids)) {
    differ++;
    const why = /[\u0085\ufeff]/.test(text);
    if (why) explained++;
    else console.log("UNEXPLAINED difference:", JSON.stringify(text), JSON.stringify(ids), JSON.stringify(theirs));
  }
}
console.log(`${lines.length} vectors: ${lines.length - differ} identical, ${differ} differ ` +
            `(${explained} contain U+0085 or U+FEFF, ${differ - explained} unexplained)`);
process.exit(differ - explained === 0 ? 0 : 1);
