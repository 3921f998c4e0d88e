import fc from 'fast-check';
import { bearer } from '../support/test-app';
import { countRows, hardeningWorld, HardeningWorld, isProblem } from '../support/hardening';

/**
 * Issue 13, class 8: MCP is no way around limits or validation.
 * - A JSON-RPC batch ran many tool calls under one rate-limited request: batches are refused.
 * - Invalid `tools/call` params answered -32603 with a raw validation dump: now -32602, short.
 * - The endpoint validates `Origin` against DNS rebinding (as the MCP conformance scenario
 *   `dns-rebinding-protection` checks: a foreign Host/Origin is 4xx, a loopback one is served);
 *   more origins can be allowed with MCP_ALLOWED_ORIGINS.
 */
const ACCEPT = 'application/json, text/event-stream';

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('MCP limits', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld({ config: { mcpAllowedOrigins: ['https://console.example.com'] } });
  }, 180_000);
  afterAll(() => h.t.close());

  const mcp = (body: string, headers: Record<string, string> = {}) => {
    let req = h.t.http
      .post(`/api/v1/agents/${h.agentId}/mcp`)
      .set(...bearer(h.world.org.keys.agent))
      .set('Accept', ACCEPT)
      .set('Content-Type', 'application/json');
    for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
    return req.send(body);
  };
  const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'search_knowledge', arguments: { query: 'refunds' } } });

  it('refuses a batch of any size with -32600 and runs nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 30 }), async (n) => {
        const calls = await countRows(h.ds, 'tool_call');
        const res = await mcp(JSON.stringify(Array.from({ length: n }, (_, i) => call(i + 1))));
        expect(res.status).toBe(400);
        expect(JSON.parse(res.text)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/batch/i) } });
        expect(await countRows(h.ds, 'tool_call')).toBe(calls);
      }),
      { numRuns: 8 },
    );
  });

  it('answers invalid tools/call params with -32602 and a short message', async () => {
    const badParams = fc.oneof(
      fc.record({ name: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string())) }),
      fc.record({ name: fc.constant('search_knowledge'), arguments: fc.oneof(fc.string(), fc.integer(), fc.array(fc.integer())) }),
      fc.constantFrom({}, { arguments: {} }),
    );
    await fc.assert(
      fc.asyncProperty(badParams, fc.integer({ min: 1, max: 1e6 }), async (params, id) => {
        const calls = await countRows(h.ds, 'tool_call');
        const res = await mcp(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }));
        const message = JSON.parse(res.text);
        expect(message).toEqual({ jsonrpc: '2.0', id, error: { code: -32602, message: expect.stringMatching(/^Invalid params/) } });
        expect(message.error.message.length).toBeLessThan(300);
        expect(await countRows(h.ds, 'tool_call')).toBe(calls);
      }),
      { numRuns: 20 },
    );
  });

  it('answers invalid initialize and tools/list params with -32602 and a short message, valid ones as before', async () => {
    for (const [method, params] of [
      ['initialize', undefined],
      ['initialize', { protocolVersion: '2025-06-18', capabilities: {} }],
      ['initialize', { protocolVersion: 5, capabilities: {}, clientInfo: { name: 'c', version: '1' } }],
      ['tools/list', { cursor: 5 }],
      ['tools/list', []],
    ] as const) {
      const res = await mcp(JSON.stringify({ jsonrpc: '2.0', id: 7, method, ...(params === undefined ? {} : { params }) }));
      const message = JSON.parse(res.text);
      expect([method, params, message]).toEqual([
        method,
        params,
        { jsonrpc: '2.0', id: 7, error: { code: -32602, message: expect.stringMatching(/^Invalid params/) } },
      ]);
      expect(message.error.message.length).toBeLessThan(300);
    }
    const fine = await mcp(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 8,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      }),
    );
    expect(fine.text).toContain('"protocolVersion"');
  });

  it('refuses a foreign Origin with 403 before anything runs; loopback and configured origins are served', async () => {
    const calls = await countRows(h.ds, 'tool_call');
    for (const origin of [
      'http://evil.example.com',
      'https://console.example.com.evil.net',
      'null',
      'http://127.0.0.1.nip.io',
      'https://console.example.com:444',
    ]) {
      const res = await mcp(JSON.stringify(call(1)), { Origin: origin, Host: 'evil.example.com' });
      expect([origin, res.status, res.body.code]).toEqual([origin, 403, 'origin_not_allowed']);
      expect(isProblem(res)).toBe(true);
    }
    expect(await countRows(h.ds, 'tool_call')).toBe(calls);
    for (const origin of ['http://127.0.0.1:3000', 'http://localhost:8080', 'http://[::1]:9', 'https://console.example.com']) {
      const res = await mcp(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { Origin: origin });
      expect([origin, res.status]).toEqual([origin, 200]);
    }
    const noOrigin = await mcp(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    expect(noOrigin.status).toBe(200);
  });
});
