import { TOOL_NAME_PATTERN, ToolError } from './capability.types';

describe('capability types', () => {
  it('ToolError carries a code and message the model may read', () => {
    const error = new ToolError('not_found', 'No note with that id.');
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'ToolError', code: 'not_found', message: 'No note with that id.' });
  });

  it('accepts the tool names models accept', () => {
    expect(['search', 'search_notes', 'a-b', 'A1', 'a'.repeat(64)].every((n) => TOOL_NAME_PATTERN.test(n))).toBe(true);
    expect(['', '1a', '_a', 'a b', 'a.b', 'a'.repeat(65)].some((n) => TOOL_NAME_PATTERN.test(n))).toBe(false);
  });
});
