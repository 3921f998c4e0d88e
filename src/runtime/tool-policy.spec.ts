import { approvalReasonOf, canRunNow, missingScopes, requiresApproval, whyCannotRun } from './tool-policy';

describe('the tool policy', () => {
  describe('approvalReasonOf', () => {
    it.each([
      // risk, interruptBefore, toolApproval, toolId, expected
      ['read_only', undefined, undefined, 'look', null],
      ['read_only', false, {}, 'look', null],
      ['read_only', true, undefined, 'look', 'interrupt_before'],
      ['read_only', undefined, { look: 'required' }, 'look', 'spec_required'],
      ['read_only', true, { look: 'required' }, 'look', 'interrupt_before'],
      ['read_only', undefined, { other: 'required' }, 'look', null],
      ['read_only', undefined, { look: 'required' }, undefined, null],
      ['mutating', undefined, undefined, 'write', 'side_effecting'],
      ['mutating', true, { write: 'required' }, 'write', 'side_effecting'],
      ['destructive', false, {}, 'drop', 'side_effecting'],
      // Only the spec's own entries count: a tool named like an Object.prototype member stays a tool.
      ['read_only', undefined, {}, 'constructor', null],
      ['read_only', undefined, {}, '__proto__', null],
      ['read_only', undefined, { toString: 'required' }, 'toString', 'spec_required'],
      // Anything but "required" requires nothing.
      ['read_only', undefined, { look: 'optional' }, 'look', null],
    ] as const)('%s, interruptBefore %s, toolApproval %j, tool %s: %s', (risk, interruptBefore, toolApproval, toolId, expected) => {
      const facts = { risk, interruptBefore, toolId };
      const approval = toolApproval as Record<string, 'required'> | undefined;
      expect(approvalReasonOf(facts, approval)).toBe(expected);
      expect(requiresApproval(facts, approval)).toBe(expected !== null);
    });
  });

  describe('missingScopes', () => {
    it.each([
      [[], [], []],
      [['a'], ['a'], []],
      [['a', 'b'], ['b'], ['a']],
      [['b', 'a', 'b'], [], ['b', 'a']],
      [['a'], new Set(['a', 'z']), []],
      [['a', 'c'], new Set(['a']), ['c']],
    ] as const)('required %j, granted %j: missing %j', (required, granted, expected) => {
      expect(missingScopes(required, granted)).toEqual(expected);
    });
  });

  describe('whyCannotRun / canRunNow', () => {
    const tool = (over: Partial<{ scopes: string[]; digest: string; pinnedDigest: string | undefined }> = {}) => ({ scopes: [], digest: 'd1', pinnedDigest: 'd1', ...over });
    it.each([
      ['pinned, no scopes', tool(), [], null],
      ['pinned, scopes held', tool({ scopes: ['crm:read'] }), ['crm:read', 'x'], null],
      ['never pinned', tool({ pinnedDigest: undefined }), [], { code: 'tool_definition_changed' }],
      ['changed since publish', tool({ pinnedDigest: 'd0' }), [], { code: 'tool_definition_changed' }],
      ['a scope lost', tool({ scopes: ['crm:read', 'crm:write'] }), ['crm:read'], { code: 'scope_not_granted', missingScopes: ['crm:write'] }],
      // The executor's guard order: drift is named before scopes.
      ['changed and a scope lost', tool({ pinnedDigest: 'd0', scopes: ['crm:write'] }), [], { code: 'tool_definition_changed' }],
    ] as const)('%s', (_name, facts, granted, expected) => {
      expect(whyCannotRun(facts, granted)).toEqual(expected);
      expect(canRunNow(facts, granted)).toBe(expected === null);
    });
  });
});
