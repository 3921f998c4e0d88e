import { BenchSession } from '../bench/lib/session';
import { runThroughput } from '../bench/lib/throughput';
import { governedFloor } from '../bench/scenarios/governed-floor';

/**
 * A smoke run of the benchmark harness, not a benchmark: one short scenario end to end (a server
 * process on a database of the run's own, autocannon, the row), then nothing left behind. It
 * asserts that requests were answered correctly, never how fast.
 */
describe('bench harness (smoke)', () => {
  it('runs the governed floor briefly, without errors, and stops its server', async () => {
    const session = new BenchSession({
      duration: 1,
      rounds: 1,
      warmup: 0.5,
      connections: 4,
      serverLogLevel: 'warn',
      save: false,
      databaseUrl: process.env.DATABASE_URL || undefined,
    });
    let pid: number | undefined;
    try {
      pid = (await session.floor()).server.pid;
      const result = await runThroughput(session, [governedFloor]);
      expect(result.skipped).toEqual([]);
      expect(result.rows).toHaveLength(1);
      const row = result.rows[0].measurement;
      expect(row.requests).toBeGreaterThan(0);
      expect(row.errors).toBe(0);
      expect(Object.keys(row.statusCodes)).toEqual(['200']);
    } finally {
      await session.close();
    }
    expect(() => process.kill(pid!, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });
});
