import { DataSource } from 'typeorm';
import { SkillsRepository } from '../src/skills/skills.repository';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 16, T-F3: a page of `GET /agents/{id}/versions` read every skill its versions name
 * (up to the organization's 1,000, with names of 200 and descriptions of 2,000 characters: 8.8 MB),
 * on every read, though a version's skills are kept once it was built, and read them in the skills
 * tools' queue that every organization shares (two statements at a time): a page of five versions
 * binding 1,000 skills took 122 ms against 7 ms, and one viewer key reading such pages eight at a
 * time made another organization's skill lookups (every `list_skills` and `load_skill`) go from
 * p50 1 ms to 302 ms. A page now reads only the skills of versions not kept yet, by a statement of
 * its own.
 */
describe('skills read for a page of versions (e2e, attack round 16 T-F3)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  it("reads a page's skills once, outside the skills tools' queue, and answers the same after", async () => {
    const skills: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await t.http
        .post('/api/v1/skills')
        .set(...bearer(org.keys.builder))
        .send({ name: `skill ${i}`, description: `when ${i}`, instructions: 'do it' })
        .expect(201);
      skills.push(res.body.id);
    }
    const agent = (
      await t.http
        .post('/api/v1/agents')
        .set(...bearer(org.keys.builder))
        .send({ slug: 'skilled', name: 'Skilled' })
        .expect(201)
    ).body.id;
    for (let v = 0; v < 3; v++) {
      await t.http
        .put(`/api/v1/agents/${agent}/draft`)
        .set(...bearer(org.keys.builder))
        .send({ instructions: `v${v}`, capabilities: [{ id: 'skills' }], resources: { skills: skills.slice(v * 2, v * 2 + 2) } })
        .expect(200);
      await t.http
        .post(`/api/v1/agents/${agent}/publish`)
        .set(...bearer(org.keys.builder))
        .expect(201);
    }
    const queue = jest.spyOn(t.app.get(SkillsRepository), 'resolve');
    const query = jest.spyOn(ds, 'query');
    try {
      const page = () =>
        t.http
          .get(`/api/v1/agents/${agent}/versions`)
          .set(...bearer(org.keys.viewer))
          .expect(200);
      const skillReads = () => query.mock.calls.filter(([sql]) => /\bFROM skill\b|JOIN skill\b/.test(String(sql))).length;
      const first = await page();
      expect(first.body.items.map((v: { spec: { resources: { skills: string[] } } }) => v.spec.resources.skills)).toEqual([
        skills.slice(4, 6),
        skills.slice(2, 4),
        skills.slice(0, 2),
      ]);
      // At most one statement for the page, its own.
      const read = skillReads();
      expect(read).toBeLessThanOrEqual(1);
      const second = await page();
      expect(second.body).toEqual(first.body);
      // Kept since the versions were built: not read again, and never in the tools' queue.
      expect(skillReads()).toBe(read);
      expect(queue).not.toHaveBeenCalled();
    } finally {
      query.mockRestore();
      queue.mockRestore();
    }
  });
});
