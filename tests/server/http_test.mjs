// The server's HTTP layer against slow, oversized, departing and unusual clients, on raw
// sockets: what an abusive client does must cost it a refusal and the server nothing (memory,
// threads, sequences). Each test starts its own server (helpers.mjs); ctest runs each alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { withServer, post } from './helpers.mjs';

const prompt = 'A fool and his money';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A raw connection that keeps everything the server sends; `closed` once the server has sent
// its last byte (its FIN: the socket is half-open, so that a test can go on sending).
function connect(port) {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const c = { socket, data: Buffer.alloc(0), closed: false, error: null };
  socket.on('data', (d) => { c.data = Buffer.concat([c.data, d]); });
  socket.on('error', (e) => { c.error = e; });
  socket.on('end', () => { c.closed = true; });
  socket.on('close', () => { c.closed = true; });
  c.ready = new Promise((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  // Waits until `done(c)`; fails after `ms`.
  c.until = async (done, ms = 10000) => {
    for (const end = Date.now() + ms; !done(c); await sleep(10)) {
      if (Date.now() > end) throw new Error(`timed out; received: ${c.data.toString('latin1').slice(0, 300)}`);
    }
  };
  c.responses = () => parseResponses(c.data, c.closed);
  // Writes, waiting while the socket's buffer is full; false once the connection failed.
  c.write = (bytes) => new Promise((resolve) => {
    if (c.error || c.closed) return resolve(false);
    if (socket.write(bytes)) return resolve(true);
    const done = () => { socket.off('drain', done); socket.off('close', done); resolve(!c.error && !c.closed); };
    socket.once('drain', done);
    socket.once('close', done);
  });
  return c;
}

// The whole responses in `buf` (interim 1xx ones included), framed by Content-Length, chunks, or
// the connection's end.
function parseResponses(buf, closed) {
  const out = [];
  let i = 0;
  while (i < buf.length) {
    const end = buf.indexOf('\r\n\r\n', i);
    if (end < 0) break;
    const lines = buf.subarray(i, end).toString('latin1').split('\r\n');
    const status = Number(lines[0].split(' ')[1]);
    const headers = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    let j = end + 4;
    let body;
    if (status < 200) {
      body = Buffer.alloc(0);
    } else if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      if (buf.length < j + n) break;
      body = buf.subarray(j, j + n);
      j += n;
    } else if (headers['transfer-encoding'] === 'chunked') {
      const parts = [];
      for (;;) {
        const eol = buf.indexOf('\r\n', j);
        if (eol < 0) return out;
        const size = parseInt(buf.subarray(j, eol).toString(), 16);
        if (buf.length < eol + 2 + size + 2) return out;
        parts.push(buf.subarray(eol + 2, eol + 2 + size));
        j = eol + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      if (!closed) break;
      body = buf.subarray(j);
      j = buf.length;
    }
    out.push({ status, headers, body: body.toString() });
    i = j;
  }
  return out;
}

// Sends `bytes` on a new connection and returns the first answer (the connection is then dropped).
async function answerTo(port, bytes) {
  const c = connect(port);
  await c.ready;
  await c.write(bytes);
  await c.until(() => c.responses().length > 0);
  const [answer] = c.responses();
  c.socket.destroy();
  return answer;
}

const request = (method, path, body, headers = {}) => {
  const fields = { Host: 'test', ...(body !== undefined ? { 'Content-Length': Buffer.byteLength(body) } : {}), ...headers };
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(fields).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body ?? ''}`;
};

test('a body past --max-body is 413 however it is framed, one without a length 411, and no Content-Type is no limit', async () => {
  await withServer(['--max-body', '65536'], async (s) => {
    const before = s.rss();
    // 100 MB in chunks, as fast as the server takes them: it answers once 64 KiB have come.
    const c = connect(s.port);
    await c.ready;
    await c.write('POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    const chunk = Buffer.concat([Buffer.from('100000\r\n'), Buffer.alloc(1 << 20, 'x'), Buffer.from('\r\n')]);
    let sent = 0;
    while (sent < 100 && c.data.length === 0 && (await c.write(chunk))) sent++;
    await c.until(() => c.responses().length > 0 || c.closed);
    const [refused] = c.responses();
    assert.equal(refused?.status, 413, `after ${sent} MiB: ${c.data.toString('latin1').slice(0, 200)}`);
    assert.match(JSON.parse(refused.body).error.message, /larger than the server accepts \(65536 bytes, --max-body\)/);
    assert.equal(refused.headers.connection, 'close');
    const grown = (s.rss() - before) / 1024;
    console.log(`# chunked: ${sent} MiB sent before the 413; the server grew ${grown.toFixed(1)} MiB`);
    assert.ok(grown < 16, `the server grew ${grown} MiB`);
    c.socket.destroy();

    // A declared length past the limit is refused before its body is sent.
    assert.equal((await answerTo(s.port, 'POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Length: 100000000\r\n\r\n')).status, 413);

    const unframed = await answerTo(s.port, 'POST /v1/completions HTTP/1.1\r\nHost: test\r\n\r\n{"prompt": "x"}');
    assert.equal(unframed.status, 411);
    assert.match(JSON.parse(unframed.body).error.message, /Content-Length or Transfer-Encoding: chunked/);

    // 20 KB of JSON without a Content-Type is read like any other body (was a false 413 over 8 KB).
    const untyped = await answerTo(s.port, request('POST', '/tokenize', JSON.stringify({ content: 'ab '.repeat(7000) })));
    assert.equal(untyped.status, 200);
    assert.equal(JSON.parse(untyped.body).tokens.length > 1000, true);
  });
});

