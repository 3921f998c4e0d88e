import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { testConfig } from '../../test/support/test-app';
import { EgressService } from '../egress/egress.service';
import { MAX_EMPTY_CHUNKS_PER_ANSWER } from './model-answer';
import { OpenAiCompatibleModel } from './model-client';
import { MAX_SSE_LINE_BYTES, MAX_SSE_LINES } from './sse-line-limit';

const event = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
const answer = event({ choices: [{ index: 0, delta: { content: 'done' }, finish_reason: 'stop' }] }) + 'data: [DONE]\n\n';

/**
 * What each path floods with, as fast as the socket takes it, up to `mib` MiB (8 unless said: well
 * past what its bound lets through and the sockets' buffers hold), before (or after) a real answer.
 */
const floods: Record<string, { line: string; mib?: number; answerFirst?: boolean }> = {
  empty: { line: event({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {} }] }) },
  blank: { line: '\n' },
  cr: { line: '\r' },
  comments: { line: ':\n' },
  unended: { line: `data: ${'x'.repeat(100)}\n`, mib: 16 },
  'after-done': { line: event({ choices: [{ index: 0, delta: { content: 'more' } }] }), answerFirst: true },
};

/**
 * A provider over loopback flooding one of those (the first part of the path); `ends` settles per
 * request with whether the client hung up before the flood was written whole.
 */
async function provider(): Promise<{ server: Server; base: string; ends: Array<Promise<{ cutOff: boolean }>> }> {
  const ends: Array<Promise<{ cutOff: boolean }>> = [];
  const server = createServer((req, res) => {
    req.resume();
    const { line, mib = 8, answerFirst } = floods[req.url!.split('/')[1]];
    const floodBytes = mib * 1024 * 1024;
    const block = line.repeat(Math.ceil(65536 / line.length));
    let written = 0;
    let closed = false;
    ends.push(new Promise((resolve) => res.once('close', () => ((closed = true), resolve({ cutOff: written < floodBytes })))));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (answerFirst) res.write(answer);
    const pump = () => {
      while (!closed && written < floodBytes) {
        written += block.length;
        if (!res.write(block)) return void res.once('drain', pump);
      }
      if (!closed) res.end(answerFirst ? '' : `\n\n${answer}`);
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ends };
}

/**
 * Through the egress policy, as a run calls it: a provider flooding what adds nothing to the answer
 * has the call fail at the bound it passes, not retried, its connection closed long before the
 * flood's end. Read whole, each flood made the call succeed (the answer comes after it), parsed
 * on the event loop for 1 s (empty deltas) to 25 s (blank lines) and more.
 */
describe("a model's stream that adds nothing is cut off", () => {
  let p: Awaited<ReturnType<typeof provider>>;
  let egress: EgressService;
  const req = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], tools: [] };
  const model = (path: string) =>
    new OpenAiCompatibleModel(
      'p',
      `${p.base}/${path}/v1`,
      'k',
      (url, init) => egress.fetch(url, init),
      { retries: 2, baseDelayMs: 1, maxDelayMs: 1, timeoutMs: 60_000 },
      async () => undefined,
    );

  beforeAll(async () => {
    p = await provider();
    egress = new EgressService(testConfig({ egress: { allowedHosts: ['127.0.0.1'], connectTimeoutMs: 1000, requestTimeoutMs: 5000 } }));
  });
  afterAll(async () => {
    await egress.onModuleDestroy();
    p.server.closeAllConnections();
    await new Promise((r) => p.server.close(r));
  });

  it.each([
    ['empty', `more than ${MAX_EMPTY_CHUNKS_PER_ANSWER} chunks that added nothing`],
    ['blank', `more than ${MAX_SSE_LINES} lines`],
    ['cr', `more than ${MAX_SSE_LINES} lines`],
    ['comments', `more than ${MAX_SSE_LINES} lines`],
    ['unended', `an event longer than ${MAX_SSE_LINE_BYTES} characters`],
  ])('%s: model_error naming the bound, one request, the connection closed', async (path, reason) => {
    const before = p.ends.length;
    await expect(model(path).complete(req)).rejects.toMatchObject({ code: 'model_error', retryable: false, message: expect.stringContaining(reason) });
    expect(p.ends.length - before).toBe(1);
    expect(await p.ends.at(-1)).toEqual({ cutOff: true });
  });

  it('what follows [DONE] is not read: the answer, and the connection closed', async () => {
    await expect(model('after-done').complete(req)).resolves.toMatchObject({ content: 'done', finishReason: 'stop' });
    expect(await p.ends.at(-1)).toEqual({ cutOff: true });
  });
});
