import { THINKING_EFFORTS } from './thinking.config';
import { configErrors, toollessBuiltin } from '../../../../test/support/builtins';

/** A tool-less builtin: what it contributes is settings, limits or prompt text. */
describe('builtin capability: thinking (e2e)', () => {
  const h = toollessBuiltin('thinking');

  it('offers low, medium and high, each labelled for the form, medium by default', () => {
    expect(h.catalog.thinking.configSchema.properties.effort).toEqual({
      type: 'string',
      enum: ['low', 'medium', 'high'],
      default: 'medium',
      title: 'Reasoning effort',
      description: expect.any(String),
      'x-enum-labels': { low: expect.stringContaining('quickly'), medium: expect.any(String), high: expect.stringContaining('at length') },
    });
    expect(THINKING_EFFORTS).toEqual(['low', 'medium', 'high']);
    expect(h.registry.validateConfig('thinking', {})).toEqual({ value: { effort: 'medium' }, errors: [] });
    for (const effort of ['extreme', '', 2, null]) expect(configErrors(h.registry, 'thinking', { effort })).toEqual(['effort']);
  });

  it('contributes settings.thinking = { effort } and no prompt text', async () => {
    expect(await h.build('thinking', { effort: 'high' })).toEqual({ capabilityId: 'thinking', tools: [], settings: { effort: 'high' } });
    expect(h.catalog.thinking.promptGuidance).toBe('');
  });
});
