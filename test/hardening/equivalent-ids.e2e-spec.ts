import fc from 'fast-check';
import { bearer } from '../support/test-app';
import { hardeningWorld, HardeningWorld } from '../support/hardening';

/**
 * Issue 13, class 6: equivalent ids are duplicates. A UUID listed twice in different letter case
 * passed the duplicate check and was bound twice. Ids are normalized before the check.
 */
const recase = (id: string, upper: boolean[]) => [...id].map((c, i) => (upper[i % upper.length] ? c.toUpperCase() : c.toLowerCase())).join('');
const casing = fc.array(fc.boolean(), { minLength: 1, maxLength: 36 });

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('ids equal but for letter case are duplicates', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 180_000);
  afterAll(() => h.t.close());

  it('a draft listing a resource twice in any two casings is 400 at that list, and the old draft stays', async () => {
    const builder = bearer(h.world.org.keys.builder);
    const before = (
      await h.t.http
        .get(`/api/v1/agents/${h.agentId}`)
        .set(...builder)
        .expect(200)
    ).body.draft;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('knowledgeCollections', 'skills'), casing, casing, async (kind, a, b) => {
        const id = kind === 'skills' ? h.world.ids.skillId : h.world.ids.collectionId;
        const res = await h.t.http
          .put(`/api/v1/agents/${h.agentId}/draft`)
          .set(...builder)
          .send({ instructions: 'x', capabilities: [], resources: { [kind]: [recase(id, a), recase(id, b)] } });
        expect([kind, res.status, res.body.errors?.[0]?.path, res.body.errors?.[0]?.code]).toEqual([kind, 400, `resources.${kind}`, 'arrayUnique']);
      }),
      { numRuns: 30 },
    );
    expect(
      (
        await h.t.http
          .get(`/api/v1/agents/${h.agentId}`)
          .set(...builder)
          .expect(200)
      ).body.draft,
    ).toEqual(before);
  });

  it('an id in another casing is the same resource, stored once in its canonical form', async () => {
    const builder = bearer(h.world.org.keys.builder);
    const res = await h.t.http
      .put(`/api/v1/agents/${h.agentId}/draft`)
      .set(...builder)
      .send({ instructions: 'x', capabilities: [{ id: 'knowledge' }], resources: { knowledgeCollections: [h.world.ids.collectionId.toUpperCase()] } })
      .expect(200);
    expect(res.body.draft.resources.knowledgeCollections).toEqual([h.world.ids.collectionId]);
  });

  it('a draft stored with a duplicate (before this rule) does not publish: 422 duplicate_resource', async () => {
    const id = h.world.ids.collectionId;
    await h.ds.query(`UPDATE agent SET draft = $3::jsonb WHERE org_id = $1 AND id = $2`, [
      h.world.org.id,
      h.agentId,
      JSON.stringify({ instructions: 'x', capabilities: [{ id: 'knowledge' }], resources: { knowledgeCollections: [id, id.toUpperCase()] } }),
    ]);
    const res = await h.t.http
      .post(`/api/v1/agents/${h.agentId}/publish`)
      .set(...bearer(h.world.org.keys.builder))
      .expect(422);
    expect(res.body.errors).toEqual([{ path: 'resources.knowledgeCollections[1]', code: 'duplicate_resource', message: expect.any(String) }]);
  });
});
