import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { DEFAULT_RUNS_CONFIG } from '../src/config/runs-config';
import { SEALED_COLUMNS } from '../src/database/sealed-columns';
import { resealSecrets } from '../src/database/reseal-secrets';
import { keyId, SecretsService } from '../src/secrets/secrets.service';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { createTestDatabase, TestDatabase } from './support/test-database';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

const MCP_CREDENTIAL = 'Bearer ROTATE-mcp-credential-123456';
const MCP_URL_KEY = 'ROTATE-url-key-7890';
const MODEL_KEY = 'sk-rotate-model-key-4567';
const HOOK_TOKEN = 'ROTATE-hook-token-1234';

/**
 * docs/operations.md "Rotating SECRETS_KEY": every sealed value (MCP credentials and URLs, model
 * API keys, webhook secrets and URLs) is sealed again under the new key when a node starts with
 * SECRETS_KEY=new and SECRETS_KEY_PREVIOUS=old, so the old key can then be dropped. And a node
 * that cannot open a value says so (`secret_unreadable`, `internal_error`), never that the
 * upstream is down, and writes nothing over the shared connection.
 */
describe('rotating SECRETS_KEY (e2e)', () => {
  const K1 = randomBytes(32);
  const K2 = randomBytes(32);
  let db: TestDatabase;
  let t: TestApp | undefined;
  let org: TestOrg;
  let fixture: FixtureMcpServer;
  let model: ScriptedModel;
  let receiver: WebhookReceiver;
  let connectionId: string;
  let agentId: string;
  let hookId: string;

  const start = async (key: Buffer, previousKey?: Buffer) => {
    await t?.close();
    t = await createTestApp({
      database: db,
      config: {
        secrets: { key, previousKey },
        toolTimeoutMs: 5000,
        runs: { ...DEFAULT_RUNS_CONFIG, modelRetries: 0, modelRetryBaseMs: 10, pollIntervalMs: 100 },
        events: { heartbeatMs: 15_000, pollMs: 200, webhookTimeoutMs: 2_000, webhookRetryBaseMs: 200, webhookRetryWindowMs: 60_000 },
      },
    });
    return t;
  };
  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const keyIdsOf = async (): Promise<Record<string, string[]>> => {
    const ds = t!.app.get(DataSource);
    const out: Record<string, string[]> = {};
    for (const c of SEALED_COLUMNS) {
      const rows: { v: string }[] = await ds.query(`SELECT ${c.column} AS v FROM ${c.table} WHERE ${c.column} IS NOT NULL`);
      out[`${c.table}.${c.column}`] = rows.map((r) => r.v.split('.')[1]);
    }
    return out;
  };
  const everyUnder = (id: string) => Object.fromEntries(SEALED_COLUMNS.map((c) => [`${c.table}.${c.column}`, [id]]));
  const newAgent = async () =>
    (
      await t!.http
        .post('/api/v1/agents')
        .set(...as('admin'))
        .send({ slug: `a-${randomBytes(3).toString('hex')}`, name: 'A' })
        .expect(201)
    ).body.id as string;
  const deliveredTo = async (n: number) => {
    await until(
      async () => receiver.accepted().length,
      (k) => k >= n,
      10_000,
    );
    expect(receiver.accepted().every((r) => r.valid && r.path === `/hook?token=${HOOK_TOKEN}`)).toBe(true);
  };
  const runSucceeds = async () => {
    const from = model.authorizations.length;
    const run = await t!.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...as('agent'))
      .set('Prefer', 'wait=10')
      .send({ input: 'Hi' })
      .expect(201);
    expect(run.body).toMatchObject({ status: 'succeeded', output: 'Hello' });
    expect(model.authorizations[from]).toBe(`Bearer ${MODEL_KEY}`);
  };
  const callSucceeds = async () => {
    const call = await t!.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool: 'lookup', arguments: { id: '7' } })
      .expect(200);
    expect(call.body).toMatchObject({ status: 'succeeded', result: { structuredContent: { id: '7', name: 'Ada' } } });
    expect(fixture.authorizations.at(-1)).toBe(MCP_CREDENTIAL);
    expect(fixture.requestUrls.at(-1)).toBe(`/mcp?api_key=${MCP_URL_KEY}`);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    fixture = await startFixtureMcpServer({ requireAuthorization: MCP_CREDENTIAL });
    model = await startScriptedModel(sequence({ text: 'Hello' }));
    receiver = await WebhookReceiver.start();
    await start(K1);
    org = await createOrg(t!, ['mcp:remote']);
    const provider = await t!.http
      .post('/api/v1/model-providers')
      .set(...as('admin'))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url, apiKey: MODEL_KEY })
      .expect(201);
    const hook = await t!.http
      .post('/api/v1/webhooks')
      .set(...as('admin'))
      .send({ url: `${receiver.url}?token=${HOOK_TOKEN}`, types: ['agent.created'] })
      .expect(201);
    hookId = hook.body.id;
    // A signing-secret rotation under way: the previous secret is kept, sealed, beside the new one.
    const rotated = await t!.http
      .post(`/api/v1/webhooks/${hookId}/rotate-secret`)
      .set(...as('admin'))
      .send({ keepPreviousForSeconds: 3600 })
      .expect(200);
    receiver.secret = rotated.body.secret;
    const connection = await t!.http
      .post('/api/v1/mcp-connections')
      .set(...as('admin'))
      .send({ server: 'remote', name: 'vendor', url: `${fixture.url}?api_key=${MCP_URL_KEY}`, credentials: { authorization: MCP_CREDENTIAL } })
      .expect(201);
    connectionId = connection.body.id;
    await t!.http
      .put(`/api/v1/mcp-connections/${connectionId}/tools/lookup/risk`)
      .set(...as('admin'))
      .send({ risk: 'read_only' })
      .expect(200);
    agentId = await newAgent();
    await t!.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as('builder'))
      .send({
        instructions: '',
        capabilities: [],
        mcpServers: [{ connection: connectionId, tools: ['lookup'] }],
        model: { provider: provider.body.id, name: 'm' },
      })
      .expect(200);
    await t!.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(201);
    await deliveredTo(1);
    expect(await keyIdsOf()).toEqual(everyUnder(keyId(K1)));
  }, 180_000);
  afterAll(async () => {
    await t?.close();
    await Promise.all([fixture.close(), model.close(), receiver.stop()]);
    await db.drop();
  });

  it('knows every sealed column: each `*_sealed` column of the migrated schema is listed', async () => {
    const rows: { t: string; c: string }[] = await t!.app
      .get(DataSource)
      .query(
        `SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND column_name LIKE '%\\_sealed' ORDER BY 1, 2`,
      );
    const listed = SEALED_COLUMNS.map((c) => `${c.table}.${c.column}`);
    expect(rows.map((r) => `${r.t}.${r.c}`).filter((c) => !listed.includes(c))).toEqual([]);
  });

  it('a start with SECRETS_KEY=new and SECRETS_KEY_PREVIOUS=old seals everything again under the new key', async () => {
    await start(K2, K1);
    expect(await keyIdsOf()).toEqual(everyUnder(keyId(K2)));
    // Nothing left for the command either; a second pass changes nothing.
    expect(await resealSecrets(t!.app.get(DataSource), t!.app.get(SecretsService))).toEqual({ resealed: 0, remaining: [] });
    await callSucceeds();
    await runSucceeds();
  });

  it('then the old key can be dropped: sync, tool calls, runs and deliveries still work with the new key alone', async () => {
    await start(K2);
    const synced = await t!.http
      .post(`/api/v1/mcp-connections/${connectionId}/sync`)
      .set(...as('admin'))
      .expect(200);
    expect(synced.body).toMatchObject({ status: 'ready' });
    await callSucceeds();
    await runSucceeds();
    await newAgent();
    await deliveredTo(2);
  });

  it('re-seals concurrently written values once, never over a newer value', async () => {
    // Sealed under K1 again by a node still on the old key (as during step 2 of the procedure).
    const old = new SecretsService({ secrets: { key: K1 } } as never);
    const ds = t!.app.get(DataSource);
    const value = old.seal(JSON.stringify({ authorization: MCP_CREDENTIAL }));
    await ds.query(`UPDATE mcp_connection SET credentials = $1 WHERE id = $2`, [value, connectionId]);
    const both = new SecretsService({ secrets: { key: K2, previousKey: K1 } } as never);
    const reports = await Promise.all([resealSecrets(ds, both), resealSecrets(ds, both)]);
    expect(reports.map((r) => r.resealed).sort()).toEqual([0, 1]);
    expect(await keyIdsOf()).toEqual(everyUnder(keyId(K2)));
  });

  describe('a node without the key', () => {
    beforeAll(async () => {
      await start(K1);
    }, 60_000);

    it('fails a tool call with secret_unreadable, sends nothing, and leaves the connection as it is', async () => {
      const before = (await t!.app.get(DataSource).query(`SELECT status, error, synced_at, updated_at FROM mcp_connection WHERE id = $1`, [connectionId]))[0];
      const calls = fixture.calls.length;
      const call = await t!.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...as('agent'))
        .send({ tool: 'lookup', arguments: { id: '7' } })
        .expect(200);
      expect(call.body).toMatchObject({ status: 'failed', error: { code: 'secret_unreadable' } });
      expect(call.body.error.message).toMatch(/cannot open/);

      const sync = await t!.http
        .post(`/api/v1/mcp-connections/${connectionId}/sync`)
        .set(...as('admin'))
        .expect(500);
      expect(sync.body).toMatchObject({ code: 'internal_error' });
      expect(sync.body.detail).toMatch(/cannot open the connection's stored credentials/);
      expect(fixture.calls.length).toBe(calls);
      const after = (await t!.app.get(DataSource).query(`SELECT status, error, synced_at, updated_at FROM mcp_connection WHERE id = $1`, [connectionId]))[0];
      expect(after).toEqual(before);
      const synced = await t!.http
        .get('/api/v1/audit-events?type=mcp_connection.synced')
        .set(...as('admin'))
        .expect(200);
      expect(synced.body.items.filter((e: { data: { status: string } }) => e.data.status === 'error')).toEqual([]);
      const read = await t!.http
        .get(`/api/v1/mcp-connections/${connectionId}`)
        .set(...as('viewer'))
        .expect(200);
      expect(read.body.status).toBe('ready');
    });

    it("says in a webhook delivery's last error that the platform cannot open the secret, and sends nothing", async () => {
      const received = receiver.received.length;
      await newAgent();
      type Delivery = { attempts: number; lastError: string | null; lastStatus: number | null };
      const delivery = await until(
        async () =>
          (
            await t!.http
              .get(`/api/v1/webhooks/${hookId}/deliveries?status=pending`)
              .set(...as('admin'))
              .expect(200)
          ).body.items.find((d: Delivery) => d.attempts > 0 && d.lastError !== null) as Delivery | undefined,
        // An attempt is counted when it is claimed and its error written when it ends: CI once read between the two.
        (d) => d !== undefined,
        10_000,
      );
      expect(delivery).toMatchObject({ lastStatus: null });
      expect(delivery!.lastError).toMatch(/platform cannot open this webhook's stored secret/);
      expect(receiver.received.length).toBe(received);
    });

    it('fails a run with internal_error naming the stored API key, not the model', async () => {
      const calls = model.requests.length;
      const run = await t!.http
        .post(`/api/v1/agents/${agentId}/runs`)
        .set(...as('agent'))
        .send({ input: 'Hi' })
        .expect(201);
      const body = await until(
        async () =>
          (
            await t!.http
              .get(`/api/v1/runs/${run.body.id}`)
              .set(...as('viewer'))
              .expect(200)
          ).body as { status: string; error?: { code: string; message: string } },
        (b) => b.status === 'failed',
        20_000,
      );
      expect(body.error).toMatchObject({ code: 'internal_error' });
      expect(body.error!.message).toMatch(/cannot open the model provider's stored API key/);
      expect(model.requests.length).toBe(calls);
    }, 30_000);
  });
});