test('a million header lines, a huge header or request line: 431 or 414, and no memory', async () => {
  await withServer([], async (s) => {
    const before = s.rss();
    const c = connect(s.port);
    await c.ready;
    await c.write('GET /health HTTP/1.1\r\n');
    const lines = 'X-Flood: 1\r\n'.repeat(10000);
    let sent = 0;
    while (sent < 100 && c.data.length === 0 && (await c.write(lines))) sent++;
    await c.until(() => c.responses().length > 0 || c.closed);
    assert.equal(c.responses()[0]?.status, 431);
    assert.match(JSON.parse(c.responses()[0].body).error.message, /more than 100 header fields|header is larger than/);
    const grown = (s.rss() - before) / 1024;
    console.log(`# ${sent * 10000} header lines sent before the 431; the server grew ${grown.toFixed(1)} MiB`);
    assert.ok(grown < 8, `the server grew ${grown} MiB`);
    c.socket.destroy();

    for (const [bytes, status] of [[`GET /health HTTP/1.1\r\nX-Big: ${'y'.repeat(100000)}\r\n\r\n`, 431],
      [`GET /${'z'.repeat(20000)} HTTP/1.1\r\n\r\n`, 414]]) {
      assert.equal((await answerTo(s.port, bytes)).status, status);
    }
    const health = await fetch(`${s.base}/health`);
    assert.equal(health.status, 200);
  });
});

test('slow clients hold no thread: /health and completions answer beside 300 of them, which get 408 at --read-timeout', async () => {
  await withServer(['--read-timeout', '3', '--max-connections-per-client', '2000'], async (s) => {
    const slow = [];
    for (let i = 0; i < 300; i++) {
      const c = connect(s.port);
      await c.ready;
      await c.write('POST /v1/completions HTTP/1.1\r\nHost: test\r\nX-Slow: ');
      slow.push(c);
    }
    const drip = setInterval(() => { for (const c of slow) if (!c.closed) c.socket.write('a'); }, 200);
    try {
      const started = Date.now();
      const health = await fetch(`${s.base}/health`, { signal: AbortSignal.timeout(5000) });
      assert.equal(health.status, 200);
      const completion = await s.client().completions.create({ prompt, max_tokens: 4, temperature: 0 });
      assert.equal(completion.choices[0].finish_reason, 'length');
      console.log(`# /health and a completion beside 300 slow clients: ${Date.now() - started} ms`);
      await Promise.all(slow.map((c) => c.until(() => c.closed, 8000)));
    } finally {
      clearInterval(drip);
    }
    for (const c of slow) assert.equal(c.responses()[0]?.status, 408);
    assert.match(s.log(), /status 408: the request did not arrive within --read-timeout/);
  });
});

