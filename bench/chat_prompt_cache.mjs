// Time to first token over a multi-turn chat, with the server's prompt cache and without it
// (--no-prompt-cache), side by side in one run. Each turn sends the whole conversation, as chat
// clients do: a user message of about 150 tokens, then a reply of about 150 goes into the
// history. The time to first token is from sending the request to the first streamed piece of
// content. Two kinds of reply:
//   model:     the model's greedy reply. A random-weight model writes tokens that its tokenizer
//              would not (single letters): the reply re-tokenizes differently when sent back,
//              so only the earlier prompt is found in the cache.
//   canonical: a reply from the held-out text, put into the cache after the turn as a model that
//              wrote those tokens would have left it (a request with the reply and no generation
//              prompt, not timed): what a trained model's replies, which re-tokenize as
//              written, give.
// Greedy decoding makes both runs' replies the same token for token when the cache changes
// nothing; the script checks that.
//
//   node bench/chat_prompt_cache.mjs SERVER MODEL TEMPLATE [model|canonical] [turns] [reply_tokens]
//   (bench/RESULTS.md: a SmolLM2-135M-shaped model, tools/llama_reference.py checkpoint --vocab)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const [server, model, template, kindArg, turnsArg, replyArg] = process.argv.slice(2);
const kind = kindArg ?? 'model';
const turns = Number(turnsArg ?? 6);
const replyTokens = Number(replyArg ?? 150);
const here = path.dirname(fileURLToPath(import.meta.url));
const text = readFileSync(path.join(here, '../tests/data/fortunes-gpt2/heldout.txt'), 'utf8').replace(/\s+/g, ' ');

async function start(args) {
  const proc = spawn(server, ['--model', model, '--port', '0', '--threads', '2', '--parallel', '2', '--ctx', '4096',
                              '--chat-template-file', template, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && log.includes('server: ready')) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`server exited ${code}: ${log}`)));
  });
  return { proc, base: `http://127.0.0.1:${port}`, log: () => log };
}

// One streamed turn: the reply's text, the time to its first content, and the usage.
async function turn(base, messages, extra = {}) {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages, max_tokens: replyTokens, temperature: 0, stream: true, stream_options: { include_usage: true },
                           ...extra }),
  });
  let ttft = null, reply = '', usage = null, buffer = '';
  for await (const part of res.body) {
    buffer += Buffer.from(part).toString('utf8');
    let at;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices ?? []) {
        if (c.delta?.content) {
          if (ttft === null) ttft = performance.now() - t0;
          reply += c.delta.content;
        }
      }
    }
  }
  return { ttft, reply, usage };
}

async function conversation(args) {
  const s = await start(args);
  const messages = [{ role: 'system', content: 'You are a fortune teller.' }];
  const out = [];
  try {
    await turn(s.base, [{ role: 'user', content: 'Warm up.' }]);  // the weights paged in before timing
    for (let t = 0; t < turns; ++t) {
      messages.push({ role: 'user', content: text.slice(t * 800, t * 800 + 400) });
      const r = await turn(s.base, messages);
      out.push(r);
      if (kind === 'model') {
        messages.push({ role: 'assistant', content: r.reply });
      } else {
        messages.push({ role: 'assistant', content: text.slice(t * 800 + 400, t * 800 + 800) });
        await turn(s.base, messages, { add_generation_prompt: false, max_tokens: 1 });
      }
    }
  } finally {
    s.proc.kill('SIGTERM');
  }
  return out;
}

const load = readFileSync('/proc/loadavg', 'utf8').trim();
const cached = await conversation([]);
const uncached = await conversation(['--no-prompt-cache']);
console.log(`load before: ${load}; replies: ${kind}`);
console.log('| turn | prompt tokens | cached | first token, cache on (ms) | cache off (ms) | speed-up |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (let t = 0; t < turns; ++t) {
  const a = cached[t], b = uncached[t];
  console.log(`| ${t + 1} | ${a.usage.prompt_tokens} | ${a.usage.prompt_tokens_details.cached_tokens} | ${a.ttft.toFixed(1)} | ` +
              `${b.ttft.toFixed(1)} | ${(b.ttft / a.ttft).toFixed(2)}x |`);
}
const same = cached.every((r, t) => r.reply === uncached[t].reply);
console.log(`replies identical with and without the cache: ${same}`);
if (!same) process.exitCode = 1;
