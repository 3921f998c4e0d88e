import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EgressTooLargeError } from '../egress/egress-policy';
import { MAX_EMPTY_CHUNKS_PER_ANSWER } from './model-answer';
import { MAX_STREAM_BYTES, ModelError, ModelRetry, OpenAiCompatibleModel } from './model-client';
import { MAX_SSE_LINE_BYTES } from './sse-line-limit';

const delta = (d: object, finish: string | null = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });

describe('OpenAiCompatibleModel', () => {
  const sleeps: number[] = [];
  const sleep = async (ms: number) => void sleeps.push(ms);
  const policy = { retries: 2, baseDelayMs: 100, maxDelayMs: 1000, timeoutMs: 5000 };
  const sse = (...items: object[]) =>
    new Response(items.map((i) => `data: ${JSON.stringify(i)}\n\n`).join('') + 'data: [DONE]\n\n', { headers: { 'content-type': 'text/event-stream' } });
  const req = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], tools: [] };

  beforeEach(() => (sleeps.length = 0));

  it('a provider streaming one line past MAX_SSE_LINE_BYTES fails the call (model_error, not retried) before it is decoded, whatever its content type', async () => {
    for (const contentType of ['text/event-stream', 'text/plain']) {
      const piece = new Uint8Array(64 * 1024).fill(0x61);
      let sent = 0;
      const endless = () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(c) {
              // One line of 6 MiB, then the end of the stream.
              if (sent >= 96 * piece.length) return c.close();
              sent += piece.length;
              c.enqueue(sent === piece.length ? new TextEncoder().encode('data: {"x":"') : piece);
            },
          }),
          { headers: { 'content-type': contentType } },
        );
      const model = new OpenAiCompatibleModel('p', 'http://model.test/v1', 'k', async () => endless(), policy, sleep);
      await expect(model.complete(req)).rejects.toMatchObject({ code: 'model_error', retryable: false, message: expect.stringContaining('line longer than') });
      expect(sleeps).toEqual([]);
      // Read up to the bound and a little past it (what the stream had buffered), not on and on.
      expect(sent).toBeLessThan(MAX_SSE_LINE_BYTES + 16 * piece.length);
    }
  });

  /** A body already there as fast as it is read: `pieces` times `piece` (`pulled` counts them), then the answer "done". */
  function flood(piece: string, pieces: number) {
    const bytes = new TextEncoder().encode(piece);
    const seen = { pulled: 0, cancelled: false };
    const response = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(c) {
            if (seen.pulled === pieces) {
              c.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(delta({ content: 'done' }, 'stop'))}\n\ndata: [DONE]\n\n`));
              return c.close();
            }
            seen.pulled++;
            c.enqueue(bytes);
          },
          cancel: () => void (seen.cancelled = true),
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      );
    return { response, seen };
  }

  it('a provider streaming chunks that add nothing fails the call past MAX_EMPTY_CHUNKS_PER_ANSWER: not retried, its body read no further', async () => {
    const line = `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {} }] })}\n\n`;
    const perPiece = Math.floor(65536 / line.length);
    // Then a real answer: read to its end, the flood would have succeeded.
    const { response, seen } = flood(line.repeat(perPiece), Math.ceil((3 * MAX_EMPTY_CHUNKS_PER_ANSWER) / perPiece));
    let calls = 0;
    const model = new OpenAiCompatibleModel('p', 'http://model.test/v1', 'k', async () => (calls++, response()), policy, sleep);
    await expect(model.complete(req)).rejects.toMatchObject({
      code: 'model_error',
      retryable: false,
      message: expect.stringContaining(`more than ${MAX_EMPTY_CHUNKS_PER_ANSWER} chunks that added nothing`),
    });
    expect([calls, sleeps]).toEqual([1, []]);
    expect(seen.cancelled).toBe(true);
    expect(seen.pulled).toBeLessThan(MAX_EMPTY_CHUNKS_PER_ANSWER / perPiece + 4);
  });

  it("a long burst of a provider's chunks leaves other connections their turns: a loopback request made as it starts is answered before its end", async () => {
    const server = createServer((_req, res) => res.end('pong'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const pieces = 20_000;
      const { response, seen } = flood(`data: ${JSON.stringify(delta({ content: 'x' }))}\n\n`, pieces);
      // One attempt, with time for a loaded machine: a retry after a timeout read the spent flood's "done" alone.
      const model = new OpenAiCompatibleModel('p', 'http://model.test/v1', 'k', async () => response(), { ...policy, retries: 0, timeoutMs: 60_000 }, sleep);
      let pulledWhenAnswered = -1;
      const answered = fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
        .then((r) => r.text())
        .then(() => (pulledWhenAnswered = seen.pulled));
      const turn = await model.complete(req);
      await answered;
      expect(turn.content).toBe('x'.repeat(pieces) + 'done');
      // Read at once, the burst took every turn until its end (pulledWhenAnswered === pieces).
      expect(pulledWhenAnswered).toBeGreaterThan(0);
      expect(pulledWhenAnswered).toBeLessThan(pieces / 2);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('a stream past MAX_STREAM_BYTES (the egress cut it off) fails the call without another attempt', async () => {
    let calls = 0;
    const model = new OpenAiCompatibleModel(
      'p',
      'http://model.test/v1',
      'k',
      async (_url, init) => {
        calls++;
        expect(init?.maxBytes).toBe(MAX_STREAM_BYTES);
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(delta({ content: 'a' }))}\n\n`));
            c.error(new EgressTooLargeError(`model.test answered more than ${MAX_STREAM_BYTES} bytes`, MAX_STREAM_BYTES));
          },
        });
        return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
      },
      policy,
      sleep,
    );
    await expect(model.complete(req)).rejects.toMatchObject({
      code: 'model_error',
      retryable: false,
      message: `The provider streamed more than ${MAX_STREAM_BYTES} bytes for one answer; none of it was kept.`,
    });
    expect([calls, sleeps]).toEqual([1, []]);
  });

  it('retries 429 honouring Retry-After, then answers', async () => {
    const answers = [
      new Response(JSON.stringify({ error: { message: 'slow down' } }), { status: 429, headers: { 'retry-after': '2' } }),
      sse(delta({ content: 'ok' }, 'stop')),
    ];
    const model = new OpenAiCompatibleModel('p', 'http://model.test/v1', 'k', async () => answers.shift()!, policy, sleep);
    await expect(model.complete(req)).resolves.toMatchObject({ content: 'ok' });
    expect(sleeps).toEqual([2000]);
  });

  it('one attempt leaves the wait to the caller: a retry and how long (never sooner than Retry-After) while attempts are left, then the error', async () => {
    let calls = 0;
    const busy = () => (calls++, new Response('{}', { status: 503, headers: { 'retry-after-ms': '700' } }));
    const model = new OpenAiCompatibleModel('p', 'http://model.test/v1', null, async () => busy(), policy, sleep);
    for (const attempt of [0, 1]) {
      const retry = (await model.attempt(req, attempt).catch((e: unknown) => e)) as ModelRetry;
      expect(retry).toBeInstanceOf(ModelRetry);
      expect(retry.afterMs).toBeGreaterThanOrEqual(700);
      expect(retry.failure).toMatchObject({ code: 'model_error', status: 503, retryable: true });
    }
    // The policy's retries (2) spent: the provider's error itself.
    await expect(model.attempt(req, 2)).rejects.toMatchObject({ code: 'model_error', status: 503 });
    expect(await model.attempt(req, 2).catch((e: unknown) => e)).not.toBeInstanceOf(ModelRetry);
    expect(calls).toBe(4);
    expect(sleeps).toEqual([]);
  });

  it("gives up after the retries with the provider's status; a 400 is not retried", async () => {
    let calls = 0;
    const failing = new OpenAiCompatibleModel('p', 'http://model.test/v1', null, async () => (calls++, new Response('{}', { status: 502 })), policy, sleep);
    await expect(failing.complete(req)).rejects.toMatchObject({ code: 'model_error', status: 502 });
    expect(calls).toBe(3);
    calls = 0;
    const bad = new OpenAiCompatibleModel(
      'p',
      'http://model.test/v1',
      null,
      async () => (calls++, new Response('{"error":{"message":"nope"}}', { status: 400 })),
      policy,
      sleep,
    );
    await expect(bad.complete(req)).rejects.toMatchObject({ retryable: false, status: 400 });
    expect(calls).toBe(1);
    // The provider's text is stored with the run: nothing in it a column refuses, even cut at 500.
    // Pads of both parities: one of them puts the cut inside a pair.
    for (const pad of ['', 'x']) {
      const odd = new OpenAiCompatibleModel(
        'p',
        'http://model.test/v1',
        null,
        async () => new Response(JSON.stringify({ error: { message: `bad\u0000${pad}${'😀'.repeat(300)}` } }), { status: 400 }),
        policy,
        sleep,
      );
      const err = (await odd.complete(req).catch((e: unknown) => e)) as ModelError;
      expect([err.message.isWellFormed(), err.message.includes('\u0000')]).toEqual([true, false]);
      expect(err.message).toContain('bad\ufffd');
    }
  });

  it("never repeats the provider's API key: an error that echoes it (whole, after Bearer, or where the cut at 500 falls) has it redacted", async () => {
    const key = 'sk-proj-LEAKME-0123456789';
    const bodies = [
      { status: 401, message: `Incorrect API key provided: ${key}. You can find your API key at https://example.test.` },
      { status: 400, message: `bad request from Bearer ${key}` },
      { status: 500, message: `${'x'.repeat(453)} Authorization: Bearer ${key}` },
    ];
    for (const { status, message } of bodies) {
      const echoing = new OpenAiCompatibleModel(
        'p',
        'http://model.test/v1',
        key,
        async () => new Response(JSON.stringify({ error: { message } }), { status }),
        { ...policy, retries: 0 },
        sleep,
      );
      const err = (await echoing.complete(req).catch((e: unknown) => e)) as ModelError;
      expect(err).toBeInstanceOf(ModelError);
      expect(err.message).toContain(`The provider answered ${status}`);
      expect(err.message).not.toContain(key.slice(0, 12));
    }
    const echoed = new OpenAiCompatibleModel(
      'p',
      'http://model.test/v1',
      key,
      async () => new Response(JSON.stringify({ error: { message: `Incorrect API key provided: ${key}.` } }), { status: 401 }),
      policy,
      sleep,
    );
    await expect(echoed.complete(req)).rejects.toMatchObject({ message: 'The provider answered 401: 401 Incorrect API key provided: [redacted].' });
  });

  it("never repeats a token-shaped segment of the base URL's path, which the provider's view hides (attack round 13, K-F2)", async () => {
    const token = 'Ab3dEf6hIj9kLmNoPq12';
    const echoing = new OpenAiCompatibleModel(
      'p',
      `http://model.test/v1/${token}`,
      null,
      async () => new Response(JSON.stringify({ error: { message: `Invalid URL (POST /v1/${token}/chat/completions)` } }), { status: 404 }),
      { ...policy, retries: 0 },
      sleep,
    );
    await expect(echoing.complete(req)).rejects.toMatchObject({ message: 'The provider answered 404: 404 Invalid URL (POST /v1/[redacted]/chat/completions)' });
  });

  it('redacts the key however the provider spells it (an error object, JSON-escaped; URL-encoded), and in an answer too', async () => {
    const key = 'sk-secret"quote\\back/slash<>&\'';
    const answering = (body: () => Response) =>
      new OpenAiCompatibleModel('p', 'http://model.test/v1', key, async () => body(), { ...policy, retries: 0 }, sleep);
    const asObject = answering(() => new Response(JSON.stringify({ error: { message: { got: key } } }), { status: 401 }));
    const err = (await asObject.complete(req).catch((e: unknown) => e)) as ModelError;
    expect(err.message).toContain('[redacted]');
    expect(err.message).not.toContain('sk-secret');
    const inUrl = answering(() => new Response(JSON.stringify({ error: { message: `GET /v1?key=${encodeURIComponent(key)}` } }), { status: 400 }));
    expect(((await inUrl.complete(req).catch((e: unknown) => e)) as ModelError).message).not.toContain('sk-secret');
    const echo = answering(() =>
      sse(
        delta({ content: `your key is ${key}`, tool_calls: [{ index: 0, id: 'c', function: { name: 'n', arguments: JSON.stringify({ k: key }) } }] }, 'stop'),
      ),
    );
    const turn = await echo.complete(req);
    expect(turn.content).toBe('your key is [redacted]');
    expect(JSON.parse(turn.toolCalls[0].arguments)).toEqual({ k: '[redacted]' });
  });

  it('redacts the key in another case and base64-encoded, in an error (and its cut at 500) and in an answer', async () => {
    const key = 'sk-test-PROVIDERKEY-0123456789';
    const b64 = Buffer.from(key).toString('base64');
    const answering = (body: () => Response) =>
      new OpenAiCompatibleModel('p', 'http://model.test/v1', key, async () => body(), { ...policy, retries: 0 }, sleep);
    const message = `Incorrect API key provided: ${key.toUpperCase()} / ${b64} / ${key.toLowerCase()}`;
    const err = (await answering(() => new Response(JSON.stringify({ error: { message } }), { status: 401 }))
      .complete(req)
      .catch((e: unknown) => e)) as ModelError;
    expect(err.message).toBe('The provider answered 401: 401 Incorrect API key provided: [redacted] / [redacted] / [redacted]');
    const long = (await answering(() => new Response(JSON.stringify({ error: { message: `${'x'.repeat(470)} ${b64}` } }), { status: 500 }))
      .complete(req)
      .catch((e: unknown) => e)) as ModelError;
    expect(long.message).not.toContain(b64.slice(0, 8));
    const echo = answering(() => sse(delta({ content: `yours: ${key.toUpperCase()}` }), delta({ content: ` and ${b64}` }, 'stop')));
    expect((await echo.complete(req)).content).toBe('yours: [redacted] and [redacted]');
  });

  it('reports an egress refusal as such, without retrying', async () => {
    const refusing = new OpenAiCompatibleModel(
      'p',
      'http://10.0.0.1/v1',
      null,
      async () => {
        throw Object.assign(new Error('egress refused: 10.0.0.1'), { code: 'egress_refused' });
      },
      policy,
      sleep,
    );
    await expect(refusing.complete(req)).rejects.toMatchObject({ code: 'egress_refused' });
    expect(sleeps).toEqual([]);
  });

  it('a context-window refusal is told apart', async () => {
    const body = { error: { message: "This model's maximum context length is 8192 tokens.", code: 'context_length_exceeded' } };
    const full = new OpenAiCompatibleModel('p', 'http://model.test/v1', null, async () => new Response(JSON.stringify(body), { status: 400 }), policy, sleep);
    await expect(full.complete(req)).rejects.toMatchObject({ code: 'context_length_exceeded' });
  });

  it('asks again without reasoning_effort once, not for ever, when every 400 names it (attack round 9)', async () => {
    const sent: unknown[] = [];
    const refusing = new OpenAiCompatibleModel(
      'p',
      'http://model.test/v1',
      null,
      async (_url, init) => {
        sent.push(JSON.parse(String(init?.body)).reasoning_effort);
        // Before the fix this provider was asked again at every answer, 650 times a second.
        if (sent.length > 10) throw new Error('asked again and again');
        return new Response(JSON.stringify({ error: { message: 'reasoning_effort is not supported', param: 'reasoning_effort' } }), { status: 400 });
      },
      policy,
      sleep,
    );
    await expect(refusing.complete({ ...req, model: 'always-400', reasoningEffort: 'high' })).rejects.toMatchObject({ code: 'model_error', status: 400 });
    expect(sent).toEqual(['high', undefined]);
  });
});
