import { configErrors, toollessBuiltin } from '../../../../test/support/builtins';

/** A tool-less builtin: what it contributes is settings, limits or prompt text. */
describe('builtin capability: budget (e2e)', () => {
  const h = toollessBuiltin('budget');

  it('caps tool calls per run at 50 by default, from 1 to 1000', () => {
    expect(h.catalog.budget.configSchema.properties.maxToolCallsPerRun).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 50 });
    expect(h.registry.validateConfig('budget', {})).toEqual({ value: { maxToolCallsPerRun: 50 }, errors: [] });
    for (const maxToolCallsPerRun of [0, 1001, 10.5, '50']) expect(configErrors(h.registry, 'budget', { maxToolCallsPerRun })).toEqual(['maxToolCallsPerRun']);
  });

  it('contributes the limit the executor enforces, and tells the model about it', async () => {
    expect(await h.build('budget')).toEqual({
      capabilityId: 'budget',
      tools: [],
      limits: { maxToolCallsPerRun: 50 },
      prompt: expect.stringMatching(/^You may make at most 50 tool calls in one run; calls past that are refused\./),
    });
    expect((await h.build('budget', { maxToolCallsPerRun: 1 }))!.prompt).toMatch(/^You may make at most 1 tool call in one run/);
  });
});
