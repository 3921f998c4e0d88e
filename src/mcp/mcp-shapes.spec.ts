import type { OfferedTool } from '../agents/built-version';
import { ApiError } from '../common/api-error';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';
import { annotationsOf, CALL_META, refusalResult, titleOf, toCallToolResult, toMcpTool } from './mcp-shapes';

const tool = (over: Partial<OfferedTool> = {}): OfferedTool => ({
  name: 'search_notes',
  description: 'Search the notes.',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { q: { type: 'string' } },
    required: ['q'],
    additionalProperties: false,
  },
  capabilityId: 'notes',
  toolId: 'search',
  risk: 'read_only',
  requiresApproval: false,
  ...over,
});

const call = (over: Partial<ToolCallView> = {}): ToolCallView => ({
  id: 'c1',
  agentId: 'a1',
  version: 1,
  tool: 'search_notes',
  capabilityId: 'notes',
  toolId: 'search',
  runId: null,
  arguments: { q: 'x' },
  argumentsHash: 'h',
  status: 'succeeded',
  argumentsEdited: false,
  entryPoint: 'mcp',
  requestedBy: 'k1',
  createdAt: '2026-01-01T00:00:00.000Z',
  completedAt: '2026-01-01T00:00:01.000Z',
  ...over,
});

describe('toMcpTool', () => {
  it('keeps name, description and the schema (without $schema), and annotates from risk', () => {
    expect(toMcpTool(tool())).toEqual({
      name: 'search_notes',
      title: 'Search notes',
      description: 'Search the notes.',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false },
      annotations: { title: 'Search notes', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      _meta: { 'capability-platform/tool': { capabilityId: 'notes', toolId: 'search', risk: 'read_only', requiresApproval: false } },
    });
  });

  it('says destructive only for destructive tools; MCP assumes destructive when not told', () => {
    expect(toMcpTool(tool({ risk: 'mutating' })).annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(toMcpTool(tool({ risk: 'destructive' })).annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });

  it('lists a declared output shape as outputSchema, without $schema', () => {
    const outputSchema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { n: { type: 'integer' } } };
    expect(toMcpTool(tool(), { outputSchema }).outputSchema).toEqual({ type: 'object', properties: { n: { type: 'integer' } } });
    expect(toMcpTool(tool())).not.toHaveProperty('outputSchema');
  });

  it.each([
    // risk, declared idempotent, declared open-world -> readOnly, destructive, idempotent, openWorld
    ['read_only', undefined, undefined, true, false, true, false],
    ['read_only', false, true, true, false, true, true],
    ['mutating', undefined, undefined, false, false, false, false],
    ['mutating', true, undefined, false, false, true, false],
    ['mutating', undefined, true, false, false, false, true],
    ['destructive', undefined, undefined, false, true, false, false],
    ['destructive', true, true, false, true, true, true],
  ] as const)(
    'derives the hints of a %s tool (idempotent %s, open world %s)',
    (risk, idempotent, openWorld, readOnlyHint, destructiveHint, idempotentHint, openWorldHint) => {
      expect(annotationsOf(tool({ risk }), { idempotent, openWorld })).toEqual({
        title: 'Search notes',
        readOnlyHint,
        destructiveHint,
        idempotentHint,
        openWorldHint,
      });
    },
  );

  it('makes a title of any tool name', () => {
    expect(titleOf('search_notes')).toBe('Search notes');
    expect(titleOf('fetchInvoicePDF')).toBe('Fetch invoice pdf');
    expect(titleOf('fx-mcp-write')).toBe('Fx mcp write');
    expect(titleOf('A')).toBe('A');
  });
});

describe('toCallToolResult', () => {
  const text = (r: ReturnType<typeof toCallToolResult>) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

  it('an object result: its JSON as text, itself as structuredContent, the call in _meta', () => {
    expect(toCallToolResult(call({ result: { a: 1 }, resultTruncated: false }))).toEqual({
      content: [{ type: 'text', text: '{"a":1}' }],
      structuredContent: { a: 1 },
      _meta: { [CALL_META]: { id: 'c1', status: 'succeeded' } },
    });
  });

  it('a string is text only; an array is structured as { items }; null is the text null', () => {
    expect(toCallToolResult(call({ result: 'hi' }))).toEqual({ content: [{ type: 'text', text: 'hi' }], _meta: expect.any(Object) });
    expect(toCallToolResult(call({ result: [1, 2] })).structuredContent).toEqual({ items: [1, 2] });
    expect(toCallToolResult(call({ result: null }))).toEqual({ content: [{ type: 'text', text: 'null' }], _meta: expect.any(Object) });
    expect(toCallToolResult(call({ result: 3 })).structuredContent).toBeUndefined();
  });

  it('a cut result is text with a note, and is not offered as structured', () => {
    const cut = toCallToolResult(call({ result: '{"rows":[', resultTruncated: true, resultRef: '/api/v1/tool-calls/c1/result' }));
    expect(cut.structuredContent).toBeUndefined();
    expect(text(cut)).toBe('{"rows":[\nThe result was cut to the tool\'s output budget. The whole result is kept at /api/v1/tool-calls/c1/result.');
    expect(cut._meta![CALL_META]).toEqual({ id: 'c1', status: 'succeeded', resultTruncated: true, resultRef: '/api/v1/tool-calls/c1/result' });
    expect(text(toCallToolResult(call({ result: 'abc', resultTruncated: true })))).toBe("abc\nThe result was cut to the tool's output budget.");
  });

  it('says when an approver changed the arguments', () => {
    const edited = toCallToolResult(call({ result: { ok: true }, argumentsEdited: true, executedArguments: { q: 'y' } }));
    expect(text(edited)).toContain('It ran with: {"q":"y"}');
  });

  it('failed, rejected and expired are isError with a message to act on', () => {
    const failed = toCallToolResult(call({ status: 'failed', error: { code: 'timeout', message: 'The tool did not finish within 30000 ms.' } }));
    expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'The tool did not finish within 30000 ms. (timeout)' }] });
    const rejected = toCallToolResult(call({ status: 'rejected', approvalId: 'p1', error: { code: 'approval_rejected', message: 'No.' } }));
    expect(rejected).toMatchObject({ isError: true, content: [{ text: 'A person rejected this call, so it did not run. Their reason: No.' }] });
    expect(rejected._meta![CALL_META]).toEqual({ id: 'c1', status: 'rejected', approvalId: 'p1', error: { code: 'approval_rejected', message: 'No.' } });
    expect(toCallToolResult(call({ status: 'expired' }))).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('Call the tool again to ask again.') }],
    });
    expect(text(toCallToolResult(call({ status: 'failed' })))).toBe('The tool failed. (tool_error)');
    expect(text(toCallToolResult(call({ status: 'rejected' })))).toContain('(none given)');
  });

  it('pending and running are not errors: they say how to get the decision', () => {
    const pending = toCallToolResult(call({ status: 'pending_approval', approvalId: 'p1' }), { expiresAt: '2026-01-02T00:00:00.000Z' });
    expect(pending.isError).toBeUndefined();
    expect(text(pending)).toContain('(approval p1, which expires at 2026-01-02T00:00:00.000Z)');
    expect(text(toCallToolResult(call({ status: 'pending_approval', approvalId: 'p1' })))).toContain('(approval p1)');
    expect(text(toCallToolResult(call({ status: 'running', approvalId: 'p1' })))).toContain('it is running now');
  });
});

