import { DataSource } from 'typeorm';
import { MAX_PROGRESS_TOKEN_LENGTH } from '../src/mcp/mcp-guards';
import { McpFixturesModule } from './fixtures/mcp-fixtures.module';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 12, I-F1: every progress notification of a call held for a decision (about one a
 * second for MCP_APPROVAL_WAIT_SECONDS) echoes the request's `progressToken`, which MCP leaves
 * unbounded. Twenty held calls with a token of nearly 1 MiB whose clients read nothing grew the
 * node by about 40 MB a second (500 MB in 17 s), for the whole wait. A token longer than
 * MAX_PROGRESS_TOKEN_LENGTH is now -32602 before anything runs.
 */
describe('MCP progress tokens (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  let agent: string;

  beforeAll(async () => {
    t = await createTestApp({ imports: [McpFixturesModule], config: { mcpApprovalWaitSeconds: 1 } });
    ds = t.app.get(DataSource);
    org = await createOrg(t);
    agent = await publishAgent(t, org, 'progress-tokens', { instructions: '', capabilities: [{ id: 'fx-mcp-notes' }] });
  }, 180_000);
  afterAll(() => t.close());

  const post = (message: object) =>
    t.http
      .post(`/api/v1/agents/${agent}/mcp`)
      .set(...bearer(org.keys.agent))
      .set('Accept', 'application/json, text/event-stream')
      .send(message);
  const write = (progressToken: unknown, text: string) => ({
    jsonrpc: '2.0',
    id: 3,
    method: 'tools/call',
    params: { name: 'fx-mcp-write', arguments: { tag: 'progress', text }, _meta: { progressToken } },
  });
  const calls = async () => Number((await ds.query(`SELECT count(*) AS n FROM tool_call WHERE org_id = $1`, [org.id]))[0].n);
  const events = (text: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));

  it('refuses a longer progressToken with -32602 naming it, before anything is recorded', async () => {
    for (const length of [MAX_PROGRESS_TOKEN_LENGTH + 1, 1_000_000 - 300]) {
      const before = await calls();
      const res = await post(write('p'.repeat(length), `long ${length}`));
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text)).toEqual({
        jsonrpc: '2.0',
        id: 3,
        error: { code: -32602, message: `Invalid params: params._meta.progressToken: at most ${MAX_PROGRESS_TOKEN_LENGTH} characters` },
      });
      expect(await calls()).toBe(before);
    }
    // On any method: tools/list too.
    const list = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: { progressToken: 'p'.repeat(MAX_PROGRESS_TOKEN_LENGTH + 1) } } });
    expect(JSON.parse(list.text).error).toMatchObject({ code: -32602 });
  });

  it('serves a token of the longest length and numbers, with their progress notifications', async () => {
    for (const token of ['p'.repeat(MAX_PROGRESS_TOKEN_LENGTH), 7]) {
      const res = await post(write(token, `fits ${String(token).length}`));
      const [progress, answer] = [events(res.text)[0], events(res.text).at(-1)];
      expect(progress).toMatchObject({ method: 'notifications/progress', params: { progressToken: token, progress: 0 } });
      expect(answer.result._meta['capability-platform/toolCall'].status).toBe('pending_approval');
    }
  });
});
