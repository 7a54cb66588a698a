// js-tiktoken's GPT-2 encode speed on a file, one thread:  node tools/tiktoken_speed.mjs FILE
import { readFileSync } from "node:fs";
import { getEncoding } from "js-tiktoken";

const text = readFileSync(process.argv[2], "utf8");
const bytes = Buffer.byteLength(text, "utf8");
const enc = getEncoding("gpt2");
enc.encode(text, [], []);  // warm up: JIT and its cache
let best = Infinity, tokens = 0;
for (let r = 0; r < 5; r++) {
  const t0 = process.hrtime.bigint();
  tokens = enc.encode(text, [], []).length;
  best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
}
console.log(`js-tiktoken ${bytes} bytes -> ${tokens} tokens: best of 5 ${(best * 1e3).toFixed(1)} ms, ` +
            `${(bytes / best / 1e6).toFixed(2)} MB/s`);
