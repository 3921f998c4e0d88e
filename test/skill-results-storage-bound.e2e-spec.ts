import { randomBytes } from 'node:crypto';
import { DEFAULT_STORAGE_LIMITS } from '../src/config/database-config';
import { addDocument, createCollection, createSkill } from './support/builtins';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

const BOUND = 1_000_000;

/**
 * Attack round 21, AC-F3: `load_skill` has no output budget (a skill's instructions are not cut),
 * so its result, up to 400 KB, was kept whole in its call whatever RUNS_MAX_BYTES_PER_ORG said,
 * and calls are never removed: against a bound of 1 MB, 20 calls of one agent key for a skill of
 * 100 KB stored 2 MB, every one `200`; at the default 10 GiB an agent key at its rate limit stored
 * about 480 MB a minute past it, for good. Past the bound such a result is now refused
 * (`storage_full`), as heavy arguments are (row 111's class); light results still answer.
 */
describe("load_skill's whole results and read-only results against RUNS_MAX_BYTES_PER_ORG (e2e, attack round 21 AC-F3, AC-N3)", () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ config: { storage: { ...DEFAULT_STORAGE_LIMITS, runBytesPerOrg: BOUND } } });
  });
  afterAll(() => t.close());

  const skilled = async (org: TestOrg) => {
    // Random bytes as base64: PostgreSQL cannot compress them, so they weigh what they say.
    const skill = await createSkill(t, org, 'big', 'When the task is big.', randomBytes(75_000).toString('base64'));
    return publishAgent(t, org, `skilled-${randomBytes(3).toString('hex')}`, {
      instructions: 'x',
      capabilities: [{ id: 'skills' }],
      resources: { skills: [skill] },
    });
  };
  const call = (org: TestOrg, agentId: string, tool: string, args: object) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool, arguments: args })
      .then((res) => (res.status === 200 ? res : Promise.reject(new Error(`${tool}: ${res.status} ${res.text}`))));
  const used = async (org: TestOrg) =>
    (
      await t.http
        .get(`/api/v1/orgs/${org.id}/usage`)
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items.find((i: { meter: string }) => i.meter === 'runs').used as number;

  it('refuses a whole result once the bound is stored, keeps the total near it, and still answers light results', async () => {
    const org = await createOrg(t, ['knowledge:read']);
    const agentId = await skilled(org);
    const statuses: string[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await call(org, agentId, 'load_skill', { name: 'big' })).body.status);
    const taken = statuses.filter((s) => s === 'succeeded').length;
    // About ten fit under 1 MB (each 100 KB); the rest are refused.
    expect(taken).toBeGreaterThanOrEqual(5);
    expect(taken).toBeLessThan(15);
    expect(statuses.slice(taken).every((s) => s === 'failed')).toBe(true);
    const refused = await call(org, agentId, 'load_skill', { name: 'big' });
    expect(refused.body.error).toEqual({ code: 'storage_full', message: expect.stringContaining('RUNS_MAX_BYTES_PER_ORG') });
    // One result past the bound at most (the last taken), never twenty.
    expect(await used(org)).toBeLessThan(BOUND + 150_000);
    // A light result still answers past the bound.
    expect((await call(org, agentId, 'list_skills', {})).body).toMatchObject({ status: 'succeeded', result: { skills: [{ name: 'big' }] } });

    // A read-only tool's page, cut to its budget, is refused as well (AC-N3: was kept, about 16 KB a call);
    // a short one still answers.
    const collection = await createCollection(t, org, 'handbook');
    const documentId = await addDocument(t, org, collection, 'long', randomBytes(60_000).toString('base64'));
    const reader = await publishAgent(t, org, `reader-${randomBytes(3).toString('hex')}`, {
      instructions: 'x',
      capabilities: [{ id: 'knowledge' }],
      resources: { knowledgeCollections: [collection] },
    });
    const page = await call(org, reader, 'read_document', { documentId });
    expect(page.body.error).toEqual({ code: 'storage_full', message: expect.stringContaining('read-only') });
    expect((await call(org, reader, 'read_document', { documentId, maxChars: 500 })).body.status).toBe('succeeded');
    expect(await used(org)).toBeLessThan(BOUND + 150_000);

    // Another organization's bound is its own.
    const other = await createOrg(t, ['knowledge:read']);
    const theirs = await skilled(other);
    expect((await call(other, theirs, 'load_skill', { name: 'big' })).body.status).toBe('succeeded');
    const theirCollection = await createCollection(t, other, 'handbook');
    const theirDocument = await addDocument(t, other, theirCollection, 'long', randomBytes(60_000).toString('base64'));
    const theirReader = await publishAgent(t, other, `reader-${randomBytes(3).toString('hex')}`, {
      instructions: 'x',
      capabilities: [{ id: 'knowledge' }],
      resources: { knowledgeCollections: [theirCollection] },
    });
    expect((await call(other, theirReader, 'read_document', { documentId: theirDocument })).body.status).toBe('succeeded');
  });
});
