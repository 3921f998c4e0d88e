import { EventEmitter } from 'node:events';
import type { AppConfig } from '../config/app-config';
import { PositionSeals } from '../secrets/position-seals';
import type { EventLogRepository, StreamEvent, StreamRead } from './event-log.repository';
import { comparePositions, EventPosition } from './event-position';
import { EventStreamService } from './event-stream.service';
import type { EventWakeups } from './event-wakeups.service';
import { HeldRequests } from '../common/held-requests';

/** A client's socket: takes everything, or (`slow`) fills up at every write and drains on a later turn. */
class FakeResponse extends EventEmitter {
  readonly written: string[] = [];
  writableEnded = false;
  writableNeedDrain = false;

  constructor(private readonly slow = false) {
    super();
  }

  write(chunk: string): boolean {
    this.written.push(chunk);
    if (!this.slow) return true;
    this.writableNeedDrain = true;
    setTimeout(() => {
      this.writableNeedDrain = false;
      this.emit('drain');
    }, 1);
    return false;
  }

  end(): void {
    this.writableEnded = true;
  }

  destroy(): void {
    this.writableEnded = true;
  }
}

const wakeups = { on: () => () => undefined } as unknown as EventWakeups;
const seals = new PositionSeals({ read: () => Promise.resolve(Buffer.alloc(32, 7)) } as never);
beforeAll(() => seals.onModuleInit());
const config = { events: { heartbeatMs: 600_000, pollMs: 600_000 } } as unknown as AppConfig;

const EVENTS = 250;
/** The organization's log: one transaction's events, alternating a type an approver reads and one it does not. */
const log: StreamEvent[] = Array.from({ length: EVENTS }, (_, i) => ({
  position: { tx: 5n, seq: BigInt(i + 1) },
  event: {
    id: `e${i + 1}`,
    at: '2026-12-03T00:00:00.000Z',
    type: i % 2 === 0 ? 'agent.created' : 'api_key.created',
    actor: { type: 'system', id: 't' },
    orgId: 'org',
    target: { type: 'agent', id: 'a' },
    data: { i },
  },
}));

/** The log as EventLogRepository reads it, each read answered on a later turn; counts reads, and those running at once. */
function fakeLog() {
  const counts = { reads: 0, running: 0, mostAtOnce: 0 };
  const readAfter = async (orgId: string, after: EventPosition, types: readonly string[] | undefined, limit: number): Promise<StreamRead> => {
    counts.reads++;
    counts.mostAtOnce = Math.max(counts.mostAtOnce, ++counts.running);
    await new Promise((r) => setTimeout(r, 2));
    counts.running--;
    const events = log.filter((e) => comparePositions(e.position, after) > 0 && (!types || types.includes(e.event.type))).slice(0, limit);
    return { events, heldBack: false, cut: events.length === limit, horizon: 6n, revokedKeys: new Set<string>() };
  };
  return { counts, log: { readAfter } as unknown as EventLogRepository };
}

/** The events a client received, as `<seq>` of their opened ids, in order. */
function received(res: FakeResponse): number[] {
  const seal = seals.events('org');
  return res.written
    .join('')
    .split('\n\n')
    .filter((f) => f.includes('\ndata: '))
    .map((f) => Number(seal.open(f.slice('id: '.length, f.indexOf('\n')))![1]));
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(done()).toBe(true);
}

const seqs = (from: number, types?: string[]) =>
  log.filter((e) => Number(e.position.seq) > from && (!types || types.includes(e.event.type))).map((e) => Number(e.position.seq));

describe('EventStreamService, streams of one organization behind the head', () => {
  it('replays the log once for 50 streams resuming from 0-0, and sends each every event once, in order', async () => {
    const { counts, log: fake } = fakeLog();
    const service = new EventStreamService(fake, wakeups, seals, config, new HeldRequests(config));
    const clients = Array.from({ length: 50 }, (_, i) => new FakeResponse(i % 5 === 0));
    for (const res of clients) service.open('org', undefined, undefined, { from: { tx: 0n, seq: 0n } }, res as never);

    await until(() => clients.every((c) => received(c).length >= EVENTS));
    await new Promise((r) => setTimeout(r, 50));
    for (const c of clients) expect(received(c)).toEqual(seqs(0));
    // Each on its own: 150 reads and 12,500 events serialized. Together: the log's 3 batches,
    // and again for the slow clients, which drained after the others had read on.
    expect(counts.reads).toBeLessThanOrEqual(2 * Math.ceil(EVENTS / 100));
    expect(counts.mostAtOnce).toBeLessThanOrEqual(4);
    service.closeAll();
  });

  it('has at most 4 reads of one organization running at once, whatever the number of streams behind at different positions', async () => {
    const { counts, log: fake } = fakeLog();
    const service = new EventStreamService(fake, wakeups, seals, config, new HeldRequests(config));
    const approver = ['agent.created'];
    const streams = Array.from({ length: 40 }, (_, i) => ({
      res: new FakeResponse(i % 3 === 0),
      from: i * 6,
      types: i % 2 === 0 ? approver : undefined,
    }));
    for (const s of streams) service.open('org', undefined, s.types, { from: { tx: s.from === 0 ? 0n : 5n, seq: BigInt(s.from) } }, s.res as never);

    await until(() => streams.every((s) => received(s.res).length >= seqs(s.from, s.types).length));
    await new Promise((r) => setTimeout(r, 50));
    // Every stream, slow or not, an approver's or an admin's: exactly what followed its position, of its types.
    for (const s of streams) expect(received(s.res)).toEqual(seqs(s.from, s.types));
    // Each on its own: 40 at once.
    expect(counts.mostAtOnce).toBe(4);
    expect(service.openStreams).toBe(40);
    service.closeAll();
    expect(service.openStreams).toBe(0);
  });
});
