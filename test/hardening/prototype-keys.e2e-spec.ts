import fc from 'fast-check';
import { bearer } from '../support/test-app';
import { hardeningWorld, HardeningWorld, isProblem } from '../support/hardening';

/**
 * Issue 13, class 3: keys named like Object.prototype members. class-transformer skipped them and
 * Nest's ValidationPipe deleted `__proto__` and `constructor`: in free-form objects (document
 * metadata, a capability's config, `toolApproval`, `toolOverrides`) they were silently dropped, and
 * at the top level of a body, in tool arguments or in a query string they slipped past the
 * unknown-property check. Kept as data where a free-form object is allowed; refused like any
 * unknown key where it is not; never dropped.
 */
const PROTO_KEYS = [
  'constructor',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__proto__',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  'prototype',
  'get',
  'set',
  'has',
  'size',
  'entries',
];
const protoKey = fc.constantFrom(...PROTO_KEYS);
const jsonValue = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constant({ nested: 1 }));

/** A JSON text with `key` as an own key: a JavaScript object literal would set the prototype for `__proto__`. */
const objectWith = (key: string, valueJson: string, rest = '') => `{${rest}${rest ? ',' : ''}${JSON.stringify(key)}:${valueJson}}`;

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('keys named like Object.prototype members', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 180_000);
  afterAll(() => h.t.close());

  it('are kept as data in document metadata, read back exactly', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(protoKey, { minLength: 1, maxLength: 4 }), fc.array(jsonValue, { minLength: 4, maxLength: 4 }), async (keys, values) => {
        const metadata = `{${keys.map((k, i) => `${JSON.stringify(k)}:${JSON.stringify(values[i])}`).join(',')}}`;
        const created = await h.t.http
          .post(`/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents`)
          .set(...bearer(h.world.org.keys.builder))
          .set('Content-Type', 'application/json')
          .send(`{"title":"t","content":"c","metadata":${metadata}}`)
          .expect(201);
        const read = await h.t.http
          .get(`/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents/${created.body.id}`)
          .set(...bearer(h.world.org.keys.viewer))
          .expect(200);
        // jsonb keeps keys in its own order; every key and value must be there, as own data.
        const stored = JSON.parse(read.text).metadata;
        const sent = JSON.parse(metadata);
        expect(Object.keys(stored).sort()).toEqual(Object.keys(sent).sort());
        for (const k of Object.keys(sent)) expect([k, Object.getOwnPropertyDescriptor(stored, k)?.value]).toEqual([k, sent[k]]);
      }),
      { numRuns: 15 },
    );
  });

  it('are kept in a draft (config, toolApproval, toolOverrides) and judged at validate, never dropped', async () => {
    await fc.assert(
      fc.asyncProperty(protoKey, async (key) => {
        const k = JSON.stringify(key);
        const draft = `{"instructions":"x","capabilities":[{"id":"knowledge","config":{${k}:1}}],"toolApproval":{${k}:"required"},"toolOverrides":{${k}:{"name":"renamed"}}}`;
        const saved = await h.t.http
          .put(`/api/v1/agents/${h.agentId}/draft`)
          .set(...bearer(h.world.org.keys.builder))
          .set('Content-Type', 'application/json')
          .send(draft)
          .expect(200);
        const spec = JSON.parse(saved.text).draft;
        expect(Object.keys(spec.capabilities[0].config)).toEqual([key]);
        expect(Object.keys(spec.toolApproval)).toEqual([key]);
        expect(Object.keys(spec.toolOverrides)).toEqual([key]);
        const validate = await h.t.http
          .post(`/api/v1/agents/${h.agentId}/draft/validate`)
          .set(...bearer(h.world.org.keys.builder))
          .expect(200);
        const paths = validate.body.errors.map((e: { path: string; code: string }) => `${e.code} ${e.path}`);
        expect(paths).toEqual(
          expect.arrayContaining([`invalid_config capabilities[0].config.${key}`, `unknown_tool toolApproval.${key}`, `unknown_tool toolOverrides.${key}`]),
        );
      }),
      { numRuns: PROTO_KEYS.length },
    );
  });

  it('are unknown properties at the top of a body, in tool arguments and in a query string', async () => {
    await fc.assert(
      fc.asyncProperty(protoKey, jsonValue, async (key, value) => {
        const body = await h.t.http
          .post('/api/v1/knowledge/collections')
          .set(...bearer(h.world.org.keys.builder))
          .set('Content-Type', 'application/json')
          .send(objectWith(key, JSON.stringify(value), '"name":"n"'));
        expect([key, body.status, body.body.errors?.[0]]).toEqual([key, 400, { path: key, code: 'unknown_property', message: expect.any(String) }]);
        expect(isProblem(body)).toBe(true);

        const args = await h.t.http
          .post(`/api/v1/agents/${h.agentId}/tool-calls`)
          .set(...bearer(h.world.org.keys.agent))
          .set('Content-Type', 'application/json')
          .send(`{"tool":"search_knowledge","arguments":${objectWith(key, JSON.stringify(value), '"query":"refunds"')}}`);
        expect([key, args.status, args.body.code, args.body.errors?.[0]?.path]).toEqual([key, 422, 'invalid_arguments', `arguments.${key}`]);

        // Nothing is looser over MCP: the SDK's parse dropped `__proto__` from the arguments, and the call ran.
        const rpc = await h.t.http
          .post(`/api/v1/agents/${h.agentId}/mcp`)
          .set(...bearer(h.world.org.keys.agent))
          .set('Accept', 'application/json, text/event-stream')
          .set('Content-Type', 'application/json')
          .send(
            `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_knowledge","arguments":${objectWith(key, JSON.stringify(value), '"query":"refunds"')}}}`,
          );
        const message = JSON.parse(
          rpc.text
            .split('\n')
            .find((line) => line.startsWith('data: '))!
            .slice('data: '.length),
        );
        expect([key, message.result?.isError, message.result?._meta?.['capability-platform/toolCall']?.errors?.[0]?.path]).toEqual([key, true, key]);

        const query = await h.t.http.get(`/api/v1/agents?${encodeURIComponent(key)}=1`).set(...bearer(h.world.org.keys.viewer));
        expect([key, query.status, query.body.errors?.[0]?.path]).toEqual([key, 400, key]);
      }),
      { numRuns: PROTO_KEYS.length * 2 },
    );
  });

  it('one level down (in an unknown property, under a property that is not an object, in a list) are a 400 or 422 naming the field, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(protoKey, jsonValue, async (key, value) => {
        const inner = objectWith(key, JSON.stringify(value));
        const body = await h.t.http
          .post('/api/v1/knowledge/collections')
          .set(...bearer(h.world.org.keys.builder))
          .set('Content-Type', 'application/json')
          .send(`{"name":"n","x":${inner},"y":[${inner}]}`);
        expect([key, body.status, body.body.errors?.map((e: { path: string }) => e.path)]).toEqual([key, 400, ['x', 'y']]);

        const args = await h.t.http
          .post(`/api/v1/agents/${h.agentId}/tool-calls`)
          .set(...bearer(h.world.org.keys.agent))
          .set('Content-Type', 'application/json')
          .send(`{"tool":"search_knowledge","arguments":{"query":${inner}}}`);
        expect([key, args.status, args.body.code, args.body.errors?.[0]?.path]).toEqual([key, 422, 'invalid_arguments', 'arguments.query']);

        await h.t.http
          .put(`/api/v1/agents/${h.agentId}/draft`)
          .set(...bearer(h.world.org.keys.builder))
          .set('Content-Type', 'application/json')
          .send(`{"instructions":"x","capabilities":[{"id":"knowledge","config":{"maxResults":${inner}}}]}`)
          .expect(200);
        const validate = await h.t.http
          .post(`/api/v1/agents/${h.agentId}/draft/validate`)
          .set(...bearer(h.world.org.keys.builder))
          .expect(200);
        expect([key, validate.body.errors.map((e: { path: string }) => e.path)]).toEqual([key, ['capabilities[0].config.maxResults']]);
      }),
      { numRuns: PROTO_KEYS.length },
    );
  });

  it('never change the prototype of what is stored', async () => {
    const res = await h.t.http
      .post(`/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents`)
      .set(...bearer(h.world.org.keys.builder))
      .set('Content-Type', 'application/json')
      .send('{"title":"t","content":"c","metadata":{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"polluted":true}}}}')
      .expect(201);
    const metadata = JSON.parse(res.text).metadata;
    expect(Object.keys(metadata).sort()).toEqual(['__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(metadata, '__proto__')?.value).toEqual({ isAdmin: true });
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
