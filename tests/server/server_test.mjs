// examples/server against the official openai client (pinned in package.json, installed by
// scripts/test.sh with `npm ci`). Each test starts its own server on a free loopback port, so
// ctest runs each as its own test: node --test-name-pattern '^NAME$' server_test.mjs.
//
// Environment: SERVER (the binary), MODEL (a checkpoint directory: the trained fortunes model),
// GENERATE (examples/generate: the single-sequence CLI the server must agree with).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, unlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import OpenAI from 'openai';

import { SERVER, MODEL, GENERATE, CHAT_MODEL, TEMPLATES, startServer, withServer, streamText, post } from './helpers.mjs';

const prompt = 'A fool and his money';

test('plain completion equals the command line generator', async () => {
  await withServer([], async (s) => {
    const r = await s.client().completions.create({ model: 'fortunes', prompt, max_tokens: 24, temperature: 0 });
    const cli = JSON.parse(execFileSync(GENERATE, ['--model', MODEL, '-p', prompt, '-n', '24', '--temperature', '0', '--json'],
                                        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].text, cli.text);
    assert.equal(r.choices[0].finish_reason, cli.stop_reason === 'max_new_tokens' ? 'length' : 'stop');
    assert.equal(r.usage.prompt_tokens, cli.prompt_tokens);
    assert.equal(r.usage.completion_tokens, cli.generated_tokens);
    assert.equal(r.usage.total_tokens, cli.prompt_tokens + cli.generated_tokens);
  });
});

test('a streamed completion is the plain one in pieces', async () => {
  await withServer([], async (s) => {
    const params = { model: 'fortunes', prompt, max_tokens: 40, temperature: 0.9, top_p: 0.95, seed: 11 };
    const plain = await s.client().completions.create(params);
    const streamed = await streamText(s.client(), params);
    assert.equal(streamed.text, plain.choices[0].text);
    assert.equal(streamed.finish, plain.choices[0].finish_reason);
    assert.ok(streamed.pieces.length > 5, 'more than a few events');
    // Every event holds whole UTF-8 characters: re-encoding each piece loses nothing.
    for (const p of streamed.pieces) assert.ok(!p.includes('\uFFFD'));
  });
});

test('stop strings end the text before them, streamed or not', async () => {
  await withServer([], async (s) => {
    const free = await s.client().completions.create({ prompt, max_tokens: 40, temperature: 0 });
    const text = free.choices[0].text;
    const stop = text.slice(8, 11);  // three characters from inside the free text
    assert.ok(stop.length === 3, text);
    const expected = text.slice(0, text.indexOf(stop));
    for (const stream of [false, true]) {
      const params = { prompt, max_tokens: 40, temperature: 0, stop: ['never appears', stop] };
      const r = stream ? await streamText(s.client(), params) : await s.client().completions.create(params);
      const got = stream ? r.text : r.choices[0].text;
      assert.equal(got, expected, `stream: ${stream}`);
      assert.equal(stream ? r.finish : r.choices[0].finish_reason, 'stop');
      if (stream) assert.ok(!r.pieces.some((p) => p.includes(stop[0]) && expected.indexOf(stop[0]) < 0));
    }
  });
});

test('seeds reproduce, choices of one request differ', async () => {
  await withServer([], async (s) => {
    const params = { prompt, max_tokens: 30, temperature: 1.0, seed: 1234, n: 3 };
    const a = await s.client().completions.create(params);
    const b = await s.client().completions.create(params);
    assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
    assert.deepEqual(a.choices.map((c) => c.index), [0, 1, 2]);
    assert.ok(new Set(a.choices.map((c) => c.text)).size > 1, 'n choices are different samples');
    const other = await s.client().completions.create({ ...params, seed: 99, n: 1 });
    assert.notEqual(other.choices[0].text, a.choices[0].text);
    // Several prompts: prompt i's choices come at [i * n, (i + 1) * n).
    const two = await s.client().completions.create({ prompt: [prompt, 'Love is'], max_tokens: 8, temperature: 0, n: 2 });
    assert.equal(two.choices.length, 4);
    assert.equal(two.choices[0].text, two.choices[1].text);
    assert.notEqual(two.choices[0].text, two.choices[2].text);
  });
});

