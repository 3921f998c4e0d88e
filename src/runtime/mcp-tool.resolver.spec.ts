import type { VersionTool } from '../agents/built-version';
import { testConfig } from '../../test/support/test-app';
import { McpToolResolver } from './mcp-tool.resolver';
import { VendorSchemaChecks } from './vendor-schema-checks';
import { RE2JS } from 're2js';
import { MATCH_STEPS, MAX_ERRORS, STRING_READS, WORK_FLOOR, WORK_PER_VALUE } from './vendor-schema';

const tool = (
  inputSchema: Record<string, unknown>,
  digest = JSON.stringify(inputSchema),
  connectionId = '00000000-0000-4000-8000-000000000000',
): VersionTool => ({
  name: 't',
  description: 'd',
  inputSchema,
  capabilityId: 'mcp',
  toolId: 'conn/t',
  risk: 'read_only',
  requiresApproval: false,
  source: { connectionId, server: 'remote' },
  declaration: { id: 'conn/t', description: 'd', risk: 'read_only' },
  scopes: [],
  approvalReason: null,
  digest,
  pinnedDigest: digest,
});

const ORG = '00000000-0000-4000-8000-0000000000f0';

describe('McpToolResolver.validate', () => {
  // The rules of the budget, not the thread's clock: a loaded machine must not refuse by time what the budget decides.
  const checks = new VendorSchemaChecks({ checkMs: 120_000 });
  const resolver = new McpToolResolver(checks, {} as never, {} as never, testConfig());
  const validate = (t: VersionTool, args: unknown) => resolver.validate(t, args, ORG);
  afterAll(() => checks.onModuleDestroy());
  const schema = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: {
      id: { type: 'string' },
      items: { type: 'array', items: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
      when: { type: 'string', format: 'date-time' },
    },
    required: ['id'],
    additionalProperties: false,
  };

  it('handles only MCP catalog tools', () => {
    expect(resolver.handles(tool(schema))).toBe(true);
    expect(resolver.handles({ ...tool(schema), capabilityId: 'knowledge', source: undefined })).toBe(false);
  });

  it('accepts arguments the listed schema accepts, as they are', async () => {
    expect(await validate(tool(schema), { id: 'a', items: [{ n: 1 }] })).toEqual({
      value: { id: 'a', items: [{ n: 1 }] },
      plain: { id: 'a', items: [{ n: 1 }] },
      errors: [],
    });
  });

  it('names each problem at its path', async () => {
    const { errors } = await validate(tool(schema), { items: [{ n: 'x' }, {}], when: 'yesterday', extra: 1 });
    expect(errors.map((e) => e.path).sort()).toEqual(['extra', 'id', 'items[0].n', 'items[1].n', 'when']);
  });

  it('checks an array of half a million items, what a 1 MiB body of `0,`s holds, on the thread', async () => {
    const numbers = tool({ type: 'object', properties: { x: { type: 'array', items: { type: 'integer' } } } });
    const x = new Array<unknown>(520_000).fill(0);
    // Was `RangeError: Maximum call stack size exceeded` on the thread, counting the values: a 500.
    expect((await validate(numbers, { x })).errors).toEqual([]);
    x[7] = 'seven';
    expect((await validate(numbers, { x })).errors).toEqual([expect.objectContaining({ path: 'x[7]', code: 'type' })]);
  });

  it('refuses what is not an object', async () => {
    for (const args of [null, [], 'x', 3])
      expect((await validate(tool(schema), args)).errors).toEqual([{ path: '', code: 'type', message: 'must be an object' }]);
  });

  it('reads draft 2020-12 schemas too', async () => {
    const s2020 = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { t: { type: 'array', prefixItems: [{ type: 'string' }] } },
    };
    expect((await validate(tool(s2020), { t: ['a'] })).errors).toEqual([]);
    expect((await validate(tool(s2020), { t: [1] })).errors.map((e) => e.path)).toEqual(['t[0]']);
  });

  it('a schema that cannot be compiled validates nothing: every call is refused', async () => {
    const broken = { type: 'object', properties: { a: { type: 'no-such-type' } } };
    expect((await validate(tool(broken), { a: 1 })).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
  });

  it('applies a pattern; one that backtracks on V8 matches in linear time, and one RE2 cannot run makes the schema unusable', async () => {
    const safe = tool({ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' } } });
    expect((await validate(safe, { code: 'ABC-1234' })).errors).toEqual([]);
    expect((await validate(safe, { code: 'abc' })).errors).toEqual([expect.objectContaining({ path: 'code', code: 'pattern' })]);
    // Nested quantifiers: on a backtracking engine each character more doubles the work (31 held the node 15 s).
    const nested = tool({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    expect((await validate(nested, { s: 'a'.repeat(100_000) })).errors).toEqual([]);
    expect((await validate(nested, { s: `${'a'.repeat(100_000)}!` })).errors).toEqual([expect.objectContaining({ path: 's', code: 'pattern' })]);
    // safe-regex2 let these through: quadratic (150,000 spaces held the node 21 s) and exponential (29 characters, 5 s).
    const common = tool({
      type: 'object',
      properties: { q: { type: 'string', pattern: '\\s+$' }, g: { type: 'string', pattern: '^(a|a)*$' }, w: { type: 'string', pattern: '(\\w|\\d)*x$' } },
      patternProperties: { '^(x+x+)+y$': { type: 'string' } },
    });
    const errors = (
      await validate(common, {
        q: `${' '.repeat(150_000)}x`,
        g: `${'a'.repeat(100_000)}!`,
        w: 'a'.repeat(100_000),
        ['x'.repeat(100_000)]: 1,
      })
    ).errors;
    expect(errors.map((e) => `${e.path} ${e.code}`).sort()).toEqual(['g pattern', 'q pattern', 'w pattern']);
    expect((await validate(common, { q: 'trailing ', g: 'aaa', w: 'abx', xxy: 1 })).errors.map((e) => e.path)).toEqual(['xxy']);
    // JavaScript spellings RE2 does not have are translated.
    const unicode = tool({ type: 'object', properties: { n: { type: 'string', pattern: '^[\\u00e9\\p{L}]+\\/\\d{2,30}$' } } });
    expect((await validate(unicode, { n: 'été/42' })).errors).toEqual([]);
    expect((await validate(unicode, { n: 'été/4' })).errors).toEqual([expect.objectContaining({ path: 'n', code: 'pattern' })]);
    for (const unrunnable of ['^(?=.*[A-Z]).{8,}$', '^(a)\\1$']) {
      const t = tool({ type: 'object', properties: { p: { type: 'string', pattern: unrunnable } } });
      expect((await validate(t, { p: 'Password1' })).errors).toEqual([
        { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: the pattern .* cannot be matched in linear time/) },
      ]);
    }
  });

  it('checks `format: "url"` in linear time, as ajv-formats would answer (its expression held the node 27 s on 200 KB)', async () => {
    const t = tool({ type: 'object', properties: { link: { type: 'string', format: 'url' } } });
    expect((await validate(t, { link: 'https://user:pw@example.com:8443/a?b=c' })).errors).toEqual([]);
    expect((await validate(t, { link: 'http://10.0.0.1/' })).errors).toEqual([expect.objectContaining({ path: 'link', code: 'format' })]);
    expect((await validate(t, { link: `http://${'::'.repeat(200_000)}` })).errors).toEqual([expect.objectContaining({ path: 'link', code: 'format' })]);
  });

  it('finds duplicates among objects in one pass, whatever the key order; distinct items pass', async () => {
    const tags = tool({ type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } });
    expect(
      (
        await validate(tags, {
          tags: [
            { a: 1, b: [1, 2] },
            { b: [1, 2], a: 1.0 },
          ],
        })
      ).errors,
    ).toEqual([expect.objectContaining({ path: 'tags', code: 'uniqueItems' })]);
    expect((await validate(tags, { tags: [{ a: 1 }, { a: '1' }, [1], 1, '1', null] })).errors).toEqual([]);
    // 30,000 objects compared pair by pair held the node 26 s.
    expect((await validate(tags, { tags: Array.from({ length: 30_000 }, (_, i) => ({ a: i })) })).errors).toEqual([]);
    const off = tool({ type: 'object', properties: { tags: { type: 'array', uniqueItems: false } } });
    expect((await validate(off, { tags: [1, 1] })).errors).toEqual([]);
    // Each pass charged by the canonical JSON it writes: 300 of them over 529 KB held the thread 7.9 s, each pass a step.
    const passes = tool({ type: 'object', properties: { a: { allOf: Array.from({ length: 300 }, () => ({ uniqueItems: true })) } } });
    const items = Array.from({ length: 20_000 }, (_, i) => ({ k: i, s: 'abcdefgh' }));
    expect((await validate(passes, { a: items })).errors).toEqual([
      expect.objectContaining({ code: 'schema', message: expect.stringMatching(/takes more than/) }),
    ]);
    expect((await validate(passes, { a: items.slice(0, 20) })).errors).toEqual([]);
    // One pass over a megabyte of strings is within the budget.
    const strings = Array.from({ length: 10_000 }, (_, i) => `${i}`.padStart(100, 'x'));
    expect((await validate(tags, { tags: strings })).errors).toEqual([]);
  });

  it('a schema whose $refs multiply cannot be used: its calls are refused, in bounded work, whatever the depth', async () => {
    // d_i is allOf [d_i-1, d_i-1]: checking {} against d_n called 2^n functions (n = 32 held the node 16 s).
    const doubling = (n: number, at = 'definitions') => {
      const defs: Record<string, unknown> = { d0: { type: 'object' } };
      for (let i = 1; i <= n; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/${at}/d${i - 1}` }, { $ref: `#/${at}/d${i - 1}` }] };
      return tool({ type: 'object', [at]: defs, allOf: [{ $ref: `#/${at}/d${n}` }] });
    };
    const refused = [
      {
        path: '',
        code: 'schema',
        message: expect.stringMatching(/cannot be used: checking these arguments against it takes more than .* \(its \$refs multiply\)/),
      },
    ];
    expect((await validate(doubling(20), {})).errors).toEqual(refused);
    expect((await validate(doubling(64), { any: 'thing' })).errors).toEqual(refused);
    // The same doubling through a property grows with the arguments' depth.
    const nested = tool({ type: 'object', properties: { a: { allOf: [{ $ref: '#' }, { $ref: '#' }] } } });
    const deep = (n: number): Record<string, unknown> => (n === 0 ? {} : { a: deep(n - 1) });
    expect((await validate(nested, deep(5))).errors).toEqual([]);
    expect((await validate(nested, deep(40))).errors).toEqual(refused);
    // A reference to itself in place never ends (it overflowed the stack: a 500).
    for (const endless of [
      { type: 'object', allOf: [{ $ref: '#' }] },
      { type: 'object', $defs: { x: { $ref: '#/$defs/x' } }, properties: { p: { $ref: '#/$defs/x' } } },
    ]) {
      expect((await validate(tool(endless), { p: 1 })).errors).toEqual([
        { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: it refers to itself without end/) },
      ]);
    }
    // A chain kept where no schema is expected (a `default`), reached by a JSON pointer, is counted all the same.
    expect((await validate(doubling(40, 'default'), {})).errors).toEqual(refused);
  });

  it("counts a union's branches and the errors they make: 1,000 branches over 30 KB of arguments held the node 9.8 s and kept 3 million errors", async () => {
    const branches = Array.from({ length: 1000 }, (_, i) => ({ const: [0, 0, 0, i + 1] }));
    const items = Array.from({ length: 1000 }, () => [0, 0, 0, 0]);
    // No branch passes: every item kept an error of each, a million of them; now at most MAX_ERRORS are held, and the answer says so.
    const none = tool({ type: 'object', properties: { x: { type: 'array', items: { anyOf: branches } } } });
    expect((await validate(none, { x: items })).errors).toEqual([{ path: '', code: 'errors', message: `arguments have more than ${MAX_ERRORS} problems` }]);
    // The last branch passes: each item made and dropped 1,000 errors, within one step of the budget.
    const last = tool({ type: 'object', properties: { x: { type: 'array', items: { anyOf: [...branches, { type: 'array' }] } } } });
    expect((await validate(last, { x: items })).errors).toEqual([
      { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: checking these arguments against it takes more than/) },
    ]);
    expect((await validate(last, { x: items.slice(0, 5) })).errors).toEqual([]);
  });

  it('charges each read of a string by its length: 3,000 `minLength`s over 500,000 characters held the node 6.4 s', async () => {
    const text = 'é'.repeat(500_000);
    const lengths = tool({ type: 'object', properties: { s: { allOf: Array.from({ length: 3000 }, (_, i) => ({ minLength: i })) } } });
    expect((await validate(lengths, { s: text })).errors).toEqual([
      { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: checking these arguments against it takes more than/) },
    ]);
    const formats = tool({ type: 'object', properties: { s: { allOf: Array.from({ length: 3000 }, () => ({ format: 'uri' })) } } });
    expect((await validate(formats, { s: `a:${'b'.repeat(1_000_000)}` })).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
    // A long string read by the few keywords a real schema has passes, and their errors read as Ajv's.
    const real = tool({
      type: 'object',
      properties: { s: { type: 'string', minLength: 1, maxLength: 2_000_000, pattern: '^[a-z:]+$', format: 'uri' }, t: { type: 'string', minLength: 3 } },
    });
    expect((await validate(real, { s: `a:${'b'.repeat(1_000_000)}` })).errors).toEqual([]);
    expect((await validate(real, { s: 'a:b', t: 'é' })).errors).toEqual([{ path: 't', code: 'minLength', message: 't must NOT have fewer than 3 characters' }]);
  });

  it('charges a match on RE2 more than a step: 300 `patternProperties` over 60,000 names held the node 4.8 s within the budget', async () => {
    const matches = jest.spyOn(RE2JS.prototype, 'test');
    try {
      const names = 20_000;
      const args = Object.fromEntries(Array.from({ length: names }, (_, i) => [`k${i}`, 1]));
      const schema = tool({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        allOf: Array.from({ length: 300 }, () => ({ patternProperties: { '^k': {} } })),
        unevaluatedProperties: false,
      });
      expect((await validate(schema, args)).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
      // Each name is one value and one read of its own: the budget over MATCH_STEPS bounds the matches.
      expect(matches.mock.calls.length).toBeLessThan((WORK_FLOOR + (WORK_PER_VALUE + STRING_READS) * (names + 1)) / MATCH_STEPS);
    } finally {
      matches.mockRestore();
    }
  });

  it('charges `minProperties` and `maxProperties` a step a name: 3,000 of them over 10,000 names held the node 3.1 s', async () => {
    const o = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, 1]));
    const many = tool({ type: 'object', properties: { o: { allOf: Array.from({ length: 3000 }, (_, i) => ({ minProperties: i })) } } });
    expect((await validate(many, { o })).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
    const real = tool({ type: 'object', properties: { o: { type: 'object', minProperties: 1, maxProperties: 20_000 }, p: { maxProperties: 2 } } });
    expect((await validate(real, { o })).errors).toEqual([]);
    expect((await validate(real, { o, p: { a: 1, b: 2, c: 3 } })).errors).toEqual([
      { path: 'p', code: 'maxProperties', message: 'p must NOT have more than 2 properties' },
    ]);
  });

  it('real schemas built of $refs pass: recursion through the arguments, and a union of referenced types over thousands of items', async () => {
    const tree = tool({
      type: 'object',
      $defs: {
        node: { type: 'object', properties: { left: { $ref: '#/$defs/node' }, right: { $ref: '#/$defs/node' }, v: { type: 'integer' } }, required: ['v'] },
      },
      properties: { root: { $ref: '#/$defs/node' } },
    });
    const full = (n: number): Record<string, unknown> => (n === 0 ? { v: 0 } : { v: n, left: full(n - 1), right: full(n - 1) });
    expect((await validate(tree, { root: full(14) })).errors).toEqual([]);
    expect((await validate(tree, { root: { v: 1, left: { right: { v: 'x' } } } })).errors.map((e) => e.path).sort()).toEqual([
      'root.left.right.v',
      'root.left.v',
    ]);
    // Forty block types, each referring to shared definitions, checked in full (allErrors) for each of 2,000 blocks.
    const $defs: Record<string, unknown> = {
      meta: { type: 'object', properties: { tags: { type: 'array', items: { $ref: '#/$defs/tag' } }, owner: { $ref: '#/$defs/user' } } },
      tag: { type: 'string', maxLength: 20 },
      user: { type: 'object', properties: { id: { type: 'string' }, manager: { $ref: '#/$defs/user' } }, required: ['id'] },
    };
    const kinds = Array.from({ length: 40 }, (_, i) => `kind${i}`);
    for (const k of kinds)
      $defs[k] = { type: 'object', properties: { type: { const: k }, meta: { $ref: '#/$defs/meta' }, text: { type: 'string' } }, required: ['type'] };
    const blocks = tool({ type: 'object', $defs, properties: { blocks: { type: 'array', items: { anyOf: kinds.map((k) => ({ $ref: `#/$defs/${k}` })) } } } });
    const block = (i: number) => ({ type: `kind${i % 40}`, text: 't', meta: { tags: ['a', 'b'], owner: { id: 'u', manager: { id: 'm' } } } });
    expect((await validate(blocks, { blocks: Array.from({ length: 2000 }, (_, i) => block(i)) })).errors).toEqual([]);
    expect((await validate(blocks, { blocks: [block(1), { type: 'nope' }] })).errors.length).toBeGreaterThan(0);
  });

  it("validates a tool against its own server's schema only: another organization's `$id` neither blocks nor answers it", async () => {
    const id = 'https://schemas.example.com/search';
    // Organization A's server, then organization B's, list the same `$id` with different schemas; C's refers to it.
    const a = tool({ $id: id, type: 'object', properties: { q: { type: 'string' } } }, 'digest-a', '00000000-0000-4000-8000-00000000000a');
    const b = tool({ $id: id, type: 'object', properties: { q: { type: 'number' } } }, 'digest-b', '00000000-0000-4000-8000-00000000000b');
    const c = tool({ type: 'object', properties: { q: { $ref: `${id}#/properties/q` } } }, 'digest-c', '00000000-0000-4000-8000-00000000000c');
    expect((await validate(a, { q: 's' })).errors).toEqual([]);
    expect((await validate(a, { q: 1 })).errors).toEqual([expect.objectContaining({ path: 'q', code: 'type' })]);
    expect((await validate(b, { q: 1 })).errors).toEqual([]);
    expect((await validate(b, { q: 's' })).errors).toEqual([expect.objectContaining({ path: 'q', code: 'type' })]);
    // C's server never gave that schema: C's tool cannot be used, whatever A's said.
    expect((await validate(c, { q: 's' })).errors).toEqual([expect.objectContaining({ path: '', code: 'schema' })]);
    // Within one schema, its own `$id` and `$ref`s still resolve.
    const own = tool({ $id: id, type: 'object', properties: { q: { $ref: `${id}#/definitions/q` } }, definitions: { q: { type: 'integer' } } }, 'digest-own');
    expect((await validate(own, { q: 1 })).errors).toEqual([]);
    expect((await validate(own, { q: 's' })).errors).toEqual([expect.objectContaining({ path: 'q' })]);
  });
});
