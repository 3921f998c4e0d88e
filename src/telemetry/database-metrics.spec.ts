import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DatabaseMetrics, PENDING_APPROVALS_REUSE_MS } from './database-metrics';
import { Metrics } from './metrics';

/** A database whose pending-approvals queries the test answers one by one. */
function harness() {
  const pending: Array<{ resolve: (rows: unknown[]) => void; reject: (e: Error) => void }> = [];
  const dataSource = {
    driver: {},
    subscribers: [],
    query: jest.fn(() => new Promise<unknown[]>((resolve, reject) => pending.push({ resolve, reject }))),
  };
  const hooks: Array<() => Promise<void>> = [];
  const waiting: Array<[number, number]> = [];
  const metrics = {
    gauge: () => undefined,
    dbQuery: () => undefined,
    onScrape: (fn: () => Promise<void>) => hooks.push(fn),
    approvalsWaiting: (n: number, oldest: number) => waiting.push([n, oldest]),
  };
  new DatabaseMetrics(dataSource as unknown as DataSource, metrics as unknown as Metrics).onModuleInit();
  const scrape = () => Promise.all(hooks.map((fn) => fn()));
  return { dataSource, pending, waiting, scrape };
}

describe('DatabaseMetrics: the pending-approvals figure read at scrape time', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    jest.useFakeTimers();
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('serves concurrent scrapes from one query, and reuses its figure for the interval', async () => {
    const h = harness();
    const scrapes = Array.from({ length: 50 }, () => h.scrape());
    expect(h.dataSource.query).toHaveBeenCalledTimes(1);
    h.pending[0].resolve([{ n: 3, oldest: 12 }]);
    await Promise.all(scrapes);
    expect(h.waiting).toEqual([[3, 12]]);

    jest.advanceTimersByTime(PENDING_APPROVALS_REUSE_MS - 1);
    await Promise.all(Array.from({ length: 50 }, () => h.scrape()));
    expect(h.dataSource.query).toHaveBeenCalledTimes(1);

    jest.advanceTimersByTime(1);
    const next = [h.scrape(), h.scrape()];
    expect(h.dataSource.query).toHaveBeenCalledTimes(2);
    h.pending[1].resolve([{ n: 0, oldest: 0 }]);
    await Promise.all(next);
    expect(h.waiting).toEqual([
      [3, 12],
      [0, 0],
    ]);
  });

  it('answers a scrape after the timeout while a slow query goes on alone', async () => {
    const h = harness();
    const first = h.scrape();
    await jest.advanceTimersByTimeAsync(1000);
    await first; // answered with the last values
    for (let i = 0; i < 20; i++) {
      const s = h.scrape();
      await jest.advanceTimersByTimeAsync(1000);
      await s;
    }
    expect(h.dataSource.query).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledTimes(1);
    h.pending[0].resolve([{ n: 1, oldest: 5 }]);
    await h.scrape();
    expect(h.waiting).toEqual([[1, 5]]);
  });

  it('warns once per failure streak, and again only after a read succeeded', async () => {
    const h = harness();
    for (let i = 0; i < 5; i++) {
      const s = h.scrape();
      h.pending[i].reject(new Error('connection refused'));
      await s;
      jest.advanceTimersByTime(PENDING_APPROVALS_REUSE_MS);
    }
    expect(h.dataSource.query).toHaveBeenCalledTimes(5);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toMatch(/connection refused/);

    const ok = h.scrape();
    h.pending[5].resolve([{ n: 0, oldest: 0 }]);
    await ok;
    jest.advanceTimersByTime(PENDING_APPROVALS_REUSE_MS);
    const failing = h.scrape();
    h.pending[6].reject(new Error('connection refused'));
    await failing;
    expect(warn).toHaveBeenCalledTimes(2);
  });
});
