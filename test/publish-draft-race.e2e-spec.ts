import { SpecValidator } from '../src/agents/spec-validator.service';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * A publish reads and checks the draft before it locks the agent and writes the version (attack
 * round 11, G-F1). A draft saved in between must be what is published: two publishes around an
 * edit committed in lock order, and the one that had read the older draft became the latest.
 * The validator stands in for the time a publish takes to check a draft (MCP lists, resources).
 */
describe('publishing the draft as it stands when the version is written', () => {
  let t: TestApp;
  let org: TestOrg;
  let validator: SpecValidator;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    validator = t.app.get(SpecValidator);
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const draft = (instructions: string) => ({ instructions, capabilities: [] });
  const saveDraft = (agentId: string, instructions: string) =>
    t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send(draft(instructions))
      .expect(200);
  const publish = (agentId: string) => t.http.post(`/api/v1/agents/${agentId}/publish`).set(...bearer(org.keys.builder));
  const versions = async (agentId: string) =>
    (
      await t.http
        .get(`/api/v1/agents/${agentId}/versions`)
        .set(...bearer(org.keys.viewer))
        .expect(200)
    ).body.items.map((v: { version: number; spec: { instructions: string } }) => [v.version, v.spec.instructions]);

  /** The next check of a draft runs `meanwhile` once it has read its draft, before the publish goes on. */
  function duringNextCheck(meanwhile: () => Promise<unknown>): void {
    const check = validator.validate.bind(validator);
    jest.spyOn(validator, 'validate').mockImplementationOnce(async (...args) => {
      const checked = await check(...args);
      await meanwhile();
      return checked;
    });
  }

  it('publishes a draft saved while it was checked, not the one it read', async () => {
    const agentId = await publishAgent(t, org, 'saved-meanwhile', draft('one'));
    await saveDraft(agentId, 'two');
    duringNextCheck(() => saveDraft(agentId, 'three'));
    const answer = await publish(agentId).expect(201);
    expect(answer.body.spec.instructions).toBe('three');
    expect(await versions(agentId)).toEqual([
      [2, 'three'],
      [1, 'one'],
    ]);
  });

  it('never makes an older draft the latest: a publish that read it after another published the newer one', async () => {
    const agentId = await publishAgent(t, org, 'two-publishes', draft('loose'));
    await saveDraft(agentId, 'loose, edited');
    // The first publish has read "loose, edited"; meanwhile a person saves "strict" and publishes it.
    duringNextCheck(async () => {
      await saveDraft(agentId, 'strict');
      await publish(agentId).expect(201);
    });
    const first = await publish(agentId).expect(200);
    expect(first.body).toMatchObject({ version: 2, spec: { instructions: 'strict' } });
    expect(await versions(agentId)).toEqual([
      [2, 'strict'],
      [1, 'loose'],
    ]);
    const latest = await t.http
      .get(`/api/v1/agents/${agentId}/versions/latest`)
      .set(...bearer(org.keys.agent))
      .expect(200);
    expect(latest.body.spec.instructions).toBe('strict');
  });

  it('gives up with 409, publishing nothing, when the draft is saved again at every round', async () => {
    const agentId = await publishAgent(t, org, 'always-saved', draft('v1'));
    let n = 0;
    const check = validator.validate.bind(validator);
    jest.spyOn(validator, 'validate').mockImplementation(async (...args) => {
      const checked = await check(...args);
      await saveDraft(agentId, `edit ${++n}`);
      return checked;
    });
    const answer = await publish(agentId).expect(409);
    expect(answer.body.code).toBe('conflict');
    expect(n).toBe(3);
    expect(await versions(agentId)).toEqual([[1, 'v1']]);
  });
});
