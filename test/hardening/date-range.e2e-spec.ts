import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { bearer } from '../support/test-app';
import { hardeningWorld, HardeningWorld, isProblem } from '../support/hardening';
import { normalizeInstant } from '../../src/common/instant';

/**
 * Issue 13, class 4: dates and cursors out of PostgreSQL's range. PostgreSQL has no year 0: a
 * forged cursor or a `since` naming 0000 answered 500 on every list. Now 400, naming the field.
 */
const cursorOf = (key: unknown[]) => Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');

/** Instants a client might forge: year 0000, before and after PostgreSQL's and JavaScript's ranges. */
const outOfRange = fc.oneof(
  fc.constantFrom(
    '0000-01-01',
    '0000-12-31T23:59:59Z',
    '0000-02-29T00:00:00+01:00',
    '10000-01-01',
    '+275760-09-13T00:00:00Z',
    '-000001-01-01T00:00:00Z',
    '99999-12-31',
  ),
  fc
    .tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }), fc.integer({ min: 0, max: 23 }))
    .map(([m, d, hh]) => `0000-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(hh).padStart(2, '0')}:00:00Z`),
);

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('dates and cursors out of range', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 180_000);
  afterAll(() => h.t.close());

  const lists = () => [
    { path: '/api/v1/tool-calls', token: h.world.org.keys.viewer },
    { path: '/api/v1/approvals', token: h.world.org.keys.viewer },
    { path: '/api/v1/knowledge/collections', token: h.world.org.keys.viewer },
    { path: `/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents`, token: h.world.org.keys.viewer },
    { path: '/api/v1/skills', token: h.world.org.keys.viewer },
    { path: '/api/v1/audit-events', token: h.world.org.keys.admin },
    { path: '/api/v1/agents', token: h.world.org.keys.viewer },
    { path: `/api/v1/agents/${h.agentId}/versions`, token: h.world.org.keys.viewer },
    { path: '/api/v1/orgs', token: h.t.adminToken },
  ];

  it('a forged cursor naming a year PostgreSQL cannot read is 400 on every list, never 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...lists()), outOfRange, async (list, instant) => {
        const res = await h.t.http
          .get(list.path)
          .query({ cursor: cursorOf([instant, randomUUID()]) })
          .set(...bearer(list.token));
        expect([list.path, instant, res.status, res.body.code, res.body.errors?.[0]?.path]).toEqual([list.path, instant, 400, 'invalid_request', 'cursor']);
        expect(res.body.errors[0].code).toBe('invalid_cursor');
        expect(isProblem(res)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it("a `since` out of range is 400 naming `since`; the range's own ends are read", async () => {
    await fc.assert(
      fc.asyncProperty(outOfRange, async (since) => {
        const res = await h.t.http
          .get('/api/v1/audit-events')
          .query({ since })
          .set(...bearer(h.world.org.keys.admin));
        expect([since, res.status, res.body.errors?.[0]?.path]).toEqual([since, 400, 'since']);
      }),
      { numRuns: 20 },
    );
    for (const since of ['0001-01-01', '0001-01-01T00:00:00+14:00', '9999-12-31T23:59:59Z', '9999-12-31T23:59:59-12:00']) {
      const res = await h.t.http
        .get('/api/v1/audit-events')
        .query({ since })
        .set(...bearer(h.world.org.keys.admin));
      expect([since, res.status]).toEqual([since, 200]);
    }
  });

  it('normalizeInstant reads exactly the years 0001 to 9999', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9999 }), (year) => {
        const text = `${String(year).padStart(4, '0')}-06-15`;
        expect(normalizeInstant(text) !== undefined).toBe(year >= 1);
      }),
    );
  });
});
