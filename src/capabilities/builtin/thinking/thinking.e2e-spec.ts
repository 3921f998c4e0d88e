import { CapabilityRegistry } from '../../capability-registry.service';
import { THINKING_EFFORTS } from './thinking.config';
import { buildWith, configErrors, contextFor, createAgent, TestAgent } from '../../../../test/support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../../../../test/support/test-app';

/** A tool-less builtin: what it contributes is settings, limits or prompt text. */
describe('builtin capability: thinking (e2e)', () => {
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
    expect(catalog['thinking']).toMatchObject({ tools: [], scopes: [], available: true, risk: 'read_only', sideEffecting: false });
  });

  it('offers low, medium and high, each labelled for the form, medium by default', () => {
    expect(catalog.thinking.configSchema.properties.effort).toEqual({
      type: 'string',
      enum: ['low', 'medium', 'high'],
      default: 'medium',
      title: 'Reasoning effort',
      description: expect.any(String),
      'x-enum-labels': { low: expect.stringContaining('quickly'), medium: expect.any(String), high: expect.stringContaining('at length') },
    });
    expect(THINKING_EFFORTS).toEqual(['low', 'medium', 'high']);
    expect(registry.validateConfig('thinking', {})).toEqual({ value: { effort: 'medium' }, errors: [] });
    for (const effort of ['extreme', '', 2, null]) expect(configErrors(registry, 'thinking', { effort })).toEqual(['effort']);
  });

  it('contributes settings.thinking = { effort } and no prompt text', async () => {
    expect(await build('thinking', { effort: 'high' })).toEqual({ capabilityId: 'thinking', tools: [], settings: { effort: 'high' } });
    expect(catalog.thinking.promptGuidance).toBe('');
  });
});
