// Load on an OpenAI-compatible completions server (examples/server or llama.cpp's llama-server):
// aggregate generated tokens/s at each concurrency, and the time to first token of a new
// request while others stream. Plain fetch, no packages; loopback only.
//
//   node bench/server_load.mjs --url http://127.0.0.1:8080 --concurrency 1,2,4,8,16 --tokens 64 \
//        --requests 3 --eos 50256 [--vocab vocab.json] [--ttft 8] [--label tessera]
//
// Each of C workers sends `requests` requests one after another (a 16-token prompt, `tokens`
// new tokens, the end-of-text token banned by logit_bias so that every request runs to its
// length); throughput = all completion tokens (the server's usage) / wall time. Prints CSV:
// label,concurrency,tokens_per_second,requests,seconds. Sampling: temperature 0.8, top_k 40,
// top_p 0.95, min_p 0.05 (llama-server's defaults, sent explicitly to both).
// --vocab: also ban the tokens whose bytes are not whole UTF-8 characters (a random-weight
// model strings them into invalid text, which llama-server refuses with a 500).
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    concurrency: { type: 'string', default: '1,2,4,8,16' },
    tokens: { type: 'string', default: '64' },
    requests: { type: 'string', default: '3' },
    eos: { type: 'string', default: '50256' },
    ttft: { type: 'string' },  // streams running while the new request arrives
    label: { type: 'string', default: 'server' },
    vocab: { type: 'string' },
  },
});
const bias = { [opt.eos]: -100 };
if (opt.vocab) {
  // GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for 256 + i.
  const printable = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  const byteOf = new Map();
  for (let b = 0, extra = 0; b < 256; ++b) byteOf.set(String.fromCodePoint(printable(b) ? b : 256 + extra++), b);
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (const [token, id] of Object.entries(JSON.parse(readFileSync(opt.vocab, 'utf8')))) {
    const bytes = Uint8Array.from([...token].map((c) => byteOf.get(c) ?? 0));
    try {
      strict.decode(bytes);
    } catch {
      bias[id] = -100;
    }
  }
}
const tokens = Number(opt.tokens);
const prompt = 'The history of the city begins with a small village on the bank of a wide river, where';

async function complete(body) {
  const res = await fetch(`${opt.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, logit_bias: bias, ...body }),
  });
  if (!res.ok) throw new Error(`${res.status}: ${await res.text()}`);
  return res;
}

async function throughput(c) {
  let generated = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: c }, async (_, w) => {
    for (let i = 0; i < Number(opt.requests); ++i) {
      // A different start per request: no server may answer from a cached prompt.
      const r = await (await complete({ prompt: `${c}.${w}.${i} ${prompt}`, max_tokens: tokens, seed: w * 1000 + i })).json();
      if (r.usage.completion_tokens !== tokens) throw new Error(`asked ${tokens} tokens, got ${r.usage.completion_tokens}`);
      generated += r.usage.completion_tokens;
    }
  }));
  const seconds = (performance.now() - start) / 1e3;
  console.log(`${opt.label},${c},${(generated / seconds).toFixed(1)},${c * Number(opt.requests)},${seconds.toFixed(2)}`);
}

// Milliseconds from sending a streamed request to its first event with text.
async function firstToken(body) {
  const start = performance.now();
  const res = await complete({ ...body, stream: true });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let first = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    if (first === null && /data: \{.*"text":"[^"]/.test(buffer)) first = performance.now() - start;
  }
  return first;
}

// The new request's prompt: 128 tokens' worth of text, so that its prefill is measurable.
const longPrompt = (prompt + ' ').repeat(6);
async function ttft(others) {
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  const alone = [], busy = [], gaps = [];
  for (let i = 0; i < 9; ++i) alone.push(await firstToken({ prompt: `${i}. ${longPrompt}`, max_tokens: 1, seed: i }));
  // `others` streams that run long; once they stream, new requests arrive one after another.
  let stop = false;
  const streams = Array.from({ length: others }, async (_, w) => {
    for (let i = 0; !stop; ++i) {
      const start = performance.now();
      const r = await (await complete({ prompt: `${w}.${i}: ${prompt}`, max_tokens: 4 * tokens, seed: 7 + w })).json();
      gaps.push((performance.now() - start) / r.usage.completion_tokens);
    }
  });
  await new Promise((r) => setTimeout(r, 1000));
  for (let i = 0; i < 9; ++i) busy.push(await firstToken({ prompt: `${i + 10}. ${longPrompt}`, max_tokens: 1, seed: i }));
  stop = true;
  await Promise.all(streams);
  console.log(`# ${opt.label}: time to first token of a ~128-token prompt: alone ${median(alone).toFixed(1)} ms, ` +
              `while ${others} stream ${median(busy).toFixed(1)} ms; their time per token ${median(gaps).toFixed(1)} ms`);
}

if (opt.ttft) {
  await ttft(Number(opt.ttft));
} else {
  for (const c of opt.concurrency.split(',').map(Number)) await throughput(c);
}
