import { EventEmitter } from 'node:events';
import type { AppConfig } from '../config/app-config';
import { PositionSeals } from '../secrets/position-seals';
import type { EventLogRepository, StreamRead } from './event-log.repository';
import { EventStreamService } from './event-stream.service';
import type { EventWakeups } from './event-wakeups.service';
import { HeldRequests } from '../common/held-requests';

/** A response as a stream writes to it: a client that takes everything, or (`stuck`) nothing past the opening line. */
class FakeResponse extends EventEmitter {
  readonly written: string[] = [];
  writableEnded = false;
  writableNeedDrain = false;
  destroyed = false;

  constructor(private readonly stuck = false) {
    super();
  }

  write(chunk: string): boolean {
    this.written.push(chunk);
    // Stuck: the opening `id:` line fits; the first event fills the socket, and `drain` never comes.
    this.writableNeedDrain = this.stuck && this.written.length > 1;
    return !this.writableNeedDrain;
  }

  end(): void {
    this.writableEnded = true;
  }

  destroy(): void {
    this.destroyed = true;
  }
}

const wakeups = { on: () => () => undefined } as unknown as EventWakeups;
const seals = new PositionSeals({ read: () => Promise.resolve(Buffer.alloc(32, 7)) } as never);
beforeAll(() => seals.onModuleInit());
const configWith = (heartbeatMs: number) => ({ events: { heartbeatMs, pollMs: 600_000 } }) as unknown as AppConfig;
const held = new HeldRequests({} as AppConfig);

const oneEvent: StreamRead = {
  events: [
    {
      position: { tx: 7n, seq: 1n },
      event: {
        id: 'e1',
        at: '2026-12-03T00:00:00.000Z',
        type: 'agent.created',
        actor: { type: 'system', id: 't' },
        orgId: 'org',
        target: { type: 'agent', id: 'a' },
        data: {},
      },
    },
  ],
  heldBack: false,
  cut: false,
  horizon: 8n,
  revokedKeys: new Set<string>(),
};

