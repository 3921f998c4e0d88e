import { randomUUID } from 'node:crypto';
import { bearer } from '../support/test-app';
import { assertRefusedAtEveryPosition, countRows, hardeningWorld, HardeningWorld } from '../support/hardening';

/**
 * Class 10: numbers past a double's range. `JSON.parse` makes `1e309` Infinity without a word:
 * a tool call with an Idempotency-Key, an MCP tool's number argument and an approval's edited
 * arguments answered 500 (RFC 8785 hashing has no Infinity), and a free-form object (document
 * metadata, a draft's capability config) stored `null` where the client sent a number. A body
 * holding one is refused at parse: 400 invalid_request naming the path, nothing written.
 */
const OUT_OF_RANGE = ['1e309', '-1e309', '1E+400', '2.5e99999', '9'.repeat(400), `-${'2'.repeat(309)}.5`];

/** The JSON text of `body` with the string at `at` replaced by the number literal `literal`. */
function withNumber(body: unknown, at: string[], literal: string): string {
  const marker = `__number_${randomUUID()}__`;
  const set = (value: unknown, path: string[]): unknown =>
    path.length === 0
      ? marker
      : Array.isArray(value)
        ? value.map((v, i) => (String(i) === path[0] ? set(v, path.slice(1)) : v))
        : { ...(value as object), [path[0]]: set((value as Record<string, unknown>)[path[0]], path.slice(1)) };
  return JSON.stringify(set(body, at)).replace(`"${marker}"`, literal);
}

function leafPaths(value: unknown, at: string[] = []): string[][] {
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...at, k]));
  return [at];
}

jest.setTimeout(180_000);

describe('numbers past the range of a double are refused, never stored as null or answered 500', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 180_000);
  afterAll(() => h.t.close());

  const post = (path: string, body: string, token: string, headers: Record<string, string> = {}) => {
    const req = h.t.http
      .post(path)
      .set(...bearer(token))
      .set('Content-Type', 'application/json');
    for (const [k, v] of Object.entries(headers)) req.set(k, v);
    return req.send(body);
  };

  it("in any value of any write route's body: 400 naming the path, nothing written, no tool run", async () => {
    await assertRefusedAtEveryPosition(h, {
      positions: (body) => leafPaths(body).filter((at) => at.length > 0),
      values: OUT_OF_RANGE,
      inject: withNumber,
      code: 'number_out_of_range',
      min: { cases: 15 },
    });
  });

  it('in free-form objects (metadata, a capability config) and in keyed tool calls: refused, never stored as null', async () => {
    const builder = h.world.org.keys.builder;
    const docs = `/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents`;
    const documents = await countRows(h.ds, 'knowledge_document');
    const meta = await post(docs, '{"title":"t","content":"c","metadata":{"n":1,"deep":[{"x":1e400}]}}', builder).expect(400);
    expect(meta.body.errors).toEqual([expect.objectContaining({ path: 'metadata.deep[0].x', code: 'number_out_of_range' })]);
    expect(await countRows(h.ds, 'knowledge_document')).toBe(documents);

    const agent = `/api/v1/agents/${h.agentId}`;
    const stored = (
      await h.t.http
        .get(agent)
        .set(...bearer(builder))
        .expect(200)
    ).body.draft;
    const config = await h.t.http
      .put(`${agent}/draft`)
      .set(...bearer(builder))
      .set('Content-Type', 'application/json')
      .send('{"instructions":"x","capabilities":[{"id":"budget","config":{"maxToolCallsPerRun":1e309}}]}')
      .expect(400);
    expect(config.body.errors[0]).toMatchObject({ path: 'capabilities[0].config.maxToolCallsPerRun', code: 'number_out_of_range' });
    expect(
      (
        await h.t.http
          .get(agent)
          .set(...bearer(builder))
          .expect(200)
      ).body.draft,
    ).toEqual(stored);

    const calls = await countRows(h.ds, 'tool_call');
    const keyed = await post(
      `/api/v1/agents/${h.agentId}/tool-calls`,
      '{"tool":"search_knowledge","arguments":{"query":"q","limit":-1e309}}',
      h.world.org.keys.agent,
      {
        'Idempotency-Key': randomUUID(),
      },
    ).expect(400);
    expect(keyed.body.errors[0]).toMatchObject({ path: 'arguments.limit', code: 'number_out_of_range' });
    expect(await countRows(h.ds, 'tool_call')).toBe(calls);
  });

  it('numbers a double holds, however written, are still numbers: the largest, the smallest, 2^53 + 1, an underflow to 0', async () => {
    const docs = `/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents`;
    const res = await post(
      docs,
      '{"title":"t","content":"c","metadata":{"max":1.7976931348623157e308,"min":-1.7976931348623157E+308,"tiny":5e-324,"under":1e-400,"big":9007199254740993,"e":"1e309 in words"}}',
      h.world.org.keys.builder,
    ).expect(201);
    expect(res.body.metadata).toEqual({ max: Number.MAX_VALUE, min: -Number.MAX_VALUE, tiny: 5e-324, under: 0, big: 9007199254740992, e: '1e309 in words' });
  });
});