test('logit_bias, logprobs, echo and token prompts', async () => {
  await withServer([], async (s) => {
    const tokenized = await post(s.base, '/tokenize', JSON.stringify({ content: prompt }));
    assert.equal(tokenized.status, 200);
    const ids = tokenized.json.tokens;
    const back = await post(s.base, '/detokenize', JSON.stringify({ tokens: ids }));
    assert.equal(back.json.content, prompt);

    const byText = await s.client().completions.create({ prompt, max_tokens: 12, temperature: 0, logprobs: 3 });
    const byIds = await s.client().completions.create({ prompt: ids, max_tokens: 12, temperature: 0, logprobs: 3 });
    assert.equal(byIds.choices[0].text, byText.choices[0].text);
    const lp = byText.choices[0].logprobs;
    assert.equal(lp.tokens.join(''), byText.choices[0].text);
    assert.equal(lp.token_logprobs.length, lp.tokens.length);
    for (let i = 0; i < lp.tokens.length; ++i) {
      // Greedy: the chosen token is the most likely one, with the same log-probability.
      const top = Object.entries(lp.top_logprobs[i]).sort((x, y) => y[1] - x[1]);
      assert.equal(top.length, 3);
      assert.equal(top[0][0], lp.tokens[i]);
      assert.equal(top[0][1], lp.token_logprobs[i]);
      assert.ok(lp.token_logprobs[i] <= 0);
    }
    assert.deepEqual(lp.text_offset.slice(0, 2), [0, lp.tokens[0].length]);

    const forced = ids[ids.length - 1];
    const biased = await s.client().completions.create({ prompt, max_tokens: 6, temperature: 0.8, seed: 1, logit_bias: { [forced]: 100 } });
    const forcedText = (await post(s.base, '/detokenize', JSON.stringify({ tokens: [forced] }))).json.content;
    assert.equal(biased.choices[0].text, forcedText.repeat(6));

    // Pieces of one character are named by their bytes, as OpenAI names them: distinct keys.
    const [first, second] = (await post(s.base, '/tokenize', JSON.stringify({ content: '世' }))).json.tokens;
    const names = [];
    for (const piece of [first, second]) {
      const c = await s.client().completions.create({ prompt, max_tokens: 2, logprobs: 2, logit_bias: { [piece]: 100 } });
      names.push(c.choices[0].logprobs.tokens[0]);
    }
    assert.deepEqual(names, ['bytes:\\xe4', 'bytes:\\xb8']);

    const echoed = await s.client().completions.create({ prompt, max_tokens: 5, temperature: 0, echo: true });
    const plain = await s.client().completions.create({ prompt, max_tokens: 5, temperature: 0 });
    assert.equal(echoed.choices[0].text, prompt + plain.choices[0].text);
    const echoedStream = await streamText(s.client(), { prompt, max_tokens: 5, temperature: 0, echo: true });
    assert.equal(echoedStream.pieces[0], prompt, 'the prompt comes first');
    assert.equal(echoedStream.text, prompt + plain.choices[0].text);
  });
});

