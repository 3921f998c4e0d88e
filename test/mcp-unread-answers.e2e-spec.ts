import { unsentAnswersOf, UnsentAnswers } from '../src/common/answer-budget';
import { McpFixturesModule } from './fixtures/mcp-fixtures.module';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 12, I-F2: an agent's MCP answers are written past Fastify's onSend, so the node's
 * budget of unsent answers (docs/security.md row 9d) did not count them: an MCP client that read
 * nothing held a `tools/list` (up to 20 MCP servers of 4 MiB each) or a large result in the node
 * however many it asked for. The endpoint now asks the same budget for every chunk it writes
 * (the budget's own behaviour: src/mcp/mcp-http.spec.ts, src/common/answer-budget.spec.ts).
 */
describe('MCP answers and the budget of unsent answers (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let agent: string;
  let budget: UnsentAnswers;

  beforeAll(async () => {
    t = await createTestApp({ imports: [McpFixturesModule] });
    org = await createOrg(t);
    agent = await publishAgent(t, org, 'unread-answers', { instructions: '', capabilities: [{ id: 'fx-mcp-notes' }] });
    const fastify = t.app.getHttpAdapter().getInstance();
    budget = unsentAnswersOf({ server: fastify } as never)!;
  }, 180_000);
  afterAll(() => t.close());

  const list = () =>
    t.http
      .post(`/api/v1/agents/${agent}/mcp`)
      .set(...bearer(org.keys.agent))
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

  it('asks the budget before it writes an answer, and answers 503 with Retry-After when it has no room', async () => {
    const admit = jest.spyOn(budget, 'admit');
    try {
      const served = await list();
      expect(served.status).toBe(200);
      const written = Buffer.byteLength(served.text);
      expect(admit.mock.calls.map(([, , size]) => size).reduce((a, b) => a + b, 0)).toBe(written);

      admit.mockReturnValue(false);
      const refused = await list();
      expect([refused.status, refused.headers['retry-after'], refused.headers['content-type'], refused.body.code]).toEqual([
        503,
        '1',
        expect.stringMatching(/^application\/problem\+json/),
        'service_unavailable',
      ]);
    } finally {
      admit.mockRestore();
    }
    expect((await list()).status).toBe(200);
  });
});
