import { APPROVER_EVENT_TYPES } from '../src/events/event-visibility';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * API.md "Events, webhooks, browsers": what each role's GET /events carries. An approver's stream
 * once carried the whole audit log (key inventory, webhook URLs with their tokens), which
 * GET /audit-events and GET /webhooks refuse it.
 */
describe('GET /events by role (e2e)', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  const open: SseClient[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      config: { events: { heartbeatMs: 15_000, pollMs: 500, webhookTimeoutMs: 1_000, webhookRetryBaseMs: 5_000, webhookRetryWindowMs: 60_000 } },
    });
    await t.app.listen(0, '127.0.0.1');
    base = `${await t.app.getUrl()}/api/v1`;
    org = await createOrg(t);
    // The embedded database starts slowly on a loaded machine.
  }, 180_000);
  afterEach(() => {
    for (const c of open.splice(0)) c.close();
  });
  afterAll(() => t.close());

  const opened = async (query: string, token: string, headers: Record<string, string> = {}) => {
    const c = await SseClient.open(`${base}/events${query}`, { authorization: `Bearer ${token}`, ...headers });
    open.push(c);
    await c.waitFor((x) => x.lastId !== undefined);
    return c;
  };
  const refusal = (query: string, token: string) =>
    SseClient.open(`${base}/events${query}`, { authorization: `Bearer ${token}` }).then(
      (c) => {
        open.push(c);
        return { status: 200, body: {} as Record<string, unknown> };
      },
      (err: { status: number; body: string }) => ({ status: err.status, body: JSON.parse(err.body) as Record<string, unknown> }),
    );

  it("an approver's stream carries its work, never the admin's audit log, also when it replays from the beginning", async () => {
    await t.http
      .post('/api/v1/webhooks')
      .set(...bearer(org.keys.admin))
      .send({ url: 'http://127.0.0.1:9/hook?token=WHTOKEN-789', types: ['*'] })
      .expect(201);
    await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: 'inventory', roles: ['viewer'] })
      .expect(201);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'roles', name: 'Roles' })
      .expect(201);

    const everything = await opened('', org.keys.admin, { 'last-event-id': '0-0' });
    await everything.waitFor((x) => x.events.some((e) => e.event.type === 'agent.created'));
    const adminTypes = new Set<string>(everything.events.map((e) => e.event.type));
    for (const type of ['api_key.created', 'webhook.created', 'agent.created']) expect(adminTypes.has(type)).toBe(true);

    const approver = await opened('', org.keys.approver, { 'last-event-id': '0-0' });
    await approver.waitFor((x) => x.events.some((e) => e.event.type === 'agent.created'));
    // Anything else written so far would have come before the agent's event, in the same reads.
    await new Promise((r) => setTimeout(r, 300));
    expect(approver.events.map((e) => e.event)).toEqual([expect.objectContaining({ type: 'agent.created', target: { type: 'agent', id: agent.body.id } })]);
    expect(JSON.stringify(approver.events)).not.toContain('WHTOKEN');

    // Live, too: a new key is not sent to the approver, the next agent is.
    await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: 'later', roles: ['viewer'] })
      .expect(201);
    await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'roles-2', name: 'Roles 2' })
      .expect(201);
    await approver.waitFor((x) => x.events.length >= 2);
    await everything.waitFor((x) => x.events.filter((e) => e.event.type === 'agent.created').length >= 2);
    expect(approver.events.map((e) => e.event.type)).toEqual(['agent.created', 'agent.created']);
    expect(everything.events.some((e) => e.event.type === 'api_key.created' && (e.event.data as { name: string }).name === 'later')).toBe(true);
  });

  it('refuses an approver asking for a type outside its work (403 naming it), and narrows to the types it may read', async () => {
    const refused = await refusal('?types=agent.created,api_key.created,webhook.created', org.keys.approver);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'forbidden' });
    expect((refused.body.errors as { path: string }[]).map((e) => e.path)).toEqual(['types[1]', 'types[2]']);
    // An admin asks for any.
    await opened('?types=api_key.created,webhook.created', org.keys.admin);
    const narrowed = await opened('?types=approval.requested', org.keys.approver, { 'last-event-id': '0-0' });
    await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'roles-3', name: 'Roles 3' })
      .expect(201);
    await new Promise((r) => setTimeout(r, 700));
    expect(narrowed.events).toHaveLength(0);
  });

  it('names only types of work an approver reads through the API anyway', () => {
    const configuration = /^(org|api_key|webhook|mcp_connection|model_provider)\./;
    expect(APPROVER_EVENT_TYPES.filter((type) => configuration.test(type))).toEqual([]);
    expect(APPROVER_EVENT_TYPES).toEqual(expect.arrayContaining(['approval.requested', 'approval.approved', 'approval.rejected', 'approval.expired']));
  });
});