test('connections past --max-connections-per-client or --max-connections get 503 with Retry-After', async () => {
  for (const flag of ['--max-connections-per-client', '--max-connections']) {
    await withServer([flag, '4'], async (s) => {
      const held = [];
      for (let i = 0; i < 4; i++) {
        held.push(connect(s.port));
        await held[i].ready;
      }
      const extra = connect(s.port);
      await extra.ready;
      await extra.until(() => extra.closed);
      const [refused] = extra.responses();
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['retry-after'], '1');
      assert.match(JSON.parse(refused.body).error.message, new RegExp(`\\(${flag}\\)`));
      held[0].socket.destroy();
      await sleep(200);  // the refused connection holds no place either
      assert.equal((await fetch(`${s.base}/health`)).status, 200, 'a closed connection frees its place');
      for (const c of held) c.socket.destroy();
    });
  }
});

test('a non-streamed completion whose client leaves is cancelled, freeing the only sequence', async () => {
  await withServer(['--parallel', '1', '--queue', '0', '--context-shift'], async (s) => {
    const [eos] = (await post(s.base, '/tokenize', JSON.stringify({ content: '<|endoftext|>', allow_special: true }))).json.tokens;
    const abort = new AbortController();
    const long = fetch(`${s.base}/v1/completions`, {
      method: 'POST', signal: abort.signal, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: 1000000, logit_bias: { [eos]: -100 } }),
    }).catch((e) => e);
    await sleep(300);
    const busy = await post(s.base, '/v1/completions', JSON.stringify({ prompt, max_tokens: 2 }));
    assert.equal(busy.status, 503, 'the long completion holds the only sequence');
    abort.abort();
    await long;
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      await sleep(100);
      status = (await post(s.base, '/v1/completions', JSON.stringify({ prompt, max_tokens: 2 }))).status;
    }
    assert.equal(status, 200, 'the sequence is free again');
    assert.match(s.log(), /cmpl-\w+: status 499/);
  });
});

test('a half-closed client gets its answer', async () => {
  await withServer([], async (s) => {
    for (const bytes of [request('GET', '/health'),
      request('POST', '/v1/completions', JSON.stringify({ prompt, max_tokens: 40, temperature: 0 }))]) {
      const c = connect(s.port);
      await c.ready;
      await c.write(bytes);
      c.socket.end();  // done sending, still reading
      await c.until(() => c.closed);
      const [answer] = c.responses();
      assert.equal(answer?.status, 200, c.data.toString());
      assert.ok(JSON.parse(answer.body));
    }
    const plain = await s.client().completions.create({ prompt, max_tokens: 40, temperature: 0 });
    const c = connect(s.port);
    await c.ready;
    await c.write(request('POST', '/v1/completions', JSON.stringify({ prompt, max_tokens: 40, temperature: 0 })));
    c.socket.end();
    await c.until(() => c.closed);
    assert.equal(JSON.parse(c.responses()[0].body).choices[0].text, plain.choices[0].text);
  });
});

test('pipelined requests are answered in order on one connection', async () => {
  await withServer([], async (s) => {
    const c = connect(s.port);
    await c.ready;
    await c.write(request('GET', '/health') +
      request('POST', '/tokenize', JSON.stringify({ content: 'Hello' })) +
      request('POST', '/v1/completions', JSON.stringify({ prompt, max_tokens: 3, temperature: 0 })) +
      request('GET', '/v1/models', undefined, { Connection: 'close' }));
    await c.until(() => c.closed);
    const answers = c.responses();
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
    assert.equal(JSON.parse(answers[0].body).status, 'ok');
    assert.ok(Array.isArray(JSON.parse(answers[1].body).tokens));
    assert.equal(JSON.parse(answers[2].body).choices[0].finish_reason, 'length');
    assert.equal(JSON.parse(answers[3].body).object, 'list');
  });
});

