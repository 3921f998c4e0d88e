import { CapabilityRegistry } from '../../capability-registry.service';
import { COMPACTION_STRATEGIES, DEFAULT_SUMMARY_PROMPT } from './compaction.config';
import { buildWith, configErrors, contextFor, createAgent, TestAgent } from '../../../../test/support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../../../../test/support/test-app';

/** A tool-less builtin: what it contributes is settings, limits or prompt text. */
describe('builtin capability: compaction (e2e)', () => {
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
    expect(catalog['compaction']).toMatchObject({ tools: [], scopes: [], available: true, risk: 'read_only', sideEffecting: false });
  });

  it('offers three strategies labelled for the form, and a multi-line summary prompt', () => {
    const properties = catalog.compaction.configSchema.properties;
    expect(properties.strategy).toMatchObject({
      enum: ['clear_tool_results', 'summarize', 'truncate_oldest'],
      default: 'clear_tool_results',
      'x-enum-labels': { clear_tool_results: expect.any(String), summarize: expect.any(String), truncate_oldest: expect.any(String) },
    });
    expect(COMPACTION_STRATEGIES).toEqual(properties.strategy.enum);
    expect(properties.keepLastTurns).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 10 });
    expect(properties.summaryPrompt).toMatchObject({
      type: 'string',
      'x-multiline': true,
      default: DEFAULT_SUMMARY_PROMPT,
      maxLength: 10000,
      title: 'Summary prompt',
    });
    expect(properties.strategy.title).toBe('Strategy');
    expect(registry.validateConfig('compaction', {})).toEqual({
      value: { strategy: 'clear_tool_results', keepLastTurns: 10, summaryPrompt: DEFAULT_SUMMARY_PROMPT },
      errors: [],
    });
    expect(configErrors(registry, 'compaction', { strategy: 'forget_everything', keepLastTurns: 0, summaryPrompt: '' })).toEqual([
      'keepLastTurns',
      'strategy',
      'summaryPrompt',
    ]);
    expect(configErrors(registry, 'compaction', { keepLastTurns: 101, summaryPrompt: 'x'.repeat(10001) })).toEqual(['keepLastTurns', 'summaryPrompt']);
  });

  it('contributes settings.compaction, with the summary prompt only for summarize, and tells the model what happens to old turns', async () => {
    expect(await build('compaction')).toEqual({
      capabilityId: 'compaction',
      tools: [],
      settings: { strategy: 'clear_tool_results', keepLastTurns: 10 },
      prompt: expect.stringContaining('the results of tool calls older than the last 10 turns are removed'),
    });
    expect(await build('compaction', { strategy: 'summarize', keepLastTurns: 4, summaryPrompt: 'Keep the order numbers.' })).toEqual({
      capabilityId: 'compaction',
      tools: [],
      settings: { strategy: 'summarize', keepLastTurns: 4, summaryPrompt: 'Keep the order numbers.' },
      prompt: expect.stringContaining('turns older than the last 4 are replaced by a summary'),
    });
    expect((await build('compaction', { strategy: 'truncate_oldest', keepLastTurns: 6 }))!).toMatchObject({
      settings: { strategy: 'truncate_oldest', keepLastTurns: 6 },
      prompt: expect.stringContaining('only the last 6 turns are kept'),
    });
  });
});
