import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../test/support/test-database';
import { dataSourceOptions } from '../database/data-source-options';
import { jsonbSizeOver } from './jsonb-size';

/** The estimate against the database itself: never below what `pg_column_size` says, and not far above it. */
describe('jsonbSizeOver', () => {
  let db: TestDatabase;
  let ds: DataSource;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    ds = new DataSource({ ...dataSourceOptions(db.url, 1), entities: [] });
    await ds.initialize();
  }, 60_000);
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
  });

  /** The least limit the estimate is not over: the estimate itself. */
  const estimate = (v: unknown) => {
    let lo = 0;
    let hi = 1 << 26;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (jsonbSizeOver(v, mid)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  // Uncompressed: what the row would weigh if the value stayed inline.
  const stored = async (values: unknown[]) =>
    ((await ds.query(`SELECT pg_column_size(v::jsonb) AS n FROM unnest($1::text[]) AS v`, [values.map((v) => JSON.stringify(v))])) as { n: number }[]).map(
      (r) => Number(r.n),
    );

  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
  function value(depth: number): unknown {
    const kind = depth > 3 ? pick(['n', 's', 'b']) : pick(['n', 's', 'b', 'a', 'o', 'a', 'o']);
    if (kind === 'n')
      return pick([0, 1, -1, 42, 3.5, 1e300, -1.5e-300, 123456789012, Number.MAX_SAFE_INTEGER, 0.1 + 0.2, Math.floor(random() * 1e6), random()]);
    if (kind === 's') return pick(['', 'a', 'é', '𝔘', 'hello world', '\u0000'.replace('\u0000', ' '), 'x'.repeat(Math.floor(random() * 40))]);
    if (kind === 'b') return pick([true, false, null]);
    const n = Math.floor(random() * 12);
    if (kind === 'a') return Array.from({ length: n }, () => value(depth + 1));
    return Object.fromEntries(Array.from({ length: n }, (_, i) => [pick(['k', 'é', '', '__proto__x', `key${i}`]) + i, value(depth + 1)]));
  }

  it('is never below the stored size, and within twice it and 16 bytes, for random values', async () => {
    const values = [
      {},
      [],
      { ids: Array.from({ length: 1019 }, () => 0) },
      { a: [[], [], {}], b: [true, null, 'x'] },
      ...Array.from({ length: 400 }, () => ({ args: value(0) })),
    ];
    const sizes = await stored(values);
    values.forEach((v, i) => {
      const e = estimate(v);
      expect([i, e >= sizes[i]]).toEqual([i, true]);
      expect([i, e <= 2 * sizes[i] + 16]).toEqual([i, true]);
    });
  });

  it('says 1,019 zeros are past 2 KB, where their 2,047 characters of text are not', () => {
    const zeros = { ids: Array.from({ length: 1019 }, () => 0) };
    expect(JSON.stringify(zeros).length).toBeLessThan(2048);
    expect(jsonbSizeOver(zeros, 2048)).toBe(true);
    expect(jsonbSizeOver({ query: 'order 42' }, 2048)).toBe(false);
  });
});
