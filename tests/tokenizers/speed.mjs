// Encode speed of Hugging Face's JavaScript tokenizers on a text, for bench/tokenizer_vs_references.sh.
//   node tests/tokenizers/speed.mjs TOKENIZER_DIR CORPUS [REPEATS]
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const [dir, corpus, repeatsArg] = process.argv.slice(2);
const t = new Tokenizer(JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8")),
                        JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, "utf8")));
const text = readFileSync(corpus, "utf8");
const bytes = Buffer.byteLength(text, "utf8");
t.encode(text.slice(0, 10000), { add_special_tokens: false });  // warm up
const times = [];
let tokens = 0;
for (let i = 0; i < Number(repeatsArg ?? 5); i++) {
  const start = process.hrtime.bigint();
  tokens = t.encode(text, { add_special_tokens: false }).ids.length;
  times.push(Number(process.hrtime.bigint() - start) / 1e9);
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(`tokenizers.js ${dir}: ${bytes} bytes -> ${tokens} tokens, median ${(median * 1e3).toFixed(1)} ms, ${(bytes / median / 1e6).toFixed(1)} MB/s`);