test('invalid requests get OpenAI errors naming the parameter', async () => {
  await withServer([], async (s) => {
    const client = s.client();
    const cases = [
      [{ prompt, temperature: 2.5 }, 'temperature'],
      [{ prompt, temperature: 'hot' }, 'temperature'],
      [{ prompt, top_p: 0 }, 'top_p'],
      [{ prompt, max_tokens: -1 }, 'max_tokens'],
      [{ prompt, max_tokens: 1.5 }, 'max_tokens'],
      [{ prompt, max_tokens: 1e300 }, 'max_tokens'],
      [{ prompt, n: 0 }, 'n'],
      [{ prompt, n: 1000 }, 'n'],
      [{ prompt, presence_penalty: 3 }, 'presence_penalty'],
      [{ prompt, frequency_penalty: -2.5 }, 'frequency_penalty'],
      [{ prompt, logprobs: 100 }, 'logprobs'],
      [{ prompt, logit_bias: { 99999: 1 } }, 'logit_bias.99999'],
      [{ prompt, logit_bias: { 5: 101 } }, 'logit_bias.5'],
      [{ prompt, stop: [''] }, 'stop'],
      [{ prompt, stop: 7 }, 'stop'],
      [{ prompt, seed: -1 }, 'seed'],
      [{ prompt, top_k: -3 }, 'top_k'],
      [{ prompt, min_p: 1.5 }, 'min_p'],
      [{ prompt, repetition_penalty: 0 }, 'repetition_penalty'],
      [{ prompt, stream: 'yes' }, 'stream'],
      [{ prompt: [1, 2, 100000] }, 'prompt[2]'],
      [{ prompt: [] }, 'prompt'],
      [{ prompt: 'word '.repeat(200) }, 'prompt'],  // longer than the 128-token context
      [{ prompt, suffix: 'x' }, 'suffix'],
      [{ prompt, echo: true, logprobs: 1 }, 'logprobs'],
      [{}, 'prompt'],
    ];
    for (const [params, param] of cases) {
      await assert.rejects(client.completions.create({ model: 'fortunes', ...params }), (e) => {
        assert.equal(e.status, 400, JSON.stringify(params));
        assert.equal(e.param, param, JSON.stringify(params) + ': ' + e.message);
        assert.equal(e.type, 'invalid_request_error');
        return true;
      });
    }
    // Bodies no client library would send: each a 400 with an error object, and the server lives.
    for (const body of ['{"prompt": "x"', 'null', '[1,2]', '{"prompt": "x", "max_tokens": 1e999}',
                        Buffer.from([0x7b, 0x22, 0x70, 0x72, 0x6f, 0x6d, 0x70, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
                        '{"prompt": "x", "max_tokens": 99999999999999999999999}', '{"prompt": {"a": 1}}',
                        '['.repeat(100000)]) {
      const r = await post(s.base, '/v1/completions', body);
      assert.equal(r.status, 400, String(body).slice(0, 60));
      assert.equal(typeof r.json.error.message, 'string');
    }
    // Valid JSON nested 100,000 levels deep where a number or a prompt belongs: the message
    // quotes a few levels of it (the whole value, printed recursively, overflowed the stack).
    const deep = '['.repeat(100000) + ']'.repeat(100000);
    for (const [body, param] of [[`{"prompt": "x", "max_tokens": ${deep}}`, 'max_tokens'], [`{"prompt": [${deep}]}`, 'prompt[0][0]']]) {
      const r = await post(s.base, '/v1/completions', body);
      assert.equal(r.status, 400, param);
      assert.equal(r.json.error.param, param);
      assert.match(r.json.error.message, /got \[\[\[\[\[…\]\]\]\]\]$/);
    }
    const notFound = await fetch(s.base + '/v1/nothing');
    assert.equal(notFound.status, 404);
    assert.equal((await notFound.json()).error.message, 'no such endpoint: /v1/nothing');
    const health = await fetch(s.base + '/health');
    assert.equal(health.status, 200);
  });
});

test('body limit, API key and a full queue', async () => {
  await withServer(['--api-key', 'sk-right', '--max-body', '4096', '--parallel', '1', '--queue', '0', '--context-shift'], async (s) => {
    await assert.rejects(s.client().completions.create({ prompt, max_tokens: 1 }), (e) => e.status === 401);
    await assert.rejects(s.client({ apiKey: 'sk-wrong' }).completions.create({ prompt, max_tokens: 1 }), (e) => e.status === 401);
    await assert.rejects(s.client({ apiKey: 'sk-righ' }).completions.create({ prompt, max_tokens: 1 }), (e) => e.status === 401);
    assert.equal((await fetch(s.base + '/health')).status, 200, '/health needs no key');
    const client = s.client({ apiKey: 'sk-right' });
    const ok = await client.completions.create({ prompt, max_tokens: 2 });
    assert.equal(ok.choices.length, 1);
    await assert.rejects(client.completions.create({ prompt: 'x'.repeat(5000), max_tokens: 1 }), (e) => e.status === 413);
    // More choices than the server ever runs at once: a 400, not an endless 503.
    await assert.rejects(client.completions.create({ prompt, max_tokens: 1, n: 2 }), (e) => e.status === 400 && e.param === 'n');
    // One sequence, no queue: a second request while one runs is refused with 503.
    const running = streamText(client, { prompt, max_tokens: 3000, temperature: 1, seed: 3, logit_bias: { 511: -100 } });
    await new Promise((r) => setTimeout(r, 50));
    await assert.rejects(client.completions.create({ prompt, max_tokens: 1 }), (e) => {
      assert.equal(e.status, 503);
      assert.ok(e.message.includes('busy'), e.message);
      return true;
    });
    await running;
  });
});

test('a client that disconnects mid-stream frees its sequence', async () => {
  await withServer(['--parallel', '1', '--queue', '0', '--context-shift'], async (s) => {
    const client = s.client();
    const stream = await client.completions.create({ prompt, max_tokens: 100000, temperature: 1, seed: 5, stream: true,
                                                     logit_bias: { 511: -100 } });
    let pieces = 0;
    for await (const chunk of stream) {
      assert.equal(chunk.choices.length, 1);
      if (++pieces === 3) break;  // leaving the loop aborts the request: the connection closes
    }
    // The only sequence must be free again soon (the server notices at its next write).
    const start = Date.now();
    for (;;) {
      try {
        const r = await client.completions.create({ prompt, max_tokens: 1 });
        assert.equal(r.choices.length, 1);
        break;
      } catch (e) {
        assert.equal(e.status, 503);
        assert.ok(Date.now() - start < 5000, 'the cancelled sequence was not freed within 5 s');
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    console.log(`freed after ${Date.now() - start} ms`);
    assert.match(s.log(), /status 499/);
  });
});

// Sixteen requests with different parameters, alone and then all at once: each gets the same
// text (f32 batched decoding is bit-identical per sequence; prompts prefilled together agree to
// ~1e-6, far from flipping a draw).
test('16 concurrent streams equal the same requests alone', async () => {
  await withServer(['--parallel', '16'], async (s) => {
    const prompts = ['A fool', 'Love is', 'The best way to', 'Never', 'If you', 'Time', 'Why', 'He who'];
    const requests = Array.from({ length: 16 }, (_, i) => ({
      prompt: prompts[i % prompts.length], max_tokens: 20 + i, temperature: i % 4 === 0 ? 0 : 0.7 + 0.05 * i, seed: 100 + i,
      top_k: i % 3 === 0 ? 0 : 20, top_p: i % 2 ? 0.9 : 1, presence_penalty: (i % 5) * 0.3, frequency_penalty: (i % 3) * 0.2,
      ...(i % 4 === 1 ? { stop: ['.'] } : {}),
    }));
    const alone = [];
    for (const r of requests) alone.push((await streamText(s.client(), r)).text);
    const together = await Promise.all(requests.map((r) => streamText(s.client(), r)));
    assert.deepEqual(together.map((t) => t.text), alone);
    assert.ok(new Set(alone).size > 8);
  });
});

// --kv-cache bf16: the model says so, and greedy requests decoded together equal each alone and
// the command line generator with the same cache.
test('a bf16 KV cache: shown by /v1/models, batched requests equal each alone', async () => {
  await withServer(['--parallel', '4', '--kv-cache', 'bf16'], async (s) => {
    const models = await s.client().models.list();
    assert.equal(models.data[0].meta.kv_cache, 'bf16');
    const requests = ['A fool', 'Love is', 'Never', 'Why'].map((p) => ({ prompt: p, max_tokens: 24, temperature: 0 }));
    const alone = [];
    for (const r of requests) alone.push((await s.client().completions.create(r)).choices[0].text);
    const together = await Promise.all(requests.map((r) => s.client().completions.create(r)));
    assert.deepEqual(together.map((c) => c.choices[0].text), alone);
    const cli = JSON.parse(execFileSync(GENERATE, ['--model', MODEL, '-p', 'A fool', '-n', '24', '--temperature', '0', '--json',
                                                   '--kv-cache', 'bf16'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    assert.equal(alone[0], cli.text);
  });
});

test('200 requests, 16 at a time: no failures, flat memory', async () => {
  await withServer(['--parallel', '16', '--queue', '16'], async (s) => {
    const client = s.client();
    let next = 0;
    let failures = 0;
    let rssAfterWarmup = 0;
    const worker = async () => {
      while (next < 200) {
        const i = next++;
        if (i === 40) rssAfterWarmup = s.rss();
        const params = { prompt: `Request ${i % 13}`, max_tokens: 8 + (i % 17), temperature: 0.8, seed: i };
        try {
          if (i % 2) await streamText(client, params);
          else await client.completions.create(params);
        } catch (e) {
          ++failures;
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    assert.equal(failures, 0);
    const growth = s.rss() - rssAfterWarmup;
    // The sequences are preallocated; what grows is allocator slack of the HTTP threads.
    assert.ok(growth < 8 * 1024, `resident memory grew by ${growth} KiB over 160 requests`);
  });
});

test('SIGTERM lets a running stream finish, then the server exits 0', async () => {
  const s = await startServer(['--shutdown-grace', '30', '--context-shift']);
  const stream = await s.client().completions.create({ prompt, max_tokens: 2000, temperature: 0.7, seed: 9, stream: true,
                                                       logit_bias: { 511: -100 } });
  let text = '';
  let finish = null;
  let stopped = null;
  for await (const chunk of stream) {
    text += chunk.choices[0].text;
    finish = chunk.choices[0].finish_reason;
    if (!stopped) stopped = s.stop();  // SIGTERM once the stream runs
  }
  assert.equal((await stopped).code, 0);
  assert.equal(finish, 'length');
  const tokens = (await fetch(s.base + '/health').catch(() => null));
  assert.equal(tokens, null, 'the server no longer listens');
  assert.ok(text.length > 1000, `the stream ran to its end (${text.length} characters)`);
  assert.match(s.log(), /SIGTERM, stopping/);
});

const chatArgs = (template = 'chatml') => ['--chat-template-file', `${TEMPLATES}/${template}.jinja`];
const messages = [
  { role: 'system', content: 'You tell fortunes.' },
  { role: 'user', content: 'What does my future hold?' },
];

test('chat completions: the template prompt, continued as a completion would, streamed and not', async () => {
  await withServer(chatArgs(), async (s) => {
    const client = s.client();
    const applied = await post(s.base, '/apply-template', JSON.stringify({ messages }));
    assert.equal(applied.status, 200);
    assert.equal(applied.json.prompt, '<|im_start|>system\nYou tell fortunes.<|im_end|>\n\n<|im_start|>user\n' +
                                      'What does my future hold?<|im_end|>\n\n<|im_start|>assistant\n\n');
    // The prompt's special tokens are the tokenizer's ids (as allow_special tokenizes them).
    const ids = (await post(s.base, '/tokenize', JSON.stringify({ content: applied.json.prompt, allow_special: true }))).json.tokens;
    const plain = await client.chat.completions.create({ model: 'any', messages, max_tokens: 16, temperature: 0 });
    assert.equal(plain.object, 'chat.completion');
    assert.match(plain.id, /^chatcmpl-/);
    assert.equal(plain.choices[0].message.role, 'assistant');
    assert.equal(plain.usage.prompt_tokens, ids.length);
    const same = await client.completions.create({ prompt: ids, max_tokens: 16, temperature: 0 });
    assert.equal(plain.choices[0].message.content, same.choices[0].text);
    assert.equal(plain.choices[0].finish_reason, same.choices[0].finish_reason);

    const stream = await client.chat.completions.create({ messages, max_tokens: 16, temperature: 0, stream: true,
                                                           stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks[0].object, 'chat.completion.chunk');
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' }, 'the role comes first');
    const text = chunks.flatMap((c) => c.choices.map((x) => x.delta.content ?? '')).join('');
    assert.equal(text, plain.choices[0].message.content);
    const finishing = chunks.filter((c) => c.choices.some((x) => x.finish_reason));
    assert.equal(finishing.length, 1);
    assert.deepEqual(finishing[0].choices[0].delta, {});
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last.choices, [], 'usage comes in a last chunk without choices');
    assert.equal(last.usage.completion_tokens, plain.usage.completion_tokens);

    // max_completion_tokens, n, logprobs with top_logprobs (bytes for every token), and seeds returned.
    const sampled = await client.chat.completions.create({ messages, max_completion_tokens: 6, temperature: 1, n: 2,
                                                           logprobs: true, top_logprobs: 2 });
    assert.equal(sampled.choices.length, 2);
    for (const c of sampled.choices) {
      assert.equal(c.logprobs.content.length, 6);
      for (const t of c.logprobs.content) {
        assert.equal(t.top_logprobs.length, 2);
        assert.ok(Array.isArray(t.bytes) && t.bytes.length > 0);
      }
      assert.equal(c.logprobs.content.map((t) => Buffer.from(t.bytes).toString('utf8')).join(''), c.message.content);
    }
    assert.ok(Number.isInteger(sampled.seed), 'a request without a seed gets one back');
    const again = await client.chat.completions.create({ messages, max_completion_tokens: 6, temperature: 1, n: 2, seed: sampled.seed });
    assert.deepEqual(again.choices.map((c) => c.message.content), sampled.choices.map((c) => c.message.content),
                     'the returned seed makes the same completion again');
  }, CHAT_MODEL);
});

test('chat completions: errors from the messages, the template and a model without one', async () => {
  await withServer(chatArgs('mistral_inst'), async (s) => {
    const client = s.client();
    const expectError = async (params, message, param = 'messages') => {
      await assert.rejects(client.chat.completions.create({ max_tokens: 4, ...params }), (e) => {
        assert.equal(e.status, 400);
        assert.equal(e.param, param);
        assert.match(e.message, message);
        return true;
      });
    };
    await expectError({ messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }] },
                      /conversation roles must alternate user\/assistant/);
    await expectError({ messages: [] }, /non-empty array/);
    await expectError({ messages: [{ content: 'no role' }] }, /role' must be a string/, 'messages[0].role');
    await expectError({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
                      /must be a text part/, 'messages[0].content[0]');
    await expectError({ messages, top_logprobs: 2 }, /needs "logprobs": true/, 'top_logprobs');
    await expectError({ messages, prompt: 'x' }, /completions field/, 'prompt');
    const parts = await client.chat.completions.create({ messages: [{ role: 'user', content: [{ type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }] }],
                                                         max_tokens: 3, temperature: 0 });
    const whole = await client.chat.completions.create({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 3, temperature: 0 });
    assert.equal(parts.choices[0].message.content, whole.choices[0].message.content, 'text parts are joined');
  }, CHAT_MODEL);
  await withServer([], async (s) => {  // GPT-2 has no chat template
    await assert.rejects(s.client().chat.completions.create({ messages, max_tokens: 4 }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /this model has no chat template.*--chat-template-file/);
      return true;
    });
  });
});

test('chat completions with tools: calls sent back as JSON text render as objects, and a reply that is no call is text', async () => {
  // Qwen's syntax for calls, without its tool prompt (longer than the fixture's 128 positions).
  const template = `${tmpdir()}/tessera-tool-calls-${process.pid}.jinja`;
  writeFileSync(template, '{%- for m in messages %}<|im_start|>{{ m.role }}\n{%- if m.tool_calls %}{%- for c in m.tool_calls %}' +
    '<tool_call>\n{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}\n</tool_call>{%- endfor %}' +
    '{%- else %}{{ m.content }}{%- endif %}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}');
  try {
    await toolCalls(template);
  } finally {
    unlinkSync(template);
  }
});

async function toolCalls(template) {
  await withServer(['--chat-template-file', template], async (s) => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const turn = (args) => [{ role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: args } }] },
      { role: 'tool', tool_call_id: 'call_0', content: '3 °C' }];
    const asText = (await post(s.base, '/apply-template', JSON.stringify({ messages: turn('{"city": "Zürich"}'), tools }))).json.prompt;
    const asObject = (await post(s.base, '/apply-template', JSON.stringify({ messages: turn({ city: 'Zürich' }), tools }))).json.prompt;
    assert.equal(asText, asObject, 'OpenAI sends arguments as JSON text; the template gets the object');
    assert.match(asText, /<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "Zürich"\}\}\n<\/tool_call>/);

    // The fortunes model writes no calls: its reply comes back as text, streamed or not, the same.
    const client = s.client();
    const params = { messages: turn({ city: 'Zürich' }), tools, max_tokens: 12, temperature: 0 };
    const plain = await client.chat.completions.create(params);
    assert.equal(plain.choices[0].message.tool_calls, undefined);
    assert.notEqual(plain.choices[0].finish_reason, 'tool_calls');
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
      streamed += chunk.choices[0]?.delta?.content ?? '';
      assert.equal(chunk.choices[0]?.delta?.tool_calls, undefined);
    }
    assert.equal(streamed, plain.choices[0].message.content);
    const none = await client.chat.completions.create({ ...params, tool_choice: 'none' });
    assert.equal(none.choices[0].message.content, plain.choices[0].message.content);
    await assert.rejects(client.chat.completions.create({ ...params, tool_choice: 'required' }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, 'tool_choice');
      return true;
    });
  }, CHAT_MODEL);
}

test('chat completions: a conversation resent with a new turn reuses the cache, with the same reply', async () => {
  await withServer([...chatArgs('qwen2_5'), '--parallel', '2'], async (s) => {
    const client = s.client();
    const history = [{ role: 'user', content: 'A fool and his money' }];
    const first = await client.chat.completions.create({ messages: history, max_tokens: 8, temperature: 0 });
    assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
    history.push(first.choices[0].message, { role: 'user', content: 'And then?' });
    const reused = await client.chat.completions.create({ messages: history, max_tokens: 8, temperature: 0 });
    const fresh = await client.chat.completions.create({ messages: history, max_tokens: 8, temperature: 0, cache_prompt: false });
    assert.equal(fresh.usage.prompt_tokens_details.cached_tokens, 0);
    assert.ok(reused.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens,
              `the first turn's prompt comes from the cache: ${JSON.stringify(reused.usage)} after ${JSON.stringify(first.usage)}`);
    assert.equal(reused.choices[0].message.content, fresh.choices[0].message.content);
    assert.match(s.log(), /prompt \d+ tokens \(\d+ cached\)/);
  }, CHAT_MODEL);
});

test('the README chat client snippet runs as written against the server', async () => {
  await withServer(chatArgs('qwen2_5'), async (s) => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const snippet = readme.match(/```js\n([\s\S]*?)```/)[1].replace('http://127.0.0.1:8080/v1', `${s.base}/v1`);
    assert.match(snippet, /chat\.completions\.create/);
    const file = new URL(`./readme_snippet_${process.pid}.mjs`, import.meta.url);  // beside node_modules/openai
    writeFileSync(file, snippet);
    try {
      const out = execFileSync(process.execPath, [fileURLToPath(file)], { encoding: 'utf8', timeout: 60000 });
      assert.match(out, /completion_tokens/, 'the usage chunk is printed, not a crash on its empty choices');
    } finally {
      unlinkSync(file);
    }
  }, CHAT_MODEL);
});