test('HTTP/1.0 gets a stream ended by the connection, HTTP/1.1 the same events in chunks', async () => {
  await withServer([], async (s) => {
    const body = JSON.stringify({ prompt, max_tokens: 8, temperature: 0, stream: true });
    const streams = {};
    for (const version of ['1.0', '1.1']) {
      const c = connect(s.port);
      await c.ready;
      await c.write(`POST /v1/completions HTTP/${version}\r\nHost: test\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await c.until(() => c.closed);
      const [answer] = c.responses();
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-type'], 'text/event-stream');
      assert.equal(answer.headers['transfer-encoding'], version === '1.0' ? undefined : 'chunked');
      assert.match(answer.body, /data: \[DONE\]\n\n$/);
      streams[version] = answer.body.split('\n\n').map((e) => e.startsWith('data: {') ? JSON.parse(e.slice(6)).choices[0].text : e).join('|');
    }
    assert.equal(streams['1.0'], streams['1.1']);
  });
});

test('Expect: 100-continue, and requests framed or versioned wrongly are refused by name', async () => {
  await withServer(['--max-body', '4096'], async (s) => {
    const body = JSON.stringify({ content: 'Hello' });
    const c = connect(s.port);
    await c.ready;
    await c.write(`POST /tokenize HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`);
    await c.until(() => c.responses().length > 0);
    assert.equal(c.responses()[0].status, 100);
    await c.write(body);
    await c.until(() => c.responses().length > 1);
    assert.equal(c.responses()[1].status, 200);
    c.socket.destroy();

    const cases = [
      ['POST /tokenize HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n', 413, /--max-body/],
      ['POST /tokenize HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n', 400, /both Content-Length and Transfer-Encoding/],
      ['POST /tokenize HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n', 400, /disagree/],
      ['POST /tokenize HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n', 501, /'gzip' is not served/],
      ['POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400, /not hexadecimal/],
      ['GET /health HTTP/2.0\r\n\r\n', 505, /HTTP\/1.0 and HTTP\/1.1/],
      ['GET /health\r\n\r\n', 400, /METHOD target HTTP\/1.x/],
      ['GET /health HTTP/1.1\r\n folded\r\n\r\n', 400, /folded/],
      ['GET /health HTTP/1.1\r\nBad Name: x\r\n\r\n', 400, /token/],
    ];
    for (const [bytes, status, message] of cases) {
      const answer = await answerTo(s.port, bytes);
      assert.equal(answer.status, status, bytes);
      assert.match(JSON.parse(answer.body).error.message, message);
    }
  });
});

test('an idle connection closes at --read-timeout, a half-sent request gets 408', async () => {
  await withServer(['--read-timeout', '1'], async (s) => {
    const idle = connect(s.port);
    const partial = connect(s.port);
    await Promise.all([idle.ready, partial.ready]);
    await partial.write('GET /health HTTP/1.1\r\nHost: te');
    await Promise.all([idle.until(() => idle.closed, 5000), partial.until(() => partial.closed, 5000)]);
    assert.equal(idle.data.length, 0, 'an idle connection is closed without a word');
    assert.equal(partial.responses()[0].status, 408);
    // A kept-alive connection gets the same time again after each answer.
    const kept = connect(s.port);
    await kept.ready;
    await kept.write(request('GET', '/health'));
    await sleep(700);
    await kept.write(request('GET', '/health'));
    await kept.until(() => kept.closed, 5000);
    assert.deepEqual(kept.responses().map((r) => r.status), [200, 200]);
  });
});

test('a client that reads nothing of its answer is dropped at --write-timeout', async () => {
  await withServer(['--max-body', '8000000', '--write-timeout', '1'], async (s) => {
    // About 12 MB of token ids: far more than the socket buffers hold for a client that does not read.
    const content = Array.from({ length: 4000000 }, (_, i) => 'abcdefghij klmnop'[(i * 7919) % 17]).join('');
    const c = connect(s.port);
    await c.ready;
    c.socket.pause();
    await c.write(request('POST', '/tokenize', JSON.stringify({ content })));
    await c.until(() => /dropped: it read nothing of its answer for --write-timeout/.test(s.log()), 30000);
    c.socket.resume();
    await c.until(() => c.closed, 10000);
    const head = c.data.toString('latin1', 0, 500);
    assert.match(head, /^HTTP\/1.1 200/);
    const length = Number(head.match(/Content-Length: (\d+)/)[1]);
    const received = c.data.length - (c.data.indexOf('\r\n\r\n') + 4);
    console.log(`# ${received} of ${length} bytes had left before the drop`);
    assert.ok(received < length, 'the answer was cut when the client was dropped');
    assert.equal((await fetch(`${s.base}/health`)).status, 200);
  });
});