describe('EventStreamService, a client that takes nothing', () => {
  let service: EventStreamService;
  let res: FakeResponse;

  beforeEach(async () => {
    jest.useFakeTimers();
    const log = {
      readAfter: jest
        .fn()
        .mockResolvedValueOnce(oneEvent)
        .mockResolvedValue({ events: [], heldBack: false, cut: false, horizon: 8n, revokedKeys: new Set<string>() }),
    };
    service = new EventStreamService(log as unknown as EventLogRepository, wakeups, seals, configWith(15_000), held);
    res = new FakeResponse(true);
    service.open('org', undefined, undefined, { from: { tx: 1n, seq: 0n } }, res as never);
    // The stream reads, writes the event into the full socket, and waits for it to drain.
    await jest.advanceTimersByTimeAsync(0);
    expect(res.written).toHaveLength(2);
    expect(jest.getTimerCount()).toBe(1);
  });

  afterEach(() => jest.useRealTimers());

  // Ended, its socket would stay open for as long as the client reads nothing, holding what was
  // buffered for it, while its slot went to its next stream (attack round 14, P-F2).
  it('is cut after 30 s, its connection closed', async () => {
    await jest.advanceTimersByTimeAsync(29_999);
    expect(res.destroyed).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(res.destroyed).toBe(true);
    expect(service.openStreams).toBe(0);
  });

  it('stops waiting for it when the stream is closed (a stopping node keeps no 30 s timer)', () => {
    service.closeAll();
    expect(res.destroyed).toBe(true);
    expect(service.openStreams).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('EventStreamService heartbeats', () => {
  afterEach(() => jest.useRealTimers());

  it('send a keep-alive every heartbeat, and end a stream when its credential is no longer accepted', async () => {
    jest.useFakeTimers();
    const log = { readAfter: jest.fn().mockResolvedValue({ events: [], heldBack: false, cut: false, horizon: 8n, revokedKeys: new Set<string>() }) };
    const service = new EventStreamService(log as unknown as EventLogRepository, wakeups, seals, configWith(1_000), held);
    service.onModuleInit();
    const res = new FakeResponse();
    const credential = new AbortController();
    const release = jest.fn();
    service.open(
      'org',
      { signal: credential.signal, accepted: () => Promise.resolve(!credential.signal.aborted), release },
      undefined,
      { from: { tx: 1n, seq: 0n } },
      res as never,
    );
    await jest.advanceTimersByTimeAsync(5_000);
    expect(res.written.filter((w) => w === ': keep-alive\n\n')).toHaveLength(5);
    expect(res.writableEnded).toBe(false);
    credential.abort();
    expect(res.writableEnded).toBe(true);
    expect(service.openStreams).toBe(0);
    expect(release).toHaveBeenCalledTimes(1);
    service.onModuleDestroy();
  });
});

describe('EventStreamService, streams of one organization sharing a read', () => {
  afterEach(() => jest.useRealTimers());

  const event = (seq: bigint, type: string) => ({
    ...oneEvent.events[0],
    position: { tx: 7n, seq },
    event: { ...oneEvent.events[0].event, id: `e${seq}`, type },
  });
  const nothing = { events: [], heldBack: false, cut: false, horizon: 7n, revokedKeys: new Set<string>() };

  it('serves every stream at the head from one read per wake-up, and takes out a stream whose client stopped reading', async () => {
    jest.useFakeTimers();
    let listener: (orgs: Set<string>) => void = () => undefined;
    const wakes = { on: (l: typeof listener) => ((listener = l), () => undefined) } as unknown as EventWakeups;
    const readAfter = jest.fn().mockResolvedValue(nothing);
    const service = new EventStreamService({ readAfter } as unknown as EventLogRepository, wakes, seals, configWith(600_000), held);
    service.onModuleInit();
    const fast = new FakeResponse();
    const stuck = new FakeResponse(true);
    const approver = new FakeResponse();
    service.open('org', undefined, undefined, { from: { tx: 1n, seq: 0n } }, fast as never);
    service.open('org', undefined, undefined, { from: { tx: 1n, seq: 0n } }, stuck as never);
    service.open('org', undefined, ['agent.created'], { from: { tx: 1n, seq: 0n } }, approver as never);
    await jest.advanceTimersByTimeAsync(0);
    // Their first read, from where they opened: one, since they opened at the same position.
    expect(readAfter).toHaveBeenCalledTimes(1);

    readAfter.mockResolvedValueOnce({ ...nothing, events: [event(1n, 'api_key.created'), event(2n, 'agent.created')] });
    for (let i = 0; i < 5; i++) listener(new Set(['org']));
    await jest.advanceTimersByTimeAsync(0);
    // Five wake-ups in a burst: one read, of every type, from the streams' lowest position.
    expect(readAfter).toHaveBeenCalledTimes(2);
    expect(readAfter.mock.calls[1].slice(1, 4)).toEqual([{ tx: 7n, seq: 0n }, undefined, 100]);
    // Each event's id, opened with the organization's seal and shown as `<tx>-<seq>`.
    const seal = seals.events('org');
    const ids = (r: FakeResponse) =>
      r.written
        .filter((w) => w.includes('\ndata: '))
        .map((w) => seal.open(w.slice('id: '.length, w.indexOf('\n')))!)
        .map(([tx, seq]) => `id: ${tx}-${seq}`);
    expect(ids(fast)).toEqual(['id: 7-1', 'id: 7-2']);
    expect(ids(approver)).toEqual(['id: 7-2']);
    // The stuck client took its first event and no more; it waits for its socket, out of the shared reads.
    expect(ids(stuck)).toEqual(['id: 7-1']);
    // The same frame, serialized once, for every stream that carries the event.
    const second = `id: ${seal.seal(7n, 2n)}\n`;
    expect(fast.written.find((w) => w.startsWith(second))).toBe(approver.written.find((w) => w.startsWith(second)));

    readAfter.mockResolvedValueOnce({ ...nothing, events: [event(3n, 'agent.created')] });
    listener(new Set(['org']));
    await jest.advanceTimersByTimeAsync(0);
    expect(readAfter).toHaveBeenCalledTimes(3);
    expect(ids(fast)).toEqual(['id: 7-1', 'id: 7-2', 'id: 7-3']);
    expect(ids(stuck)).toEqual(['id: 7-1']);
    // Its socket drains: it reads behind, from its last event, catches up, and joins again.
    readAfter.mockResolvedValueOnce({ ...nothing, events: [event(2n, 'agent.created'), event(3n, 'agent.created')] });
    stuck.writableNeedDrain = false;
    stuck.emit('drain');
    await jest.advanceTimersByTimeAsync(0);
    expect(readAfter.mock.calls[3].slice(1, 3)).toEqual([{ tx: 7n, seq: 1n }, undefined]);
    service.onModuleDestroy();
  });
});
