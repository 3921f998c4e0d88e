import { ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { EgressRefusedError, EgressTimeoutError } from '../../egress/egress-policy';
import { classify, McpUpstreamError, redactSecrets } from './mcp-client-pool.service';
import { MAX_MESSAGE_KEYS } from '../../common/json-shape';
import { MAX_LIST_VALUES } from './list-values';
import { ListedMcpTool, ListedToolsCollector, MAX_LIST_CHARS, riskOf, sanitizeListedTools, toolListDiff, toolListDiffInTurns } from './mcp-tools';

const tool = (annotations?: Record<string, unknown>) => ({ name: 't', description: 'd', inputSchema: { type: 'object' }, annotations });

describe('the risk rule (fail-closed)', () => {
  it('an admin decision wins over everything', () => {
    expect(riskOf(tool({ readOnlyHint: true }), true, 'destructive')).toEqual({ risk: 'destructive', riskSource: 'admin' });
    expect(riskOf(tool(), false, 'read_only')).toEqual({ risk: 'read_only', riskSource: 'admin' });
  });
  it('trusted annotations: readOnlyHint true is read_only, destructiveHint false is mutating', () => {
    expect(riskOf(tool({ readOnlyHint: true }), true, undefined)).toEqual({ risk: 'read_only', riskSource: 'annotations' });
    expect(riskOf(tool({ readOnlyHint: false, destructiveHint: false }), true, undefined)).toEqual({ risk: 'mutating', riskSource: 'annotations' });
    expect(riskOf(tool({ destructiveHint: true }), true, undefined)).toEqual({ risk: 'destructive', riskSource: 'default' });
    expect(riskOf(tool({ readOnlyHint: 'yes' }), true, undefined)).toEqual({ risk: 'destructive', riskSource: 'default' });
    expect(riskOf(tool(), true, undefined)).toEqual({ risk: 'destructive', riskSource: 'default' });
  });
  it("an untrusted server's hints never lower a risk", () => {
    expect(riskOf(tool({ readOnlyHint: true }), false, undefined)).toEqual({ risk: 'destructive', riskSource: 'default' });
    expect(riskOf(tool({ destructiveHint: false }), false, undefined)).toEqual({ risk: 'destructive', riskSource: 'default' });
  });
  it('a stored risk that is not a risk counts as none', () => {
    expect(riskOf(tool({ readOnlyHint: true }), true, 'harmless' as never)).toEqual({ risk: 'read_only', riskSource: 'annotations' });
  });
});

describe('sanitizeListedTools', () => {
  it('keeps the fields the platform uses, with U+0000 and lone surrogates replaced', () => {
    const [t] = sanitizeListedTools([
      {
        name: 'a',
        title: 'T\u0000',
        description: 'x\uD800y',
        inputSchema: { type: 'object', properties: { 'k\u0000': { type: 'string' } } },
        annotations: { readOnlyHint: true },
        outputSchema: { type: 'object' },
        _meta: { x: 1 },
      },
    ]);
    expect(t).toEqual({
      name: 'a',
      title: 'T\uFFFD',
      description: 'x\uFFFDy',
      inputSchema: { type: 'object', properties: { 'k\uFFFD': { type: 'string' } } },
      annotations: { readOnlyHint: true },
    });
  });
  it.each<[string, unknown[]]>([
    ['a tool without a name', [{ description: 'd', inputSchema: { type: 'object' } }]],
    ['a name listed twice', [tool(), tool()]],
    ['a schema that is not an object schema', [{ name: 'a', inputSchema: { type: 'string' } }]],
    ['a huge schema', [{ name: 'a', inputSchema: { type: 'object', description: 'x'.repeat(70_000) } }]],
    ['a deep schema', [{ name: 'a', inputSchema: JSON.parse('{"type":"object","p":' + '{"a":'.repeat(40) + '1' + '}'.repeat(40) + '}') }]],
    // Each tool within its own bounds, the list past MAX_LIST_CHARS: 70 tools of 60,000 characters.
    [
      'a list too large as a whole',
      Array.from({ length: 70 }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object', description: 'x'.repeat(60_000) } })),
    ],
  ])('refuses the whole list for %s', (_what, raw) => {
    expect(() => sanitizeListedTools(raw)).toThrow(McpUpstreamError);
  });
  it('a page made storable in turns lets the event loop run in between, and keeps the same tools', async () => {
    const page = Array.from({ length: 60 }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object', description: 'x'.repeat(60_000) } }));
    const collector = new ListedToolsCollector();
    let turns = 0;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    let done = false;
    setImmediate(tick);
    await collector.addInTurns(page);
    done = true;
    expect(turns).toBeGreaterThanOrEqual(20);
    expect(collector.tools).toEqual(sanitizeListedTools(page));
  });
  it('a list whose tools together name more than MAX_MESSAGE_KEYS distinct members is refused, each tool within its bounds', () => {
    // What the list stored is parsed whole on each node's first read: 1,500 new names a tool.
    const tool = (i: number) => ({
      name: `t${i}`,
      inputSchema: { type: 'object', properties: Object.fromEntries(Array.from({ length: 1_500 }, (_, j) => [`p${i}_${j}`, { type: 'string' }])) },
    });
    const within = new ListedToolsCollector();
    within.add(Array.from({ length: 13 }, (_, i) => tool(i)));
    expect(within.tools).toHaveLength(13);
    const past = new ListedToolsCollector();
    past.add(Array.from({ length: 7 }, (_, i) => tool(i)));
    expect(() => past.add(Array.from({ length: 7 }, (_, i) => tool(100 + i)))).toThrow(`its tools name more than ${MAX_MESSAGE_KEYS} distinct members`);
  });

  it('a list whose numbers PostgreSQL would print far longer than listed is refused, a few such numbers kept (attack round 16, S-F2)', () => {
    // 70 tools of 8,000 × 5e-324 (3.9 MB) were stored in 164 KB and read back as 184 MB.
    const tool = (i: number, n: number) => ({
      name: `t${i}`,
      inputSchema: { type: 'object', properties: { a: { type: 'number', enum: new Array<number>(n).fill(5e-324) } } },
    });
    const within = new ListedToolsCollector();
    within.add(Array.from({ length: 3 }, (_, i) => tool(i, 1_000)));
    expect(within.tools).toHaveLength(3);
    const past = new ListedToolsCollector();
    past.add(Array.from({ length: 3 }, (_, i) => tool(i, 1_000)));
    expect(() => past.add(Array.from({ length: 2 }, (_, i) => tool(10 + i, 8_000)))).toThrow(
      /its numbers would be stored more than 1048576 characters longer than listed/,
    );
    expect(() => sanitizeListedTools([{ name: 'a', inputSchema: { type: 'object', maximum: 1e308, minimum: -1e308 } }])).not.toThrow();
  });

  it('a schema or annotations far past their bound are refused, whatever else the list holds', () => {
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`p${i}`, { type: 'string' }])) };
    expect(() => sanitizeListedTools([{ name: 'a', inputSchema: wide }])).toThrow('tool "a" input schema is larger than 65536 characters');
    expect(() => sanitizeListedTools([{ name: 'a', inputSchema: { type: 'object' }, annotations: wide }])).toThrow(
      'tool "a" annotations is larger than 65536 characters',
    );
  });
  it('a list whose schemas hold more than MAX_LIST_VALUES values is refused, each within its bounds (attack round 21, AD-F2)', () => {
    // 4 MiB of `enum: [0, 0, …]` was two million values, each listing about a second of the node's CPU.
    const dense = (i: number, zeros: number) => ({
      name: `t${i}`,
      inputSchema: { type: 'object', properties: { v: { enum: new Array<number>(zeros).fill(0) } } },
    });
    const within = new ListedToolsCollector();
    within.add(Array.from({ length: 6 }, (_, i) => dense(i, 30_000)));
    expect(within.tools).toHaveLength(6);
    const past = new ListedToolsCollector();
    past.add(Array.from({ length: 6 }, (_, i) => dense(i, 30_000)));
    expect(() => past.add([dense(6, 30_000)])).toThrow(
      `the server's tool list is unusable: its tools' schemas and annotations hold more than ${MAX_LIST_VALUES} values`,
    );
    const annotated = [{ name: 'a', inputSchema: { type: 'object' }, annotations: { tags: new Array<number>(30_000).fill(0) } }];
    expect(() => sanitizeListedTools([...Array.from({ length: 6 }, (_, i) => dense(i, 30_000)), ...annotated])).toThrow(/hold more than/);
    // Far within the characters a list may hold.
    expect(JSON.stringify(Array.from({ length: 7 }, (_, i) => dense(i, 30_000))).length).toBeLessThan(MAX_LIST_CHARS / 8);
  });

  it('a large list within the whole bound is kept', () => {
    const big = Array.from({ length: 60 }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object', description: 'x'.repeat(60_000) } }));
    expect(sanitizeListedTools(big)).toHaveLength(60);
    expect(JSON.stringify(big).length).toBeLessThan(MAX_LIST_CHARS);
  });
  it('a description or title too long is cut between two characters: one cut through an emoji left a lone surrogate', () => {
    const [t] = sanitizeListedTools([
      { name: 'a', description: 'a'.repeat(9999) + '\u{1F600}b', title: 'a'.repeat(499) + '\u{1F600}b', inputSchema: { type: 'object' } },
    ]);
    expect([t.description, t.title]).toEqual(['a'.repeat(9999), 'a'.repeat(499)]);
  });
  it("redacts the connection's credentials wherever the list echoes them, before anything is cut", () => {
    const secret = 'Bearer sk-live-Vq7Rt2XwK9pLm4';
    const [t] = sanitizeListedTools(
      [
        {
          name: 'whoami',
          title: `auth ${secret}`,
          description: 'a'.repeat(9990) + secret,
          inputSchema: { type: 'object', properties: { x: { type: 'string', default: secret }, [secret]: { enum: ['sk-live-Vq7Rt2XwK9pLm4'] } } },
          annotations: { note: secret },
        },
      ],
      { authorization: secret },
    );
    expect(t).toEqual({
      name: 'whoami',
      title: 'auth [redacted]',
      description: 'a'.repeat(9990) + '[redacted]',
      inputSchema: { type: 'object', properties: { x: { type: 'string', default: '[redacted]' }, '[redacted]': { enum: ['[redacted]'] } } },
      annotations: { note: '[redacted]' },
    });
  });
  it('a missing description is empty, not a refusal', () => {
    expect(sanitizeListedTools([{ name: 'a', inputSchema: { type: 'object' } }])[0].description).toBe('');
  });
});

