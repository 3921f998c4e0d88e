import { COMPACTION_STRATEGIES, DEFAULT_SUMMARY_PROMPT } from './compaction.config';
import { configErrors, toollessBuiltin } from '../../../../test/support/builtins';

/** A tool-less builtin: what it contributes is settings, limits or prompt text. */
describe('builtin capability: compaction (e2e)', () => {
  const h = toollessBuiltin('compaction');

  it('offers three strategies labelled for the form, and a multi-line summary prompt', () => {
    const properties = h.catalog.compaction.configSchema.properties;
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
    expect(h.registry.validateConfig('compaction', {})).toEqual({
      value: { strategy: 'clear_tool_results', keepLastTurns: 10, summaryPrompt: DEFAULT_SUMMARY_PROMPT },
      errors: [],
    });
    expect(configErrors(h.registry, 'compaction', { strategy: 'forget_everything', keepLastTurns: 0, summaryPrompt: '' })).toEqual([
      'keepLastTurns',
      'strategy',
      'summaryPrompt',
    ]);
    expect(configErrors(h.registry, 'compaction', { keepLastTurns: 101, summaryPrompt: 'x'.repeat(10001) })).toEqual(['keepLastTurns', 'summaryPrompt']);
  });

  it('contributes settings.compaction, with the summary prompt only for summarize, and tells the model what happens to old turns', async () => {
    expect(await h.build('compaction')).toEqual({
      capabilityId: 'compaction',
      tools: [],
      settings: { strategy: 'clear_tool_results', keepLastTurns: 10 },
      prompt: expect.stringContaining('the results of tool calls older than the last 10 turns are removed'),
    });
    expect(await h.build('compaction', { strategy: 'summarize', keepLastTurns: 4, summaryPrompt: 'Keep the order numbers.' })).toEqual({
      capabilityId: 'compaction',
      tools: [],
      settings: { strategy: 'summarize', keepLastTurns: 4, summaryPrompt: 'Keep the order numbers.' },
      prompt: expect.stringContaining('turns older than the last 4 are replaced by a summary'),
    });
    expect((await h.build('compaction', { strategy: 'truncate_oldest', keepLastTurns: 6 }))!).toMatchObject({
      settings: { strategy: 'truncate_oldest', keepLastTurns: 6 },
      prompt: expect.stringContaining('only the last 6 turns are kept'),
    });
  });
});
