import type { VersionTool } from '../agents/built-version';
import { testConfig } from '../../test/support/test-app';
import { McpToolResolver } from './mcp-tool.resolver';
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

describe('McpToolResolver.validate', () => {
  const resolver = new McpToolResolver({} as never, {} as never, testConfig());
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

  it('accepts arguments the listed schema accepts, as they are', () => {
    expect(resolver.validate(tool(schema), { id: 'a', items: [{ n: 1 }] })).toEqual({
      value: { id: 'a', items: [{ n: 1 }] },
      plain: { id: 'a', items: [{ n: 1 }] },
      errors: [],
    });
  });

  it('names each problem at its path', () => {
    const { errors } = resolver.validate(tool(schema), { items: [{ n: 'x' }, {}], when: 'yesterday', extra: 1 });
    expect(errors.map((e) => e.path).sort()).toEqual(['extra', 'id', 'items[0].n', 'items[1].n', 'when']);
  });

  it('refuses what is not an object', () => {
    for (const args of [null, [], 'x', 3])
      expect(resolver.validate(tool(schema), args).errors).toEqual([{ path: '', code: 'type', message: 'must be an object' }]);
  });

  it('reads draft 2020-12 schemas too', () => {
    const s2020 = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { t: { type: 'array', prefixItems: [{ type: 'string' }] } },
    };
    expect(resolver.validate(tool(s2020), { t: ['a'] }).errors).toEqual([]);
    expect(resolver.validate(tool(s2020), { t: [1] }).errors.map((e) => e.path)).toEqual(['t[0]']);
  });

  it('a schema that cannot be compiled validates nothing: every call is refused', () => {
    const broken = { type: 'object', properties: { a: { type: 'no-such-type' } } };
    expect(resolver.validate(tool(broken), { a: 1 }).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
  });

  it('applies a pattern; one that backtracks on V8 matches in linear time, and one RE2 cannot run makes the schema unusable', () => {
    const safe = tool({ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' } } });
    expect(resolver.validate(safe, { code: 'ABC-1234' }).errors).toEqual([]);
    expect(resolver.validate(safe, { code: 'abc' }).errors).toEqual([expect.objectContaining({ path: 'code', code: 'pattern' })]);
    // Nested quantifiers: on a backtracking engine each character more doubles the work (31 held the node 15 s).
    const nested = tool({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    expect(resolver.validate(nested, { s: 'a'.repeat(100_000) }).errors).toEqual([]);
    expect(resolver.validate(nested, { s: `${'a'.repeat(100_000)}!` }).errors).toEqual([expect.objectContaining({ path: 's', code: 'pattern' })]);
    // safe-regex2 let these through: quadratic (150,000 spaces held the node 21 s) and exponential (29 characters, 5 s).
    const common = tool({
      type: 'object',
      properties: { q: { type: 'string', pattern: '\\s+$' }, g: { type: 'string', pattern: '^(a|a)*$' }, w: { type: 'string', pattern: '(\\w|\\d)*x$' } },
      patternProperties: { '^(x+x+)+y$': { type: 'string' } },
    });
    const errors = resolver.validate(common, {
      q: `${' '.repeat(150_000)}x`,
      g: `${'a'.repeat(100_000)}!`,
      w: 'a'.repeat(100_000),
      ['x'.repeat(100_000)]: 1,
    }).errors;
    expect(errors.map((e) => `${e.path} ${e.code}`).sort()).toEqual(['g pattern', 'q pattern', 'w pattern']);
    expect(resolver.validate(common, { q: 'trailing ', g: 'aaa', w: 'abx', xxy: 1 }).errors.map((e) => e.path)).toEqual(['xxy']);
    // JavaScript spellings RE2 does not have are translated.
    const unicode = tool({ type: 'object', properties: { n: { type: 'string', pattern: '^[\\u00e9\\p{L}]+\\/\\d{2,30}$' } } });
    expect(resolver.validate(unicode, { n: 'été/42' }).errors).toEqual([]);
    expect(resolver.validate(unicode, { n: 'été/4' }).errors).toEqual([expect.objectContaining({ path: 'n', code: 'pattern' })]);
    for (const unrunnable of ['^(?=.*[A-Z]).{8,}$', '^(a)\\1$']) {
      const t = tool({ type: 'object', properties: { p: { type: 'string', pattern: unrunnable } } });
      expect(resolver.validate(t, { p: 'Password1' }).errors).toEqual([
        { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: the pattern .* cannot be matched in linear time/) },
      ]);
    }
  });

  it('checks `format: "url"` in linear time, as ajv-formats would answer (its expression held the node 27 s on 200 KB)', () => {
    const t = tool({ type: 'object', properties: { link: { type: 'string', format: 'url' } } });
    expect(resolver.validate(t, { link: 'https://user:pw@example.com:8443/a?b=c' }).errors).toEqual([]);
    expect(resolver.validate(t, { link: 'http://10.0.0.1/' }).errors).toEqual([expect.objectContaining({ path: 'link', code: 'format' })]);
    expect(resolver.validate(t, { link: `http://${'::'.repeat(200_000)}` }).errors).toEqual([expect.objectContaining({ path: 'link', code: 'format' })]);
  });

  it('finds duplicates among objects in one pass, whatever the key order; distinct items pass', () => {
    const tags = tool({ type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } });
    expect(
      resolver.validate(tags, {
        tags: [
          { a: 1, b: [1, 2] },
          { b: [1, 2], a: 1.0 },
        ],
      }).errors,
    ).toEqual([expect.objectContaining({ path: 'tags', code: 'uniqueItems' })]);
    expect(resolver.validate(tags, { tags: [{ a: 1 }, { a: '1' }, [1], 1, '1', null] }).errors).toEqual([]);
    // 30,000 objects compared pair by pair held the node 26 s.
    expect(resolver.validate(tags, { tags: Array.from({ length: 30_000 }, (_, i) => ({ a: i })) }).errors).toEqual([]);
    const off = tool({ type: 'object', properties: { tags: { type: 'array', uniqueItems: false } } });
    expect(resolver.validate(off, { tags: [1, 1] }).errors).toEqual([]);
  });

  it('a schema whose $refs multiply cannot be used: its calls are refused, in bounded work, whatever the depth', () => {
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
    expect(resolver.validate(doubling(20), {}).errors).toEqual(refused);
    expect(resolver.validate(doubling(64), { any: 'thing' }).errors).toEqual(refused);
    // The same doubling through a property grows with the arguments' depth.
    const nested = tool({ type: 'object', properties: { a: { allOf: [{ $ref: '#' }, { $ref: '#' }] } } });
    const deep = (n: number): Record<string, unknown> => (n === 0 ? {} : { a: deep(n - 1) });
    expect(resolver.validate(nested, deep(5)).errors).toEqual([]);
    expect(resolver.validate(nested, deep(40)).errors).toEqual(refused);
    // A reference to itself in place never ends (it overflowed the stack: a 500).
    for (const endless of [
      { type: 'object', allOf: [{ $ref: '#' }] },
      { type: 'object', $defs: { x: { $ref: '#/$defs/x' } }, properties: { p: { $ref: '#/$defs/x' } } },
    ]) {
      expect(resolver.validate(tool(endless), { p: 1 }).errors).toEqual([
        { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: it refers to itself without end/) },
      ]);
    }
    // A chain kept where no schema is expected (a `default`), reached by a JSON pointer, is counted all the same.
    expect(resolver.validate(doubling(40, 'default'), {}).errors).toEqual(refused);
  });

  it('counts the turns of loops too: a multiplied definition that walks every property reads the arguments a bounded number of times', () => {
    const defs: Record<string, unknown> = { d0: { type: 'object', additionalProperties: { type: 'string', minLength: 1 } } };
    for (let i = 1; i <= 20; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/definitions/d${i - 1}` }, { $ref: `#/definitions/d${i - 1}` }] };
    const walking = tool({ type: 'object', definitions: defs, allOf: [{ $ref: '#/definitions/d20' }] });
    const values = 200;
    let reads = 0;
    const args = new Proxy(Object.fromEntries(Array.from({ length: values }, (_, i) => [`k${i}`, 'v'])), {
      get: (target, key) => (reads++, Reflect.get(target, key)),
    });
    expect(resolver.validate(walking, args).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
    // Each read is a turn of a loop or an entry of a function, and those are what the budget counts.
    expect(reads).toBeLessThan(2 * (WORK_FLOOR + WORK_PER_VALUE * (values + 1)));
  });

  it("counts a union's branches and the errors they make: 1,000 branches over 30 KB of arguments held the node 9.8 s and kept 3 million errors", () => {
    const branches = Array.from({ length: 1000 }, (_, i) => ({ const: [0, 0, 0, i + 1] }));
    const items = Array.from({ length: 1000 }, () => [0, 0, 0, 0]);
    // No branch passes: every item kept an error of each, a million of them; now at most MAX_ERRORS are held, and the answer says so.
    const none = tool({ type: 'object', properties: { x: { type: 'array', items: { anyOf: branches } } } });
    expect(resolver.validate(none, { x: items }).errors).toEqual([{ path: '', code: 'errors', message: `arguments have more than ${MAX_ERRORS} problems` }]);
    // The last branch passes: each item made and dropped 1,000 errors, within one step of the budget.
    const last = tool({ type: 'object', properties: { x: { type: 'array', items: { anyOf: [...branches, { type: 'array' }] } } } });
    expect(resolver.validate(last, { x: items }).errors).toEqual([
      { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: checking these arguments against it takes more than/) },
    ]);
    expect(resolver.validate(last, { x: items.slice(0, 5) }).errors).toEqual([]);
  });

  it('charges each read of a string by its length: 3,000 `minLength`s over 500,000 characters held the node 6.4 s', () => {
    const text = 'é'.repeat(500_000);
    const lengths = tool({ type: 'object', properties: { s: { allOf: Array.from({ length: 3000 }, (_, i) => ({ minLength: i })) } } });
    expect(resolver.validate(lengths, { s: text }).errors).toEqual([
      { path: '', code: 'schema', message: expect.stringMatching(/cannot be used: checking these arguments against it takes more than/) },
    ]);
    const formats = tool({ type: 'object', properties: { s: { allOf: Array.from({ length: 3000 }, () => ({ format: 'uri' })) } } });
    expect(resolver.validate(formats, { s: `a:${'b'.repeat(1_000_000)}` }).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
    // A long string read by the few keywords a real schema has passes, and their errors read as Ajv's.
    const real = tool({
      type: 'object',
      properties: { s: { type: 'string', minLength: 1, maxLength: 2_000_000, pattern: '^[a-z:]+$', format: 'uri' }, t: { type: 'string', minLength: 3 } },
    });
    expect(resolver.validate(real, { s: `a:${'b'.repeat(1_000_000)}` }).errors).toEqual([]);
    expect(resolver.validate(real, { s: 'a:b', t: 'é' }).errors).toEqual([
      { path: 't', code: 'minLength', message: 't must NOT have fewer than 3 characters' },
    ]);
  });

  it('charges a match on RE2 more than a step: 300 `patternProperties` over 60,000 names held the node 4.8 s within the budget', () => {
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
      expect(resolver.validate(schema, args).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
      // Each name is one value and one read of its own: the budget over MATCH_STEPS bounds the matches.
      expect(matches.mock.calls.length).toBeLessThan((WORK_FLOOR + (WORK_PER_VALUE + STRING_READS) * (names + 1)) / MATCH_STEPS);
    } finally {
      matches.mockRestore();
    }
  });

  it('charges `minProperties` and `maxProperties` a step a name: 3,000 of them over 10,000 names held the node 3.1 s', () => {
    const o = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, 1]));
    const many = tool({ type: 'object', properties: { o: { allOf: Array.from({ length: 3000 }, (_, i) => ({ minProperties: i })) } } });
    expect(resolver.validate(many, { o }).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
    const real = tool({ type: 'object', properties: { o: { type: 'object', minProperties: 1, maxProperties: 20_000 }, p: { maxProperties: 2 } } });
    expect(resolver.validate(real, { o }).errors).toEqual([]);
    expect(resolver.validate(real, { o, p: { a: 1, b: 2, c: 3 } }).errors).toEqual([
      { path: 'p', code: 'maxProperties', message: 'p must NOT have more than 2 properties' },
    ]);
  });

  it('a schema Ajv cannot compile is refused without its generated code written to the console', () => {
    const written = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const logged = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      // Refused once Ajv has written its code (`$async`); a union nested past V8's parser is refused at the same point.
      const unusable = tool({ $async: true, type: 'object', properties: { x: { anyOf: Array.from({ length: 300 }, (_, i) => ({ const: i + 1 })) } } });
      expect(resolver.validate(unusable, { x: 1 }).errors).toEqual([expect.objectContaining({ code: 'schema' })]);
      expect([written.mock.calls.length, logged.mock.calls.length]).toEqual([0, 0]);
    } finally {
      written.mockRestore();
      logged.mockRestore();
    }
  });

  it('real schemas built of $refs pass: recursion through the arguments, and a union of referenced types over thousands of items', () => {
    const tree = tool({
      type: 'object',
      $defs: {
        node: { type: 'object', properties: { left: { $ref: '#/$defs/node' }, right: { $ref: '#/$defs/node' }, v: { type: 'integer' } }, required: ['v'] },
      },
      properties: { root: { $ref: '#/$defs/node' } },
    });
    const full = (n: number): Record<string, unknown> => (n === 0 ? { v: 0 } : { v: n, left: full(n - 1), right: full(n - 1) });
    expect(resolver.validate(tree, { root: full(14) }).errors).toEqual([]);
    expect(
      resolver
        .validate(tree, { root: { v: 1, left: { right: { v: 'x' } } } })
        .errors.map((e) => e.path)
        .sort(),
    ).toEqual(['root.left.right.v', 'root.left.v']);
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
    expect(resolver.validate(blocks, { blocks: Array.from({ length: 2000 }, (_, i) => block(i)) }).errors).toEqual([]);
    expect(resolver.validate(blocks, { blocks: [block(1), { type: 'nope' }] }).errors.length).toBeGreaterThan(0);
  });

  it("validates a tool against its own server's schema only: another organization's `$id` neither blocks nor answers it", () => {
    const id = 'https://schemas.example.com/search';
    // Organization A's server, then organization B's, list the same `$id` with different schemas; C's refers to it.
    const a = tool({ $id: id, type: 'object', properties: { q: { type: 'string' } } }, 'digest-a', '00000000-0000-4000-8000-00000000000a');
    const b = tool({ $id: id, type: 'object', properties: { q: { type: 'number' } } }, 'digest-b', '00000000-0000-4000-8000-00000000000b');
    const c = tool({ type: 'object', properties: { q: { $ref: `${id}#/properties/q` } } }, 'digest-c', '00000000-0000-4000-8000-00000000000c');
    expect(resolver.validate(a, { q: 's' }).errors).toEqual([]);
    expect(resolver.validate(a, { q: 1 }).errors).toEqual([expect.objectContaining({ path: 'q', code: 'type' })]);
    expect(resolver.validate(b, { q: 1 }).errors).toEqual([]);
    expect(resolver.validate(b, { q: 's' }).errors).toEqual([expect.objectContaining({ path: 'q', code: 'type' })]);
    // C's server never gave that schema: C's tool cannot be used, whatever A's said.
    expect(resolver.validate(c, { q: 's' }).errors).toEqual([expect.objectContaining({ path: '', code: 'schema' })]);
    // Within one schema, its own `$id` and `$ref`s still resolve.
    const own = tool({ $id: id, type: 'object', properties: { q: { $ref: `${id}#/definitions/q` } }, definitions: { q: { type: 'integer' } } }, 'digest-own');
    expect(resolver.validate(own, { q: 1 }).errors).toEqual([]);
    expect(resolver.validate(own, { q: 's' }).errors).toEqual([expect.objectContaining({ path: 'q' })]);
  });
});
