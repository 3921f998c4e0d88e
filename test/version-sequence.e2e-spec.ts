import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Whatever the application does, the database keeps each agent's versions gapless and never lets
 * a version repeat the one before it; rolling back to older content is a new version.
 */
describe('version sequence, guarded by the database', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let agentId: string;
  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
    org = await createOrg(t);
    const as = bearer(org.keys.builder);
    agentId = (
      await t.http
        .post('/api/v1/agents')
        .set(...as)
        .send({ slug: 'seq', name: 'Seq' })
        .expect(201)
    ).body.id;
    for (const instructions of ['one', 'two', 'one']) {
      await t.http
        .put(`/api/v1/agents/${agentId}/draft`)
        .set(...as)
        .send({ instructions, capabilities: [] })
        .expect(200);
      await t.http
        .post(`/api/v1/agents/${agentId}/publish`)
        .set(...as)
        .expect(201);
    }
  });
  afterAll(() => t.close());

  const copyOf = (version: number, asVersion: number) =>
    ds.query(
      `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, content_hash, published_by)
       SELECT org_id, agent_id, $3, spec, spec_hash, tool_digests, content_hash, published_by FROM agent_version WHERE agent_id = $1 AND version = $2`,
      [agentId, version, asVersion],
    );

  it('took a rollback to older content as a new version', async () => {
    const versions = (
      await t.http
        .get(`/api/v1/agents/${agentId}/versions`)
        .set(...bearer(org.keys.viewer))
        .expect(200)
    ).body.items;
    expect(versions.map((v: { version: number; spec: { instructions: string } }) => [v.version, v.spec.instructions])).toEqual([
      [3, 'one'],
      [2, 'two'],
      [1, 'one'],
    ]);
  });

  it('refuses a version that repeats the one before it', async () => {
    await expect(copyOf(3, 4)).rejects.toThrow(/repeats version 3/);
  });

  it('refuses a gap in the sequence', async () => {
    await expect(copyOf(2, 6)).rejects.toThrow(/no version 5 before version 6/);
  });

  it('accepts the next version when it differs from the one before', async () => {
    await copyOf(2, 4);
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM agent_version WHERE agent_id = $1`, [agentId]);
    expect(n).toBe(4);
  });
});
