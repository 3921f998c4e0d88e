import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { connect } from 'node:net';
import { MAX_PARAM_LENGTH } from '../../src/app.factory';
import { bearer, createTestApp, TestApp } from '../support/test-app';

/**
 * Issue 13, class 7: every error is a problem document. Fastify's router refused over-long and
 * malformed path segments with its own JSON, without `x-request-id`; the HTTP parser's refusals
 * had no request id either.
 */
// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('refusals of the router and the HTTP parser are problem documents with a request id', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterAll(() => t.close());

  const badSegment = fc.oneof(
    fc.constantFrom('%', '%z', '%zz', '%E0%A4%A', '%C0%AF', '%ED%A0%80', '%FF', '%E2%82', 'a%', '%%'),
    fc.tuple(fc.string({ maxLength: 5 }).map(encodeURIComponent), fc.constantFrom('%', '%g1', '%C3')).map(([a, b]) => a + b),
  );
  const prefixes = ['/api/v1/agents/', '/api/v1/tool-calls/', '/api/v1/approvals/', '/api/v1/knowledge/collections/', '/api/v1/skills/', '/api/v1/orgs/'];

  it('a path segment that does not decode: 400 problem+json with x-request-id', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...prefixes), badSegment, async (prefix, segment) => {
        const res = await t.http.get(prefix + segment).set(...bearer('anything'));
        expect([prefix + segment, res.status, res.headers['content-type']?.split(';')[0]]).toEqual([prefix + segment, 400, 'application/problem+json']);
        expect(res.body).toMatchObject({
          status: 400,
          code: 'invalid_request',
          type: expect.any(String),
          title: expect.any(String),
          detail: expect.any(String),
        });
        expect(res.headers['x-request-id']).toEqual(expect.any(String));
        expect(res.headers['x-content-type-options']).toBe('nosniff');
      }),
      { numRuns: 40 },
    );
  });

  it("an over-long path segment: 414 uri_too_long, problem+json with x-request-id (also the caller's own id)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...prefixes), fc.integer({ min: MAX_PARAM_LENGTH + 1, max: MAX_PARAM_LENGTH + 4000 }), async (prefix, length) => {
        const res = await t.http
          .get(prefix + 'a'.repeat(length))
          .set('x-request-id', 'trace-123')
          .set(...bearer('anything'));
        expect([prefix, length, res.status, res.body.code]).toEqual([prefix, length, 414, 'uri_too_long']);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['x-request-id']).toBe('trace-123');
        expect(res.headers['x-content-type-options']).toBe('nosniff');
      }),
      { numRuns: 20 },
    );
  });

  it("a segment as long as an MCP tool's encoded id (`<connection>%2F<tool>`, 1,602 characters at most) reaches its route", async () => {
    const longest = `${'c'.repeat(63)}%2F${encodeURIComponent('\u{1F600}'.repeat(128))}`;
    expect(longest.length).toBeLessThanOrEqual(MAX_PARAM_LENGTH);
    for (const segment of [`${'c'.repeat(63)}%2F${'get_customer_purchase_history_by_email'}`, longest]) {
      for (const path of [`/api/v1/tools/mcp/${segment}/disabled`, `/api/v1/mcp-connections/${randomUUID()}/tools/${segment}/risk`]) {
        // A bad token: refused by authentication, which only a routed request reaches.
        const res = await t.http
          .put(path)
          .set(...bearer('anything'))
          .send({});
        expect([path.length, res.status, res.body.code]).toEqual([path.length, 401, 'unauthorized']);
      }
    }
  });

  /** Raw HTTP: what the parser refuses never reaches the router, and supertest cannot send it. */
  function raw(request: string | Buffer): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let data = '';
      socket.on('data', (c) => (data += c.toString('latin1')));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
      socket.end(request);
    });
  }

  it.each([
    ['headers too large', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['a malformed request line', 'GET /health HTTP/9.Z\r\n\r\n', 400],
    ['a header without a colon', 'GET /health HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n', 400],
    ['a bad Content-Length', 'POST /api/v1/orgs HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n', 400],
    // Node answered these two itself, with no body at all.
    ['an HTTP/1.1 request without Host', 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n', 400],
    ['an Expect other than 100-continue', 'GET /health HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n', 417],
  ])('%s: a problem document with x-request-id', async (_name, request, status) => {
    const answer = await raw(request as string);
    expect(answer.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    expect(answer).toMatch(/\r\nContent-Type: application\/problem\+json(; charset=utf-8)?\r\n/i);
    expect(answer).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
    expect(answer).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toMatchObject({ status, code: expect.any(String) });
  });
});
