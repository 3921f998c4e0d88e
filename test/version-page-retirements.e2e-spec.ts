import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * `GET /agents/{id}/versions` says of each version of its page when it was retired, and read every
 * retirement of the agent to do so, whatever the page: an agent with 100,000 versions retired (a
 * builder key publishes and retires about 400 a minute) made a page of one version read all of
 * them, 0.7 s of the node's event loop, and another organization's `GET /agents` went from p50
 * 11 ms to 1.1 s while a viewer key read such pages four at a time (attack round 15, Q-F1). A page
 * now reads the retirements of its own versions only.
 */
describe('a page of versions reads the retirements of its versions only (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t, ['memory:read']);
  }, 240_000);
  afterAll(async () => {
    await t.close();
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);

  it('reads no more retirements than the page has versions, and still shows each one retired', async () => {
    const agent = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: 'retired-many', name: 'Retired many' })
        .expect(201)
    ).body.id as string;
    const versions = 12;
    for (let v = 1; v <= versions; v++) {
      await t.http
        .put(`/api/v1/agents/${agent}/draft`)
        .set(...as('builder'))
        .send({ instructions: `Version ${v}.`, capabilities: [{ id: 'memory' }] })
        .expect(200);
      await t.http
        .post(`/api/v1/agents/${agent}/publish`)
        .set(...as('builder'))
        .expect(201);
    }
    // Every version but the two newest retired.
    for (let v = 1; v <= versions - 2; v++) {
      await t.http
        .post(`/api/v1/agents/${agent}/versions/${v}/retire`)
        .set(...as('builder'))
        .expect(200);
    }

    /** The page, and how many rows its statements read of the retirements. */
    const page = async (query: string) => {
      const original = DataSource.prototype.query;
      let retirementRows = 0;
      const spy = jest.spyOn(DataSource.prototype, 'query').mockImplementation(async function (this: DataSource, ...args: Parameters<DataSource['query']>) {
        const rows: unknown = await original.apply(this, args);
        if (typeof args[0] === 'string' && /FROM agent_version_retirement WHERE/.test(args[0]) && Array.isArray(rows)) retirementRows += rows.length;
        return rows;
      });
      try {
        const res = await t.http
          .get(`/api/v1/agents/${agent}/versions?${query}`)
          .set(...as('viewer'))
          .expect(200);
        return { items: res.body.items as { version: number; retiredAt: string | null }[], nextCursor: res.body.nextCursor as string | null, retirementRows };
      } finally {
        spy.mockRestore();
      }
    };

    // The two newest, neither retired: none of the ten retirements read (all ten were).
    const first = await page('limit=2');
    expect(first.items.map((v) => [v.version, v.retiredAt])).toEqual([
      [12, null],
      [11, null],
    ]);
    expect(first.retirementRows).toBe(0);

    // The next page: its three versions retired, each said so, three rows read.
    const next = await page(`limit=3&cursor=${encodeURIComponent(first.nextCursor!)}`);
    expect(next.items.map((v) => v.version)).toEqual([10, 9, 8]);
    for (const v of next.items) expect(v.retiredAt).toEqual(expect.any(String));
    expect(next.retirementRows).toBe(3);

    // The whole list agrees with each version read alone.
    const all = await page('limit=50');
    for (const v of all.items) {
      const alone = await t.http
        .get(`/api/v1/agents/${agent}/versions/${v.version}`)
        .set(...as('viewer'))
        .expect(200);
      expect(v.retiredAt).toBe(alone.body.retiredAt);
    }
    expect(all.items.filter((v) => v.retiredAt !== null)).toHaveLength(versions - 2);
  });
});