test('/metrics counts requests, tokens and latencies in Prometheus text', async () => {
  await withServer(chatArgs('qwen2_5'), async (s) => {
    const client = s.client();
    const a = await client.chat.completions.create({ messages, max_tokens: 5, temperature: 0 });
    const b = await client.completions.create({ prompt: 'A fool', max_tokens: 4, temperature: 0 });
    await assert.rejects(client.completions.create({ prompt: 'x', temperature: 9 }));
    await fetch(`${s.base}/no/such/path`);
    const res = await fetch(`${s.base}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const value = (series) => {
      const line = text.split('\n').find((l) => l.startsWith(series + ' '));
      assert.ok(line, `${series} in:\n${text}`);
      return Number(line.slice(series.length + 1));
    };
    assert.equal(value('tessera_requests_total{route="/v1/chat/completions",status="200"}'), 1);
    assert.equal(value('tessera_requests_total{route="/v1/completions",status="200"}'), 1);
    assert.equal(value('tessera_requests_total{route="/v1/completions",status="400"}'), 1);
    assert.equal(value('tessera_requests_total{route="other",status="404"}'), 1);
    assert.equal(value('tessera_generated_tokens_total'), a.usage.completion_tokens + b.usage.completion_tokens);
    assert.equal(value('tessera_prompt_tokens_total'), a.usage.prompt_tokens + b.usage.prompt_tokens);
    assert.equal(value('tessera_time_to_first_token_seconds_count'), 2);
    assert.equal(value('tessera_time_to_first_token_seconds_bucket{le="+Inf"}'), 2);
    assert.equal(value('tessera_inter_token_latency_seconds_count'), a.usage.completion_tokens + b.usage.completion_tokens - 2);
    assert.equal(value('tessera_queue_length'), 0);
    assert.equal(value('tessera_sequences_busy'), 0);
    assert.equal(value('tessera_sequences'), 8);
    for (const line of text.split('\n')) {  // every line is a comment, a sample, or the final empty one
      assert.match(line, /^(#.*|[a-z_]+(\{[^}]*\})? [0-9.e+-]+|)$/, line);
    }
  }, CHAT_MODEL);
});

// A free loopback port (for a process that takes its port from a file).
async function freePort() {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

test('two servers behind HAProxy: the client is served by both, and by one when the other stops', async () => {
  const a = await startServer(chatArgs('qwen2_5'), CHAT_MODEL);
  const b = await startServer(chatArgs('qwen2_5'), CHAT_MODEL);
  const port = await freePort();
  const config = `${tmpdir()}/tessera_haproxy_${process.pid}.cfg`;
  writeFileSync(config, [
    'defaults', '  mode http', '  timeout connect 2s', '  timeout client 60s', '  timeout server 60s',
    '  retries 3', '  option redispatch',
    'frontend chat', `  bind 127.0.0.1:${port}`, '  default_backend servers',
    'backend servers', '  balance roundrobin', '  option httpchk GET /health', '  http-check expect status 200',
    '  default-server inter 200ms fall 1 rise 1',
    `  server a 127.0.0.1:${a.port} check`, `  server b 127.0.0.1:${b.port} check`, ''].join('\n'));
  const proxy = spawn('haproxy', ['-f', config, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let proxyLog = '';
  proxy.stderr.on('data', (d) => { proxyLog += d; });
  try {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none', maxRetries: 0 });
    for (let i = 0; i < 50; ++i) {  // until HAProxy listens and has seen both servers healthy
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 500));
    const ask = (i) => client.chat.completions.create({ messages: [{ role: 'user', content: `Question ${i}` }], max_tokens: 4, temperature: 0 });
    const first = await Promise.all([...Array(8).keys()].map(ask));
    for (const r of first) assert.equal(r.object, 'chat.completion');
    const served = (server) => (server.log().match(/chatcmpl-\w+: status 200/g) ?? []).length;
    // A server logs a request after answering it, and its log reaches this process later still
    // (a CI run under load read 0 and 4 of 8): wait up to 5 s for `count` lines.
    const logged = async (count) => {
      for (let i = 0; i < 100 && served(a) + served(b) < count; ++i) await new Promise((r) => setTimeout(r, 50));
    };
    await logged(8);
    assert.ok(served(a) > 0 && served(b) > 0, `both servers answer: ${served(a)} and ${served(b)}`);
    assert.equal(served(a) + served(b), 8);
    // One replica leaves (SIGTERM): its /health says 503 at once, HAProxy stops sending it work.
    const { code } = await a.stop();
    assert.equal(code, 0);
    const before = served(b);
    const second = await Promise.all([...Array(8).keys()].map((i) => ask(i + 8)));
    assert.equal(second.length, 8);
    await logged(before + served(a) + 8);
    assert.equal(served(b) - before, 8, 'the remaining server answers every request');
  } finally {
    proxy.kill('SIGTERM');
    await a.stop();  // (already stopped unless a check above failed: then it would outlive the test)
    await b.stop();
    unlinkSync(config);
  }
  assert.ok(!/\[ALERT\]/.test(proxyLog), proxyLog);
});

test('a known endpoint asked with the wrong method is 405, and an empty API key is refused', async () => {
  await withServer([], async (s) => {
    for (const [path, method, allow] of [['/v1/completions', 'GET', 'POST'], ['/v1/chat/completions', 'PUT', 'POST'],
                                         ['/health', 'POST', 'GET'], ['/v1/models', 'DELETE', 'GET']]) {
      const res = await fetch(s.base + path, { method });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), allow);
      assert.match((await res.json()).error.message, new RegExp(`${method} is not allowed here`));
    }
    assert.equal((await fetch(s.base + '/no/such/endpoint')).status, 404);
  });
  const out = spawn(SERVER, ['--model', MODEL, '--port', '0', '--api-key', ''], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  out.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((resolve) => out.on('exit', resolve));
  assert.equal(code, 2);
  assert.match(err, /--api-key is empty/);
});

test('a completion past --timeout is a 503 the client does not retry, and error logs stay readable under gzip', async () => {
  await withServer(['--timeout', '0.001'], async (s) => {
    const client = s.client({ maxRetries: 2 });
    const [eos] = (await post(s.base, '/tokenize', JSON.stringify({ content: '<|endoftext|>', allow_special: true }))).json.tokens;
    const long = { prompt, max_tokens: 100, temperature: 0, logit_bias: { [eos]: -100 } };  // no early end
    await assert.rejects(client.completions.create(long), (e) => {
      assert.equal(e.status, 503);
      assert.match(e.message, /time limit \(--timeout\)/);
      return true;
    });
    const attempts = () => (s.log().match(/cmpl-\w+: status 503/g) ?? []).length;
    for (let i = 0; i < 100 && attempts() === 0; i++) await new Promise((r) => setTimeout(r, 20));  // the log comes through a pipe
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(attempts(), 1, 'one attempt: x-should-retry: false');
    const res = await fetch(`${s.base}/v1/completions`, {
      method: 'POST', body: JSON.stringify({ prompt, temperature: 7 }),
      headers: { 'Content-Type': 'application/json', 'Accept-Encoding': 'gzip' },
    });
    assert.equal(res.status, 400);
    await res.text();
    await new Promise((r) => setTimeout(r, 100));
    assert.match(s.log(), /POST \/v1\/completions: status 400: 'temperature' must be in/);
  });
});
