import { DataSource } from 'typeorm';
import { AuditService } from '../src/audit/audit.service';
import { EVENT_READ_BYTES, EventLogRepository, StreamRead } from '../src/events/event-log.repository';
import { SseClient } from './support/sse-client';
import { createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * Attack round 14 (P-F1): a stream behind is sent each read of the log in one write, and a read
 * was 100 events whatever they weighed. A refused tool call's event holds up to 50 errors, 237 KB
 * when its argument names are control characters (any agent key writes them), so one read was
 * 24 MB, and 100 streams of one organization resuming from old positions and reading nothing took
 * a node from 0.36 to 1.9 GB. A read now ends in the database once its events pass
 * EVENT_READ_BYTES (at least one event), and the streams read on from there: nothing dropped,
 * nothing sent twice.
 */
describe('GET /events: reads of large events are bounded in bytes (e2e)', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  const EVENTS = 40;
  const BLOB = 100_000;

  beforeAll(async () => {
    t = await createTestApp({
      config: { events: { heartbeatMs: 15_000, pollMs: 600_000, webhookTimeoutMs: 1_000, webhookRetryBaseMs: 5_000, webhookRetryWindowMs: 60_000 } },
    });
    await t.app.listen(0, '127.0.0.1');
    base = `${await t.app.getUrl()}/api/v1`;
    org = await createOrg(t);
    await t.app.get(AuditService).record(
      t.app.get(DataSource).manager,
      ...Array.from({ length: EVENTS }, (_, i) => ({
        type: 'tool_call.denied' as const,
        orgId: org.id,
        actor: { type: 'system', id: 'large-events-test' },
        target: { type: 'tool_call', id: `c${i}` },
        data: { i, blob: 'x'.repeat(BLOB) },
      })),
    );
    // The embedded database starts slowly on a loaded machine.
  }, 180_000);
  afterAll(async () => {
    await t.close();
  });

  const weight = (read: StreamRead) => read.events.reduce((sum, e) => sum + JSON.stringify(e.event.data).length, 0);

  it('ends a read once its events pass the budget, and reading on from it gives every event once, in order', async () => {
    const log = t.app.get(EventLogRepository);
    // The log shows a transaction once every older one has ended (its horizon), and on a shared
    // PostgreSQL server another suite's open transaction may hold that back for a moment: wait, as
    // the streams do.
    const first = await until(
      () => log.readAfter(org.id, { tx: 0n, seq: 0n }, ['tool_call.denied'], 100),
      (r) => r.events.length > 0,
    );
    expect(first.events.length).toBeGreaterThan(0);
    expect(first.events.length).toBeLessThan(EVENTS);
    expect(weight(first)).toBeLessThanOrEqual(EVENT_READ_BYTES + BLOB + 1_000);
    expect(first.cut).toBe(true);

    const seen: number[] = [];
    let read = first;
    let reads = 1;
    for (;;) {
      seen.push(...read.events.map((e) => (e.event.data as { i: number }).i));
      if (!read.cut) break;
      read = await log.readAfter(org.id, read.events[read.events.length - 1].position, ['tool_call.denied'], 100);
      expect(weight(read)).toBeLessThanOrEqual(EVENT_READ_BYTES + BLOB + 1_000);
      reads++;
    }
    expect(seen).toEqual(Array.from({ length: EVENTS }, (_, i) => i));
    expect(reads).toBeGreaterThan(EVENTS / 4);
    // An event larger than the budget is still read, alone.
    const one = await log.readAfter(org.id, { tx: 0n, seq: 0n }, ['tool_call.denied'], 100, undefined, [], 10);
    expect(one.events).toHaveLength(1);
    expect(one.cut).toBe(true);
  });

  it('replays the large events to a stream from 0-0 each once, in order, every read within the budget', async () => {
    const log = t.app.get(EventLogRepository);
    const original = log.readAfter.bind(log);
    const weights: number[] = [];
    const reads = jest.spyOn(log, 'readAfter').mockImplementation(async (...args) => {
      const read = await original(...args);
      if (args[0] === org.id) weights.push(weight(read));
      return read;
    });
    const c = await SseClient.open(`${base}/events`, { authorization: `Bearer ${org.keys.admin}`, 'last-event-id': '0-0' });
    try {
      const got = (x: SseClient) => x.events.some((e) => (e.event.data as { i?: number }).i === EVENTS - 1);
      await c.waitFor(got, 60_000);
    } finally {
      c.close();
      reads.mockRestore();
    }
    const written = c.events.filter((e) => (e.event.actor as { id: string }).id === 'large-events-test');
    expect(written.map((e) => (e.event.data as { i: number }).i)).toEqual(Array.from({ length: EVENTS }, (_, i) => i));
    expect(new Set(c.events.map((e) => e.id)).size).toBe(c.events.length);
    expect(Math.max(...weights)).toBeLessThanOrEqual(EVENT_READ_BYTES + BLOB + 1_000);
  }, 120_000);
});
