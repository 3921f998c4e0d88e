import { CapabilityRegistry } from '../../capability-registry.service';
import { buildWith, configErrors, contextFor, createAgent, TestAgent } from '../../../../test/support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../../../../test/support/test-app';

/** A tool-less builtin: what it contributes is settings, limits or prompt text. */
describe('builtin capability: budget (e2e)', () => {
  let t: TestApp;
  let registry: CapabilityRegistry;
  let org: TestOrg;
  let agent: TestAgent;
  let catalog: Record<string, any>;

  beforeAll(async () => {
    t = await createTestApp();
    registry = t.app.get(CapabilityRegistry);
    org = await createOrg(t);
    agent = await createAgent(t, org);
    const res = await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(org.keys.viewer))
      .expect(200);
    catalog = Object.fromEntries(res.body.items.map((i: { id: string }) => [i.id, i]));
  });
  afterAll(() => t.close());

  const build = (id: string, config: object = {}) => buildWith(registry, id, contextFor(org, agent, config));

  it('has no tools and needs no scope', () => {
    expect(catalog['budget']).toMatchObject({ tools: [], scopes: [], available: true, risk: 'read_only', sideEffecting: false });
  });

  it('caps tool calls per run at 50 by default, from 1 to 1000', () => {
    expect(catalog.budget.configSchema.properties.maxToolCallsPerRun).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 50 });
    expect(registry.validateConfig('budget', {})).toEqual({ value: { maxToolCallsPerRun: 50 }, errors: [] });
    for (const maxToolCallsPerRun of [0, 1001, 10.5, '50']) expect(configErrors(registry, 'budget', { maxToolCallsPerRun })).toEqual(['maxToolCallsPerRun']);
  });

  it('contributes the limit the executor enforces, and tells the model about it', async () => {
    expect(await build('budget')).toEqual({
      capabilityId: 'budget',
      tools: [],
      limits: { maxToolCallsPerRun: 50 },
      prompt: expect.stringMatching(/^You may make at most 50 tool calls in one run; calls past that are refused\./),
    });
    expect((await build('budget', { maxToolCallsPerRun: 1 }))!.prompt).toMatch(/^You may make at most 1 tool call in one run/);
  });
});
