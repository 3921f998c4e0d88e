import { DataSource } from 'typeorm';
import { SkillsRepository } from '../src/skills/skills.repository';
import { bearer, createOrg, createTestApp, TestApp } from './support/test-app';

/**
 * Attack round 16, T-F5: every `list_skills` and `load_skill` (and every first build of a version)
 * read the names and descriptions of every skill the agent binds, in the one queue every
 * organization's skill lookups share (two statements at a time, 32 asks a statement): 200 skills of
 * 2,000-character descriptions are 1.76 MB an ask, and one organization asking 100 times a second
 * moved another's lookups from p50 0.8 ms to 10 ms (max 146 ms). A skill never changes once made,
 * so a node reads its name and description once; whether it still exists, every time.
 */
describe('skills resolved for their tools (e2e, attack round 16 T-F5)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it("reads a skill's name and description once, whether it exists every time, for the batched and the page's lookups", async () => {
    const org = await createOrg(t);
    const other = await createOrg(t);
    const add = async (name: string) =>
      (
        await t.http
          .post('/api/v1/skills')
          .set(...bearer(org.keys.builder))
          .send({ name, description: `when ${name}`, instructions: 'do it' })
          .expect(201)
      ).body.id as string;
    const a = await add('refunds');
    const b = await add('shipping');
    const skills = t.app.get(SkillsRepository);
    const query = jest.spyOn(t.app.get(DataSource), 'query');
    const lastKnown = () => {
      const calls = query.mock.calls.filter(([sql]) => /ELSE description END AS description/.test(String(sql)));
      const params = calls[calls.length - 1][1] as unknown[];
      return params[params.length - 1];
    };
    const both = [
      { id: b, name: 'shipping', description: 'when shipping' },
      { id: a, name: 'refunds', description: 'when refunds' },
    ];
    try {
      expect(await skills.resolve(org.id, [b, a])).toEqual(both);
      expect(lastKnown()).toEqual([]);
      expect(await skills.resolve(org.id, [b, a])).toEqual(both);
      expect(lastKnown()).toEqual([b, a]);
      expect(await skills.resolveNow(org.id, [b, a])).toEqual(both);
      expect(lastKnown()).toEqual([b, a]);
      expect(await skills.resolve(other.id, [a, b])).toEqual([]);
      expect(await skills.resolveNow(other.id, [a, b])).toEqual([]);
    } finally {
      query.mockRestore();
    }
    await t.http
      .delete(`/api/v1/skills/${b}`)
      .set(...bearer(org.keys.builder))
      .expect(204);
    expect(await skills.resolve(org.id, [b, a])).toEqual([both[1]]);
  });
});
