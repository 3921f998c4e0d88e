import { bearer } from './support/test-app';
import { hardeningWorld, HardeningWorld } from './support/hardening';

/**
 * Attack round 19, Z-F1: what one refused call writes to the append-only audit log. The answer
 * lists up to 50 errors for the caller; the `tool_call.denied` event kept all of them, each with a
 * path of 300 and a message of 500 characters, so an agent key's refusals wrote up to 237 KB of
 * JSON each (argument names of control characters print six characters apiece) into a log nothing
 * trims.
 */
jest.setTimeout(120_000);

// Argument names each as long as an error's path keeps, of a character JSON prints as `\u0001`.
function controlNames(count: number): Record<string, number> {
  const args: Record<string, number> = { query: 0 };
  for (let i = 0; i < count; i++) args[`${String(i).padStart(3, '0')}${'\u0001'.repeat(400)}`] = 1;
  return args;
}

describe('the audit event of a refused call is bounded whatever the request held', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 120_000);
  afterAll(() => h.t.close());

  async function lastDenied(): Promise<{ data: Record<string, unknown>; stored: number; read: number }> {
    const events = await h.t.http
      .get('/api/v1/audit-events?type=tool_call.denied&limit=1')
      .set(...bearer(h.world.org.keys.admin))
      .expect(200);
    const item = events.body.items[0];
    const [row] = await h.ds.query<{ bytes: string }[]>(`SELECT octet_length(data::text) AS bytes FROM audit_event WHERE id = $1`, [item.id]);
    return { data: item.data, stored: Number(row.bytes), read: Buffer.byteLength(JSON.stringify(item.data)) };
  }

  it('keeps the first few errors and counts the rest, each cut, while the caller is answered 50', async () => {
    const res = await h.t.http
      .post(`/api/v1/agents/${h.agentId}/tool-calls`)
      .set(...bearer(h.world.org.keys.agent))
      .send({ tool: 'search_knowledge', arguments: controlNames(300) })
      .expect(422);
    expect(res.body.errors).toHaveLength(50);
    expect(res.body.errorsOmitted).toBeGreaterThan(0);
    const total = res.body.errors.length + res.body.errorsOmitted;

    const { data, stored, read } = await lastDenied();
    expect(data.code).toBe('invalid_arguments');
    const errors = data.errors as { path: string; message: string }[];
    expect(errors).toHaveLength(5);
    // The first entries the caller was answered, cut, and every other one counted.
    expect(errors[0].path.startsWith(res.body.errors[0].path.slice(0, 50))).toBe(true);
    expect((data.errors as unknown[]).length + (data.errorsOmitted as number)).toBe(total);
    for (const e of errors) expect(e.path.length + e.message.length).toBeLessThanOrEqual(400);
    expect(read).toBeLessThan(16_384);
    expect(stored).toBeLessThan(16_384);
  });

  it('records a refusal of a few errors whole', async () => {
    await h.t.http
      .post(`/api/v1/agents/${h.agentId}/tool-calls`)
      .set(...bearer(h.world.org.keys.agent))
      .send({ tool: 'search_knowledge', arguments: { query: 'refunds', extra: 1 } })
      .expect(422);
    const { data } = await lastDenied();
    expect(data.errors).toEqual([expect.objectContaining({ path: 'arguments.extra' })]);
    expect(data.errorsOmitted).toBeUndefined();
  });
});
