import { DataSource } from 'typeorm';
import { DEFAULT_STORAGE_LIMITS } from '../src/config/database-config';
import { createAgent, memoryTools, toolError } from './support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const MAX = 20_000;

/**
 * Attack round 16, T-F1: nothing bounded what an organization's agent memories weigh. An agent keeps
 * up to its `maxMemories` (a builder sets up to 100,000), an organization as many agents as their
 * bytes allow, and a memory of 2,000 characters of distinct words took 16 KB of the volume (row,
 * search vector, GIN entries; 60,000 of them 985 MB). MEMORY_MAX_BYTES_PER_ORG now bounds them,
 * weighed by the database (migration 1764820000000) as they come and go; past it `remember` fails
 * `memory_storage_full` and keeps nothing.
 */
describe('agent memories against MEMORY_MAX_BYTES_PER_ORG (e2e, attack round 16 T-F1)', () => {
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ config: { storage: { ...DEFAULT_STORAGE_LIMITS, memoryBytesPerOrg: MAX } } });
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const newOrg = () => createOrg(t, ['memory:read', 'memory:write']);
  const stored = async (org: TestOrg) => Number((await ds.query(`SELECT coalesce(sum(bytes), 0) AS b FROM memory_usage WHERE org_id = $1`, [org.id]))[0].b);
  const weighed = async (org: TestOrg) =>
    Number((await ds.query(`SELECT coalesce(sum(agent_memory_weight(content, tags, search)), 0) AS b FROM agent_memory WHERE org_id = $1`, [org.id]))[0].b);
  /** undefined when the tool succeeded, its error when it failed. */
  const attempt = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      () => toolError(call),
    );
  const kept = async (org: TestOrg) => Number((await ds.query(`SELECT count(*) AS n FROM agent_memory WHERE org_id = $1`, [org.id]))[0].n);

  it("refuses a memory past the organization's bound, whichever agent keeps it, keeps nothing, and takes one again once another is forgotten", async () => {
    const org = await newOrg();
    const a = await memoryTools(t, org, await createAgent(t, org), { write: { maxMemories: 100_000 } });
    const b = await memoryTools(t, org, await createAgent(t, org), { write: { maxMemories: 100_000 } });
    // 60 distinct words: their search index weighs far more than their text.
    const words = (i: number) => Array.from({ length: 60 }, (_, j) => `w${i}x${j}`).join(' ');
    const first = await a.remember(words(0));
    expect(await weighed(org)).toBeGreaterThanOrEqual(512 + words(0).length + 64 * 60);
    let refused: { code: string; message: string } | undefined;
    for (let i = 1; i < 10 && !refused; i++) refused = await attempt((i % 2 === 0 ? a : b).remember(words(i)));
    expect(refused).toEqual({ code: 'memory_storage_full', message: expect.stringContaining('(MEMORY_MAX_BYTES_PER_ORG)') });
    const before = await kept(org);
    expect(await stored(org)).toBe(await weighed(org));
    expect(await stored(org)).toBeLessThanOrEqual(MAX);
    // Refused for either agent; a short fact too, once it does not fit either.
    expect((await toolError(a.remember(words(99)))).code).toBe('memory_storage_full');
    expect((await toolError(b.remember(words(98)))).code).toBe('memory_storage_full');
    expect(await kept(org)).toBe(before);
    // The same text again is the memory kept, not a new one: never refused.
    expect((await a.remember(words(0))).alreadyRemembered).toBe(true);

    await a.forget(first.memoryId);
    expect(await stored(org)).toBe(await weighed(org));
    expect((await b.remember(words(97))).alreadyRemembered).toBe(false);

    // The organization's admin reads what it holds of the bound.
    const usage = await t.http
      .get(`/api/v1/orgs/${org.id}/usage`)
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(usage.body.items.find((m: { meter: string }) => m.meter === 'memories')).toEqual({
      meter: 'memories',
      unit: 'bytes',
      used: await stored(org),
      limit: MAX,
      setting: 'MEMORY_MAX_BYTES_PER_ORG',
    });

    // Another organization's bound is its own.
    const other = await newOrg();
    const c = await memoryTools(t, other, await createAgent(t, other));
    expect((await c.remember(words(0))).alreadyRemembered).toBe(false);
  });

  it('lets agents remembering at once pass the bound no more than one at a time would', async () => {
    const org = await newOrg();
    const agents = await Promise.all(
      Array.from({ length: 6 }, async () => memoryTools(t, org, await createAgent(t, org), { write: { maxMemories: 100_000 } })),
    );
    const words = (i: number) => Array.from({ length: 60 }, (_, j) => `c${i}y${j}`).join(' ');
    const outcomes = await Promise.allSettled(Array.from({ length: 24 }, (_, i) => agents[i % agents.length].remember(words(i))));
    const ok = outcomes.filter((o) => o.status === 'fulfilled').length;
    expect(ok).toBeGreaterThan(0);
    expect(ok).toBeLessThan(24);
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason.code).toBe('memory_storage_full');
    expect(await kept(org)).toBe(ok);
    expect(await stored(org)).toBe(await weighed(org));
    expect(await stored(org)).toBeLessThanOrEqual(MAX);
  });

  it("gives an agent's memories back when the agent goes, whoever deletes its rows", async () => {
    const org = await newOrg();
    const agent = await createAgent(t, org);
    const a = await memoryTools(t, org, agent);
    await a.remember('Prefers answers in French');
    await a.remember('Invoices go to billing');
    expect(await stored(org)).toBe(await weighed(org));
    expect(await stored(org)).toBeGreaterThan(0);
    await ds.query(`DELETE FROM agent_memory WHERE org_id = $1 AND agent_id = $2`, [org.id, agent.id]);
    expect(await stored(org)).toBe(0);
  });
});
