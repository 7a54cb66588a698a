// What the server's tests share: starting a server on a free loopback port, and small clients.
//
// Environment: SERVER (the binary), MODEL (a checkpoint directory: the trained fortunes model),
// GENERATE (examples/generate: the single-sequence CLI the server must agree with).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

export const SERVER = process.env.SERVER;
export const MODEL = process.env.MODEL;
export const GENERATE = process.env.GENERATE;
// A Llama-family model whose tokenizer has ChatML's special tokens, and templates to chat with.
export const CHAT_MODEL = process.env.CHAT_MODEL;
export const TEMPLATES = process.env.CHAT_TEMPLATES;

// Starts the server; resolves once /health says ok. Every test stops its server.
export async function startServer(args = [], model = MODEL, binary = SERVER) {
  const proc = spawn(binary, ['--model', model, '--port', '0', '--threads', '2', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start: ' + log)), 20000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && log.includes('server: ready')) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.on('exit', (code) => reject(new Error(`the server exited with ${code}: ${log}`)));
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const base = `http://127.0.0.1:${port}`;
  return {
    port,
    base,
    log: () => log,
    exited,
    client: (options = {}) => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, ...options }),
    rss: () => Number(readFileSync(`/proc/${proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]),  // KiB
    async stop() {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

export async function withServer(args, body, model = MODEL) {
  const server = await startServer(args, model);
  try {
    await body(server);
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0, 'the server exits 0 on SIGTERM');
  }
}

export async function streamText(client, params) {
  const stream = await client.completions.create({ ...params, stream: true });
  let text = '';
  let finish = null;
  const pieces = [];
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.text;
      pieces.push(c.text);
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, pieces };
}

export async function post(base, path, body, headers = {}) {
  const res = await fetch(base + path, { method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } });
  return { status: res.status, json: await res.json() };
}

