import http from 'node:http';
import { CredentialWatch } from '../src/auth/credential-watch.service';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { testRunsConfig } from './support/runs-config';

/**
 * API.md: a revoked key is `401` from the `204` on. The streams it holds open (`GET /events`,
 * `GET /runs/{id}/events`) end with it, and nothing written after the revocation committed reaches
 * them: not after the next heartbeat's check (15 s here, as in production), but when it commits.
 * "Through another node" takes this node's part away (the commit's own ending of the key's leases):
 * what is left is what a node that did not revoke the key has, its streams' reads.
 */
describe('streams of a revoked API key (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let port: number;
  let org: TestOrg;
  let providerId: string;
  let slugs = 0;
  const closers: (() => void)[] = [];

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({
      imports: [RunFixturesModule],
      config: {
        runs: testRunsConfig(),
      },
    });
    expect(t.config.events.heartbeatMs).toBe(15_000);
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
    org = await createOrg(t);
    providerId = (
      await t.http
        .post('/api/v1/model-providers')
        .set(...bearer(org.keys.admin))
        .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
        .expect(201)
    ).body.id;
  }, 180_000);
  afterEach(() => {
    jest.restoreAllMocks();
    for (const close of closers.splice(0)) close();
  });
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const newKey = async (role: 'approver' | 'viewer'): Promise<{ id: string; token: string }> =>
    (
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys.admin))
        .send({ name: `doomed ${role}`, roles: [role] })
        .expect(201)
    ).body;
  const revoke = (keyId: string) =>
    t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${keyId}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
  /** As if the key were revoked through another node: this node does not hear of the commit. */
  const revokedElsewhere = () => jest.spyOn(CredentialWatch.prototype, 'revoked').mockImplementation(() => undefined);

  async function createAgent(): Promise<string> {
    const res = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: `revoked-${++slugs}`, name: `Revoked ${slugs}` })
      .expect(201);
    return res.body.id;
  }

  /** A run of `org`, waiting for approval of its tool call; the model then answers "Sent.". */
  async function waitingRun(): Promise<{ id: string; approvalId: string }> {
    const agentId = await createAgent();
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: providerId, name: 'scripted-1' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    model.setScript(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"ann@example.com"}' }] }, { text: 'Sent.' }));
    const res = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=10')
      .send({ input: 'x' })
      .expect(201);
    expect(res.body.status).toBe('waiting_for_approval');
    return { id: res.body.id, approvalId: res.body.pendingApprovalIds[0] };
  }

  /** `GET /runs/{id}/events` with `token`: what it sent, and whether it ended. */
  async function runStream(runId: string, token: string): Promise<{ text: () => string; ended: () => boolean }> {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/api/v1/runs/${runId}/events`, headers: { authorization: `Bearer ${token}` } }, resolve);
      req.on('error', reject);
      closers.push(() => req.destroy());
    });
    expect(res.statusCode).toBe(200);
    let text = '';
    let ended = false;
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.on('end', () => (ended = true));
    return { text: () => text, ended: () => ended };
  }

  describe.each([
    ['on this node', () => undefined],
    ['through another node', revokedElsewhere],
  ])('revoked %s', (_where, arrange) => {
    it('GET /events ends, and an event written after the 204 is not sent', async () => {
      arrange();
      const key = await newKey('approver');
      const c = await SseClient.open(`http://127.0.0.1:${port}/api/v1/events`, { authorization: `Bearer ${key.token}` });
      closers.push(() => c.close());
      let ended = false;
      c.response.on('end', () => (ended = true));
      await c.waitFor((x) => x.lastId !== undefined);
      await revoke(key.id);
      await createAgent();
      // Before the fix the stream got the agent's creation at once and ended only at the heartbeat, 15 s on.
      await c.waitFor(() => ended || c.events.length > 0);
      expect(c.events.map((e) => e.event.type)).toEqual([]);
      expect(ended).toBe(true);
    });

    it("GET /runs/{id}/events ends, and the run's events after the 204 (its tool's result) are not sent", async () => {
      arrange();
      const run = await waitingRun();
      const key = await newKey('viewer');
      const s = await runStream(run.id, key.token);
      await until(
        async () => s.text(),
        (text) => text.includes('event: run.waiting'),
      );
      const before = s.text();
      await revoke(key.id);
      await t.http
        .post(`/api/v1/approvals/${run.approvalId}/approve`)
        .set(...bearer(org.keys.approver))
        .send({})
        .expect(200);
      await until(
        async () => s.ended() || s.text().includes('event: run.succeeded'),
        (done) => done,
      );
      expect(s.text().slice(before.length)).not.toMatch(/event: /);
      expect(s.ended()).toBe(true);
      const finished = await until(
        async () => (await t.http.get(`/api/v1/runs/${run.id}`).set(...bearer(org.keys.viewer))).body,
        (r) => r.status === 'succeeded',
      );
      expect(finished.status).toBe('succeeded');
    });
  });
});
