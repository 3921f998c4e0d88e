import { EventEmitter } from 'node:events';
import type { AppConfig } from '../config/app-config';
import type { EventLogRepository, StreamRead } from './event-log.repository';
import { EventStreamService } from './event-stream.service';
import type { EventWakeups } from './event-wakeups.service';

/** A response whose client takes nothing: every write is buffered and `drain` never comes. */
class StuckResponse extends EventEmitter {
  readonly written: string[] = [];
  writableEnded = false;
  writableNeedDrain = false;

  write(chunk: string): boolean {
    this.written.push(chunk);
    // The opening `id:` line fits; the first event fills the socket.
    this.writableNeedDrain = this.written.length > 1;
    return !this.writableNeedDrain;
  }

  end(): void {
    this.writableEnded = true;
  }
}

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
};

describe('EventStreamService, a client that takes nothing', () => {
  let service: EventStreamService;
  let res: StuckResponse;

  beforeEach(async () => {
    jest.useFakeTimers();
    const log = { readAfter: jest.fn().mockResolvedValueOnce(oneEvent).mockResolvedValue({ events: [], heldBack: false }) };
    const wakeups = { on: () => () => undefined };
    const config = { events: { heartbeatMs: 15_000, pollMs: 5_000 } };
    service = new EventStreamService(log as unknown as EventLogRepository, wakeups as unknown as EventWakeups, config as unknown as AppConfig);
    res = new StuckResponse();
    service.open('org', 'key', undefined, { from: { tx: 1n, seq: 0n } }, res as never);
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