describe('refusalResult', () => {
  it('names each invalid field as the model wrote it', () => {
    const r = refusalResult(
      new ApiError('invalid_arguments', 'x', [
        { path: 'arguments.query', code: 'isString', message: 'query must be a string' },
        { path: 'arguments', code: 'isObject', message: 'arguments must be an object' },
        { path: 'other', message: 'odd' },
      ]),
    );
    expect(r.isError).toBe(true);
    expect(r.content).toEqual([
      {
        type: 'text',
        text: 'The arguments are invalid, so nothing ran. Fix these and call again:\n- query: query must be a string\n- (the arguments as a whole): arguments must be an object\n- other: odd',
      },
    ]);
    expect((r._meta![CALL_META] as { errors: { path: string }[] }).errors.map((e) => e.path)).toEqual(['query', '(the arguments as a whole)', 'other']);
  });

  it('any other refusal is its detail and code', () => {
    expect(refusalResult(new ApiError('budget_exceeded', 'Run "r" has reached its limit of 2 tool calls.'))).toEqual({
      content: [{ type: 'text', text: 'Run "r" has reached its limit of 2 tool calls. (budget_exceeded)' }],
      isError: true,
      _meta: { [CALL_META]: { status: 'refused', code: 'budget_exceeded' } },
    });
  });
});
