import { MAX_PROVIDER_ERROR_CHARS, ModelError, OpenAiCompatibleModel } from './model-client';

/**
 * A provider's error answers (any URL an organization's admin saves): the client read them whole,
 * up to MAX_STREAM_BYTES, and each was put on one line three times a failure. An error of 100 MB
 * of `x x x …` held the node's event loop 61 s (attack round 13, K-F5).
 */
describe('OpenAiCompatibleModel, errors of any size', () => {
  const sleep = async () => undefined;
  const policy = { retries: 0, baseDelayMs: 100, maxDelayMs: 1000, timeoutMs: 5000 };
  const req = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], tools: [] };
  const piece = new TextEncoder().encode('x '.repeat(32 * 1024));

  /** An error answer of `{"error":{"message":"x x x …` 64 KiB a pull, 8 MB in all; counts what was read. */
  function endlessError(status: number) {
    const counter = { sent: 0 };
    const response = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(c) {
            // 8 MB, where the egress lets a provider send 128 MB.
            if (counter.sent >= 8_000_000) return c.close();
            c.enqueue(counter.sent === 0 ? new TextEncoder().encode('{"error":{"message":"') : piece);
            counter.sent += piece.length;
          },
        }),
        { status, headers: { 'content-type': 'application/json' } },
      );
    return { counter, response };
  }

  it('reads an error body no further than MAX_PROVIDER_ERROR_CHARS, and quotes its start', async () => {
    const { counter, response } = endlessError(400);
    const model = new OpenAiCompatibleModel('p', 'http://model.test/v1', 'k', async () => response(), policy, sleep);
    const err = (await model.complete(req).catch((e: unknown) => e)) as ModelError;
    expect(err).toBeInstanceOf(ModelError);
    expect(err.message).toMatch(/^The provider answered 400: 400 \{"error":\{"message":"x x x/);
    expect(err.message.length).toBeLessThanOrEqual(500 + 'The provider answered 400: '.length);
    // Before the fix the body was read to the egress bound (128 MB), then made one line three times.
    expect(counter.sent).toBeLessThanOrEqual(MAX_PROVIDER_ERROR_CHARS + 2 * piece.length);
  });

  it('a key that the cut splits is not shown, when spaces before it bring what is left of it near the start', async () => {
    const key = 'sk-live-SECRETKEY-0123456789abcdef';
    // The key begins 10 or 20 bytes before the cut.
    for (const before of [MAX_PROVIDER_ERROR_CHARS - 32, MAX_PROVIDER_ERROR_CHARS - 42]) {
      // As a body cut by the read, and as a message of a streamed error event (not cut by the read).
      const body = `{"error":{"message":"a${' '.repeat(before)}${key} and more"}}`;
      const model = new OpenAiCompatibleModel('p', 'http://model.test/v1', key, async () => new Response(body, { status: 400 }), policy, sleep);
      const err = (await model.complete(req).catch((e: unknown) => e)) as ModelError;
      expect(err.message).toContain('The provider answered 400');
      expect(err.message).not.toContain(key.slice(0, 8));
    }
    const streamed = `data: ${JSON.stringify({ error: { message: `a${' '.repeat(MAX_PROVIDER_ERROR_CHARS - 10)}${key}` } })}\n\n`;
    const model = new OpenAiCompatibleModel(
      'p',
      'http://model.test/v1',
      key,
      async () => new Response(streamed, { headers: { 'content-type': 'text/event-stream' } }),
      policy,
      sleep,
    );
    const err = (await model.complete(req).catch((e: unknown) => e)) as ModelError;
    expect(err.message).not.toContain(key.slice(0, 8));
  });

  it('a small error is quoted as before, its JSON message read', async () => {
    const model = new OpenAiCompatibleModel(
      'p',
      'http://model.test/v1',
      null,
      async () => new Response(JSON.stringify({ error: { message: 'model  not\nfound' } }), { status: 404 }),
      policy,
      sleep,
    );
    await expect(model.complete(req)).rejects.toMatchObject({ message: 'The provider answered 404: 404 model not found' });
  });
});
