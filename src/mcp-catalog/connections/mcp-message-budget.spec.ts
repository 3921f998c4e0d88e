import { Client } from '@modelcontextprotocol/client';
import { floodingMcpServer, NOTICE_LINE } from '../../../test/support/mcp-flood-server';
import { LoopbackPool } from '../../../test/support/loopback-pool';
import { until } from '../../../test/support/until';
import { AnswerWatchingTransport } from './answer-watching.transport';
import { McpClientPool, McpUpstreamError } from './mcp-client-pool.service';
import { MessageBudget, PIECE_BYTES } from './message-budget';

const MAX_MESSAGES = 100;

describe('McpClientPool against a server that floods the client with notifications', () => {
  let mcp: Awaited<ReturnType<typeof floodingMcpServer>>;
  let loop: LoopbackPool;
  let pool: McpClientPool;
  const target = () => loop.target(mcp.url);
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected a failure');
      },
      (err: unknown) => err as McpUpstreamError,
    );

  beforeEach(async () => {
    mcp = await floodingMcpServer();
    loop = new LoopbackPool(30_000, { mcpMaxMessagesPerRequest: MAX_MESSAGES });
    pool = loop.pool;
  });
  afterEach(async () => {
    await loop.close();
    await mcp.close();
  });

  it('a call whose answer floods notifications fails upstream_unavailable past the cap, its stream ended; the next call works', async () => {
    const t = target();
    // Long enough that a call read to its timeout would fail `timeout` instead.
    const err = await failure(pool.callTool(t, 'flood', {}, { timeoutMs: 20_000 }));
    expect(err).toBeInstanceOf(McpUpstreamError);
    expect([err.code, err.message]).toEqual([
      'upstream_unavailable',
      expect.stringMatching(new RegExp(`more than ${MAX_MESSAGES} messages while answering one request`)),
    ]);
    // The exchange is ended, not read on in the background.
    const [stream] = await until(
      async () => mcp.state.streams.filter((s) => s.method === 'flood'),
      ([s]) => s?.ended === true,
      10_000,
      20,
    );
    expect(stream.written).toBeGreaterThan(MAX_MESSAGES);
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 5000 })).resolves.toMatchObject({ content: [{ type: 'text', text: 'fine' }] });
  });

  it('a call with a few notifications beside its answer is answered, and asks for no progress', async () => {
    const t = target();
    await expect(pool.callTool(t, 'burst', { count: MAX_MESSAGES - 1 }, { timeoutMs: 5000 })).resolves.toMatchObject({ content: [{ text: 'done' }] });
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 5000 })).resolves.toMatchObject({ content: [{ text: 'fine' }] });
    // A server asked for progress may send a report as often as it likes; nothing here used them.
    expect(mcp.state.progressAsked).toEqual([false, false]);
  });

  it("a session's event stream that floods is ended once past the budget, and not opened again; calls still work", async () => {
    mcp.state.floodEvents = true;
    const t = target();
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 5000 })).resolves.toMatchObject({ content: [{ text: 'fine' }] });
    // Read on without the budget, the stream would never end: the server writes for as long as it is read.
    await until(
      async () => mcp.state.streams.map((s) => ({ ...s })),
      ([s]) => s?.ended === true,
      10_000,
      20,
    );
    // The server asked for reconnections 10 ms after an end: none is made once the budget is spent.
    await new Promise((r) => setTimeout(r, 500));
    expect(mcp.state.gets).toBe(1);
    await expect(pool.callTool(t, 'ok', {}, { timeoutMs: 5000 })).resolves.toMatchObject({ content: [{ text: 'fine' }] });
  });
});

describe('AnswerWatchingTransport reading an event stream', () => {
  let mcp: Awaited<ReturnType<typeof floodingMcpServer>>;
  beforeAll(async () => (mcp = await floodingMcpServer()));
  afterAll(async () => {
    await mcp.close();
  });

  it('hands the SDK a bounded piece per event-loop turn, so other work interleaves with a long stream', async () => {
    const client = new Client({ name: 'test', version: '1' }, { capabilities: {} });
    await client.connect(new AnswerWatchingTransport(new URL(mcp.url), { fetch }, () => undefined, { maxMessages: 100_000, maxBytes: 64 * 1024 * 1024 }));
    // An event-loop turn is counted by an immediate that schedules the next; each message handled is put in its turn.
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const perTurn = new Map<number, number>();
    client.setNotificationHandler('notifications/message', () => void perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1));
    const count = 5000;
    try {
      await expect(client.callTool({ name: 'burst', arguments: { count } })).resolves.toMatchObject({ content: [{ text: 'done' }] });
    } finally {
      ticking = false;
      await client.close();
    }
    expect([...perTurn.values()].reduce((a, b) => a + b, 0)).toBe(count);
    // A piece is at most PIECE_BYTES; the socket's reads (64 KiB and more) were parsed whole in one turn before.
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(Math.ceil(PIECE_BYTES / NOTICE_LINE.length) + 1);
  });
});

describe('MessageBudget', () => {
  afterEach(() => jest.restoreAllMocks());

  it("a request's is spent once, past its messages or bytes; a session's refills by the minute", () => {
    const spent: string[] = [];
    const request = new MessageBudget({ maxMessages: 3, maxBytes: 1000 }, 'request', (e) => spent.push(e.message));
    expect([request.charge(3, 0), request.charge(0, 1000), request.charge(1, 0), request.charge(0, 0)]).toEqual([true, true, false, false]);
    expect(spent).toEqual([expect.stringMatching(/more than 3 messages while answering one request/)]);
    expect(request.signal.aborted).toBe(true);

    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const session = new MessageBudget({ maxMessages: 60, maxBytes: 1000 }, 'session', (e) => spent.push(e.message));
    expect(session.charge(60, 0)).toBe(true);
    now += 10_000;
    // A sixth of a minute gives back a sixth.
    expect(session.charge(10, 0)).toBe(true);
    expect(session.charge(0, 1001)).toBe(false);
    expect(spent[1]).toMatch(/more than 1000 bytes on its event stream within a minute/);
    now += 60_000;
    expect(session.charge(1, 0)).toBe(false);
  });
});
