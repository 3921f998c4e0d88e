import { EventEmitter } from 'node:events';
import type { AppConfig } from '../config/app-config';
import type { EventLogRepository, StreamRead } from './event-log.repository';
import { EventStreamService } from './event-stream.service';
import type { EventWakeups } from './event-wakeups.service';

/** A response as a stream writes to it: a client that takes everything, or (`stuck`) nothing past the opening line. */
class FakeResponse extends EventEmitter {
  readonly written: string[] = [];
  writableEnded = false;
  writableNeedDrain = false;

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
}

const wakeups = { on: () => () => undefined } as unknown as EventWakeups;
const configWith = (heartbeatMs: number) => ({ events: { heartbeatMs, pollMs: 600_000 } }) as unknown as AppConfig;

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
  keyRevoked: false,
};

describe('EventStreamService, a client that takes nothing', () => {
  let service: EventStreamService;
  let res: FakeResponse;

  beforeEach(async () => {
    jest.useFakeTimers();
    const log = { readAfter: jest.fn().mockResolvedValueOnce(oneEvent).mockResolvedValue({ events: [], heldBack: false, keyRevoked: false }) };
    service = new EventStreamService(log as unknown as EventLogRepository, wakeups, configWith(15_000));
    res = new FakeResponse(true);
    service.open('org', undefined, undefined, { from: { tx: 1n, seq: 0n } }, res as never);
    // The stream reads, writes the event into the full socket, and waits for it to drain.
    await jest.advanceTimersByTimeAsync(0);
    expect(res.written).toHaveLength(2);
    expect(jest.getTimerCount()).toBe(1);
  });

  afterEach(() => jest.useRealTimers());

  it('is cut after 30 s', async () => {
    await jest.advanceTimersByTimeAsync(29_999);
    expect(res.writableEnded).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(res.writableEnded).toBe(true);
    expect(service.openStreams).toBe(0);
  });

  it('stops waiting for it when the stream is closed (a stopping node keeps no 30 s timer)', () => {
    service.closeAll();
    expect(res.writableEnded).toBe(true);
    expect(service.openStreams).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('EventStreamService heartbeats', () => {
  afterEach(() => jest.useRealTimers());

  it('send a keep-alive every heartbeat, and end a stream when its credential is no longer accepted', async () => {
    jest.useFakeTimers();
    const log = { readAfter: jest.fn().mockResolvedValue({ events: [], heldBack: false, keyRevoked: false }) };
    const service = new EventStreamService(log as unknown as EventLogRepository, wakeups, configWith(1_000));
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
