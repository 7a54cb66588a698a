// The server's HTTP layer under ordinary and abusive load, for one or more server binaries side by
// side in one run (the same machine, the same model): keep-alive /health throughput and latency,
// 16 streamed completions at once, and what an abusive client costs (a 100 MB chunked body, a
// million header lines, 300 slow clients, a client that leaves a non-streamed completion).
//
//   node bench/http_server.mjs MODEL SERVER [SERVER...]
// (run from the repository; node resolves the openai client from tests/server/node_modules.)
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { startServer } from '../tests/server/helpers.mjs';

const [model, ...servers] = process.argv.slice(2);
if (!model || servers.length === 0) {
  console.error('usage: node bench/http_server.mjs MODEL SERVER [SERVER...]');
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const prompt = 'A fool and his money';

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

// Sends `head`, then `piece` until the server answers, `limit` pieces went, or the socket fails.
function flood(port, head, piece, limit) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let answer = '';
    let sent = 0;
    let done = false;
    const finish = () => { if (!done) { done = true; socket.destroy(); resolve({ status: answer.split(' ')[1] ?? 'none', sent }); } };
    socket.on('data', (d) => { answer += d.toString('latin1'); finish(); });
    socket.on('error', finish);
    socket.on('close', finish);
    socket.on('connect', async () => {
      socket.write(head);
      while (!done && sent < limit) {
        sent++;
        if (!socket.write(piece)) {
          await new Promise((r) => {
            const go = () => { socket.off('drain', go); socket.off('close', go); r(); };
            socket.on('drain', go);
            socket.on('close', go);
          });
        }
      }
      await sleep(3000);
      finish();
    });
  });
}

async function healthLoad(base, connections, seconds) {
  const latencies = [];
  const end = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (Date.now() < end) {
      const t = performance.now();
      const res = await fetch(`${base}/health`);
      await res.text();
      latencies.push(performance.now() - t);
    }
  }));
  return { rps: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

async function measure(binary) {
  const out = {};
  await (async () => {
    const s = await startServer(['--max-body', String(1 << 20), '--parallel', '16'], model, binary);
    try {
      await healthLoad(s.base, 16, 1);  // warm
      Object.assign(out, { health: await healthLoad(s.base, 16, 5) });
      const client = s.client();
      const t = performance.now();
      const ttft = [];
      let tokens = 0;
      await Promise.all(Array.from({ length: 16 }, async (_, i) => {
        const t0 = performance.now();
        const stream = await client.completions.create({ prompt, max_tokens: 64, seed: i, stream: true, stream_options: { include_usage: true } });
        let first = true;
        for await (const chunk of stream) {
          if (first && chunk.choices[0]?.text) { ttft.push(performance.now() - t0); first = false; }
          if (chunk.usage) tokens += chunk.usage.completion_tokens;
        }
      }));
      out.streams = { tokensPerSecond: tokens / ((performance.now() - t) / 1000), ttftP50: percentile(ttft, 0.5) };

      let rss = s.rss();
      const chunk = '100000\r\n' + 'x'.repeat(1 << 20) + '\r\n';
      const chunked = await flood(s.port, 'POST /v1/completions HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n', chunk, 100);
      out.chunked = { ...chunked, grownMiB: (s.rss() - rss) / 1024 };
      rss = s.rss();
      const headers = await flood(s.port, 'GET /health HTTP/1.1\r\n', 'X-Flood: 1\r\n'.repeat(10000), 100);
      out.headers = { ...headers, sent: headers.sent * 10000, grownMiB: (s.rss() - rss) / 1024 };
    } finally {
      await s.stop();
    }
  })();
  await (async () => {
    // (cpp-httplib's server had no connection limits: the flag only where there is one)
    const limits = execFileSync(binary, ['--help']).toString().includes('--max-connections-per-client') ? ['--max-connections-per-client', '2000'] : [];
    const s = await startServer(['--parallel', '1', '--queue', '0', '--context-shift', ...limits], model, binary);
    try {
      const slow = [];
      for (let i = 0; i < 300; i++) {
        const c = net.connect({ port: s.port, host: '127.0.0.1' });
        c.on('error', () => {});
        c.write('POST /v1/completions HTTP/1.1\r\nHost: b\r\nX-Slow: ');
        slow.push(c);
      }
      const drip = setInterval(() => { for (const c of slow) c.write('a'); }, 500);
      await sleep(1000);
      const t = performance.now();
      const health = await fetch(`${s.base}/health`, { signal: AbortSignal.timeout(10000) }).then((r) => r.status, () => 'no answer in 10 s');
      out.slowloris = { status: health, ms: performance.now() - t };
      clearInterval(drip);
      for (const c of slow) c.destroy();
      await sleep(500);

      const eos = (await (await fetch(`${s.base}/tokenize`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ content: '<|endoftext|>', allow_special: true }) })).json()).tokens[0];
      const abort = new AbortController();
      const long = fetch(`${s.base}/v1/completions`, { method: 'POST', signal: abort.signal, headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt, max_tokens: 1000000, logit_bias: { [eos]: -100 } }) }).catch(() => {});
      await sleep(300);
      abort.abort();
      await long;
      const left = performance.now();
      let status = 0;
      while (status !== 200 && performance.now() - left < 10000) {
        status = (await fetch(`${s.base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ prompt, max_tokens: 1 }) })).status;
        if (status !== 200) await sleep(50);
      }
      out.departed = status === 200 ? `sequence free after ${(performance.now() - left).toFixed(0)} ms` : 'still busy after 10 s';
    } finally {
      await s.stop();
    }
  })();
  return out;
}

console.log(`load: ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim()}`);
for (const binary of servers) {
  const r = await measure(binary);
  console.log(`\n${binary}`);
  console.log(`  /health, 16 keep-alive clients: ${r.health.rps.toFixed(0)} requests/s, p50 ${r.health.p50.toFixed(2)} ms, p99 ${r.health.p99.toFixed(2)} ms`);
  console.log(`  16 streamed completions x 64 tokens: ${r.streams.tokensPerSecond.toFixed(0)} tokens/s, first token p50 ${r.streams.ttftP50.toFixed(1)} ms`);
  console.log(`  100 MB chunked body, --max-body 1 MiB: answer ${r.chunked.status} after ${r.chunked.sent} MiB sent, server +${r.chunked.grownMiB.toFixed(1)} MiB`);
  console.log(`  a million header lines: answer ${r.headers.status} after ${r.headers.sent} lines sent, server +${r.headers.grownMiB.toFixed(1)} MiB`);
  console.log(`  300 slow clients: /health ${r.slowloris.status} in ${r.slowloris.ms.toFixed(0)} ms`);
  console.log(`  a client leaves a non-streamed completion (--parallel 1): ${r.departed}`);
}
