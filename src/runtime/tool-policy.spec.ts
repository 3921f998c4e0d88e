import { approvalReasonOf, canRunNow, missingScopes, requiresApproval, toolKey, whyCannotRun } from './tool-policy';

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
    const tool = (over: Partial<{ scopes: string[]; digest: string; pinnedDigest: string | undefined }> = {}) => ({
      capabilityId: 'crm',
      toolId: 'look',
      scopes: [],
      digest: 'd1',
      pinnedDigest: 'd1',
      ...over,
    });
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

  describe('the incident-response switches (retired version, disabled tool)', () => {
    const tool = { capabilityId: 'mcp', toolId: 'github/create_issue', scopes: ['crm:write'], digest: 'd1', pinnedDigest: 'd0' };
    const disabled = new Map([[toolKey('mcp', 'github/create_issue'), { reason: 'INC-42' }]]);
    it.each([
      ['nothing switched: the other rules decide', {}, { code: 'tool_definition_changed' }],
      ['the version retired: named first, whatever else holds', { versionRetired: true, disabledTools: disabled }, { code: 'version_retired' }],
      ['the tool disabled: named before drift and scopes', { disabledTools: disabled }, { code: 'tool_disabled', reason: 'INC-42' }],
      [
        'another tool disabled: not this one',
        { disabledTools: new Map([[toolKey('mcp', 'github/other'), { reason: null }]]) },
        { code: 'tool_definition_changed' },
      ],
      [
        'the same tool id under another capability: not this one',
        { disabledTools: new Map([[toolKey('crm', 'github/create_issue'), { reason: null }]]) },
        { code: 'tool_definition_changed' },
      ],
    ] as const)('%s', (_name, governance, expected) => {
      expect(whyCannotRun(tool, [], governance)).toEqual(expected);
      expect(canRunNow({ ...tool, pinnedDigest: 'd1', scopes: [] }, [], governance)).toBe(
        !('versionRetired' in governance || (governance as { disabledTools?: Map<string, unknown> }).disabledTools?.has(toolKey('mcp', 'github/create_issue'))),
      );
    });
  });
});