describe('toolListDiff', () => {
  it('names added, removed and changed tools; key order is not a change', () => {
    const a = { name: 'a', description: 'A', inputSchema: { type: 'object', properties: {} } };
    const b = { name: 'b', description: 'B', inputSchema: { type: 'object' } };
    const aReordered = { inputSchema: { properties: {}, type: 'object' }, description: 'A', name: 'a' };
    expect(toolListDiff([a, b], [aReordered, { name: 'c', description: '', inputSchema: { type: 'object' } }])).toEqual({
      added: ['c'],
      removed: ['b'],
      changed: [],
    });
    expect(toolListDiff([a], [{ ...a, description: 'A, and more' }])).toEqual({ added: [], removed: [], changed: ['a'] });
  });
});

describe('classify', () => {
  const secret = { authorization: 'Bearer sk-secret-123456' };
  const creds = { credentials: secret };
  it('maps failures to the codes API.md gives failed calls', () => {
    expect(classify(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), creds).code).toBe('timeout');
    expect(classify(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), creds).code).toBe('upstream_unavailable');
    expect(classify(new ProtocolError(ProtocolErrorCode.InvalidParams, 'bad'), creds).code).toBe('tool_error');
    expect(classify(new EgressRefusedError('no', 'private_address'), creds).code).toBe('egress_refused');
    expect(classify(Object.assign(new TypeError('fetch failed'), { cause: new EgressRefusedError('no', 'private_address') }), creds).code).toBe(
      'egress_refused',
    );
    expect(classify(new EgressTimeoutError('slow'), creds).code).toBe('timeout');
    expect(classify(Object.assign(new Error('aborted'), { name: 'AbortError' }), creds).code).toBe('timeout');
    expect(classify(new TypeError('fetch failed'), creds).code).toBe('upstream_unavailable');
  });
  it('never lets a credential through in a message', () => {
    const err = classify(new Error('server said: unauthorized Bearer sk-secret-123456'), creds);
    expect(err.message).not.toContain('sk-secret');
    expect(redactSecrets('token sk-secret-123456 leaked', secret)).toBe('token [redacted] leaked');
  });
  it('makes a message storable: U+0000 and a cut emoji replaced or left out, at most 1,000 characters', () => {
    const nul = classify(new ProtocolError(-32000, 'broken\u0000list'), creds).message;
    expect(nul).toContain('broken\uFFFDlist');
    for (let pad = 950; pad < 970; pad++) {
      const cut = classify(new ProtocolError(-32000, 'a'.repeat(pad) + '\u{1F600}'.repeat(5)), creds).message;
      expect([pad, cut.isWellFormed(), cut.length <= 1000]).toEqual([pad, true, true]);
    }
  });
  it('redacts a credential before cutting: none of it is left at the end of a long message', () => {
    const pads = Array.from({ length: 100 }, (_, i) => 900 + i);
    const leaked = pads.filter((pad) => /sk-s/.test(classify(new Error('x'.repeat(pad) + 'Bearer sk-secret-123456'), creds).message));
    expect(leaked).toEqual([]);
  });
});

/** Attack round 14, O-F6: the refresh's comparison of two lists of 4 MiB held the event loop 350 ms in one go. */
describe('toolListDiffInTurns', () => {
  const props = (salt: string) => Object.fromEntries(Array.from({ length: 2300 }, (_, i) => [`p${i}${salt}`, { type: 'string' }]));
  const list = (salt: string, names: string[]) =>
    names.map((name) => ({ name, description: '', inputSchema: { type: 'object', properties: props(salt) }, annotations: {} })) as unknown as ListedMcpTool[];

  it('answers as toolListDiff does, and gives the event loop turns while it compares large lists', async () => {
    const names = Array.from({ length: 64 }, (_, i) => `t${i}`);
    const before = list('a', names);
    const after = [...list('b', names.slice(1)), ...list('a', ['new'])];
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const diff = await toolListDiffInTurns(before, after);
    ticking = false;
    expect(diff).toEqual(toolListDiff(before, after));
    expect(diff).toEqual({ added: ['new'], removed: ['t0'], changed: names.slice(1).sort() });
    // About 7.8 MB compared: a turn after every 128 KiB (was none until the whole comparison ended).
    expect(turns).toBeGreaterThanOrEqual(30);
  });
});
