import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { WebhookDeliveriesRepository } from '../src/events/webhook-deliveries.repository';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { Received, WebhookReceiver } from './support/webhook-receiver';

/**
 * API.md "Events, webhooks, browsers", `POST /webhooks/{id}/rotate-secret`: a new signing secret,
 * with a window in which deliveries carry both signatures (Standard Webhooks' rotation), verified
 * by a receiver with the `standardwebhooks` package as a customer would; then only the new one.
 */
describe('webhook signing secret rotation (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  let other: TestOrg;
  const receivers: WebhookReceiver[] = [];
  let slugs = 0;

  beforeAll(async () => {
    t = await createTestApp({
      config: { events: { heartbeatMs: 15_000, pollMs: 200, webhookTimeoutMs: 1_000, webhookRetryBaseMs: 100, webhookRetryWindowMs: 60_000 } },
    });
    ds = t.app.get(DataSource);
    org = await createOrg(t);
    other = await createOrg(t);
    // The embedded database starts slowly on a loaded machine.
  }, 180_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await t.close();
  });

  const as = (role: keyof TestOrg['keys'], o: TestOrg = org) => bearer(o.keys[role]);

  async function endpoint(types: string[]): Promise<{ id: string; secret: string; receiver: WebhookReceiver }> {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    const res = await t.http
      .post('/api/v1/webhooks')
      .set(...as('admin'))
      .send({ url: receiver.url, types })
      .expect(201);
    receiver.secret = res.body.secret;
    return { id: res.body.id, secret: res.body.secret, receiver };
  }

  const rotate = (id: string, body: object = {}, o: TestOrg = org, role: keyof TestOrg['keys'] = 'admin') =>
    t.http
      .post(`/api/v1/webhooks/${id}/rotate-secret`)
      .set(...as(role, o))
      .send(body);

  async function agentCreated(): Promise<string> {
    const res = await t.http
      .post('/api/v1/agents')
      .set(...as('builder'))
      .send({ slug: `wh-${++slugs}`, name: `Webhook ${slugs}` })
      .expect(201);
    return res.body.id;
  }

  /** Whether the delivery verifies with `secret`, as a receiver holding only that one checks it (standardwebhooks). */
  function verifiesWith(r: Received, secret: string): boolean {
    try {
      new Webhook(secret).verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature });
      return true;
    } catch {
      return false;
    }
  }

  const deliveryOf = (receiver: WebhookReceiver, agentId: string) =>
    until(
      async () => receiver.received.filter((r) => JSON.parse(r.body).target.id === agentId),
      (rs) => rs.length > 0,
    ).then((rs) => rs[rs.length - 1]);

  it('200 shows the new secret once; deliveries carry both signatures, the new one first, each verifying alone', async () => {
    const { id, secret: old, receiver } = await endpoint(['agent.created', 'webhook.secret_rotated']);
    const before = Date.now();
    const res = await rotate(id).expect(200);
    expect(res.body).toEqual({
      id,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      previousSecretExpiresAt: expect.any(String),
      secretRotatedAt: expect.any(String),
    });
    expect(Date.parse(res.body.secretRotatedAt)).toBeGreaterThanOrEqual(before - 5_000);
    const fresh: string = res.body.secret;
    expect(fresh).not.toBe(old);
    // The default window: a day.
    const expires = Date.parse(res.body.previousSecretExpiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 86_400_000 - 5_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 86_400_000 + 5_000);

    receiver.secret = fresh;
    const agentId = await agentCreated();
    const delivered = await deliveryOf(receiver, agentId);
    expect(delivered.valid).toBe(true);
    const signatures = delivered.signature.split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures.every((s) => s.startsWith('v1,'))).toBe(true);
    // Each signature on its own is the one its secret makes: the new one first.
    expect(verifiesWith({ ...delivered, signature: signatures[0] }, fresh)).toBe(true);
    expect(verifiesWith({ ...delivered, signature: signatures[1] }, old)).toBe(true);
    // A receiver still holding the old secret accepts it, as one holding the new one does.
    expect(verifiesWith(delivered, old)).toBe(true);
    expect(verifiesWith(delivered, fresh)).toBe(true);

    // The secret shows in the rotate answer only: not in reads, the audit log or the events delivered.
    const reads = await Promise.all([
      t.http.get(`/api/v1/webhooks/${id}`).set(...as('admin')),
      t.http.get('/api/v1/webhooks').set(...as('admin')),
      t.http.get('/api/v1/audit-events?type=webhook.secret_rotated').set(...as('admin')),
      t.http.get(`/api/v1/webhooks/${id}/deliveries`).set(...as('admin')),
    ]);
    const rotated = reads[2].body.items.find((e: { target: { id: string } }) => e.target.id === id);
    expect(rotated).toMatchObject({
      type: 'webhook.secret_rotated',
      actor: { type: 'api_key', id: org.keyIds.admin },
      data: { url: receiver.url, previousSecretExpiresAt: res.body.previousSecretExpiresAt },
    });
    const event = await until(
      async () => receiver.received.filter((r) => JSON.parse(r.body).type === 'webhook.secret_rotated'),
      (rs) => rs.length > 0,
    );
    const seen = JSON.stringify([reads.map((r) => r.body), event.map((r) => r.body)]);
    for (const s of [old, fresh]) {
      expect(seen).not.toContain(s);
      expect(seen).not.toContain(s.slice('whsec_'.length));
    }
  });

  it('after the previous secret expires only the new one signs; keepPreviousForSeconds 0 keeps none', async () => {
    const { id, secret: old, receiver } = await endpoint(['agent.created']);
    const res = await rotate(id, { keepPreviousForSeconds: 1 }).expect(200);
    const fresh: string = res.body.secret;
    receiver.secret = fresh;
    await new Promise((r) => setTimeout(r, 1_200));
    const after = await deliveryOf(receiver, await agentCreated());
    expect(after.valid).toBe(true);
    expect(after.signature.split(' ')).toHaveLength(1);
    expect(verifiesWith(after, old)).toBe(false);
    // Kept sealed while it signed; removed once past its expiry (each node does so every minute).
    const stored = async () =>
      (await ds.query(`SELECT secret_sealed, previous_secret_sealed, previous_secret_expires_at FROM webhook_endpoint WHERE id = $1`, [id]))[0] as Record<
        string,
        unknown
      >;
    const kept = await stored();
    expect(kept.previous_secret_sealed).toEqual(expect.any(String));
    expect(JSON.stringify(kept)).not.toMatch(new RegExp([old, fresh].map((s) => s.slice(6, 20).replace(/[+/]/g, '\\$&')).join('|')));
    await t.app.get(WebhookDeliveriesRepository).forgetExpiredSecrets();
    expect(await stored()).toMatchObject({ secret_sealed: kept.secret_sealed, previous_secret_sealed: null, previous_secret_expires_at: null });

    const now = await rotate(id, { keepPreviousForSeconds: 0 }).expect(200);
    expect(now.body.previousSecretExpiresAt).toBeNull();
    receiver.secret = now.body.secret;
    const at0 = await deliveryOf(receiver, await agentCreated());
    expect(at0.valid).toBe(true);
    expect(at0.signature.split(' ')).toHaveLength(1);
    expect(verifiesWith(at0, fresh)).toBe(false);
  });

  it('a delivery queued before the rotation is signed when it is sent: its retry carries the new secret', async () => {
    const { id, secret: old, receiver } = await endpoint(['agent.created']);
    const state = { rotated: false };
    // Refused until the rotation: the delivery stays queued, retried, across it.
    receiver.answer = () => (state.rotated ? 204 : 503);
    const agentId = await agentCreated();
    await deliveryOf(receiver, agentId);
    // Attempt 1 (signed with the only secret there was) was refused; the retry is still queued.
    const res = await rotate(id, { keepPreviousForSeconds: 0 }).expect(200);
    const fresh: string = res.body.secret;
    receiver.secret = fresh;
    state.rotated = true;
    const retried = await until(
      async () => receiver.received.filter((r) => JSON.parse(r.body).target.id === agentId),
      (rs) => rs.some((r) => r.answered === 204),
    );
    const first = retried[0];
    const last = retried[retried.length - 1];
    expect(verifiesWith(first, old)).toBe(true);
    expect(verifiesWith(last, fresh)).toBe(true);
    expect(verifiesWith(last, old)).toBe(false);
  });

  it.each([
    [{ keepPreviousForSeconds: -1 }, 'min'],
    [{ keepPreviousForSeconds: 604_801 }, 'max'],
    [{ keepPreviousForSeconds: 1.5 }, 'isInt'],
    [{ keepPreviousForSeconds: '60' }, 'isInt'],
  ])('400 at keepPreviousForSeconds for %j, the secret unchanged', async (body, code) => {
    const { id, receiver } = await endpoint(['agent.created']);
    const res = await rotate(id, body).expect(400);
    expect(res.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'keepPreviousForSeconds', code }] });
    const delivered = await deliveryOf(receiver, await agentCreated());
    expect(delivered.valid).toBe(true);
    expect(delivered.signature.split(' ')).toHaveLength(1);
  });

  it.each([
    [{ ifSecretRotatedAt: 'yesterday' }],
    [{ ifSecretRotatedAt: 17 }],
    [{ ifSecretRotatedAt: '2026-02-30T00:00:00Z' }],
    [{ ifSecretRotatedAt: `2026-01-01T00:00:00.${'0'.repeat(80)}Z` }],
    // ISO 8601 forms the validator took and JavaScript's Date does not read: each was a 500 (attack round 20, AA-F1).
    [{ ifSecretRotatedAt: '2026-W01' }],
    [{ ifSecretRotatedAt: '2026-060' }],
    [{ ifSecretRotatedAt: '20260101T000000Z' }],
    [{ ifSecretRotatedAt: '2026-01-01T00:00:00,5Z' }],
  ])('400 at ifSecretRotatedAt for %j, the secret unchanged', async (body) => {
    const { id, receiver } = await endpoint(['agent.created']);
    const res = await rotate(id, body).expect(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(expect.arrayContaining(['ifSecretRotatedAt']));
    const delivered = await deliveryOf(receiver, await agentCreated());
    expect(delivered.valid).toBe(true);
    expect(delivered.signature.split(' ')).toHaveLength(1);
  });

  it('ifSecretRotatedAt: of two admins rotating from what they read, one is told the secret and the other 409, nothing changed by it', async () => {
    const { id, secret: first, receiver } = await endpoint(['agent.created']);
    const read = async () =>
      (
        await t.http
          .get('/api/v1/webhooks?limit=200')
          .set(...as('admin'))
          .expect(200)
      ).body.items.find((w: { id: string }) => w.id === id);
    expect((await read()).secretRotatedAt).toBeNull();
    // Both read "never rotated", and rotate at once.
    const answers = await Promise.all([rotate(id, { ifSecretRotatedAt: null }), rotate(id, { ifSecretRotatedAt: null })]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const won = answers.find((a) => a.status === 200)!.body;
    const lost = answers.find((a) => a.status === 409)!.body;
    expect(lost).toMatchObject({ code: 'conflict', errors: [{ path: 'ifSecretRotatedAt', code: 'rotated_since' }] });
    expect(lost.detail).toContain(won.secretRotatedAt);
    expect((await read()).secretRotatedAt).toBe(won.secretRotatedAt);
    // The secret the winner was told signs, beside the one it replaced; the loser's was never kept.
    receiver.secret = won.secret;
    const delivered = await deliveryOf(receiver, await agentCreated());
    expect(delivered.valid).toBe(true);
    expect(verifiesWith(delivered, first)).toBe(true);
    expect(delivered.signature.split(' ')).toHaveLength(2);
    // One audited rotation.
    const audit = await t.http
      .get('/api/v1/audit-events?type=webhook.secret_rotated&limit=200')
      .set(...as('admin'))
      .expect(200);
    expect(audit.body.items.filter((e: { target: { id: string } }) => e.target.id === id)).toHaveLength(1);
    // From what the winner was told, the next rotation goes through; from what the other read, it does not.
    await rotate(id, { ifSecretRotatedAt: null }).expect(409);
    const next = await rotate(id, { ifSecretRotatedAt: won.secretRotatedAt, keepPreviousForSeconds: 0 }).expect(200);
    expect(next.body.secretRotatedAt > won.secretRotatedAt).toBe(true);
    // Without the condition, as before: whatever happened since.
    await rotate(id).expect(200);
    await rotate(randomUUID(), { ifSecretRotatedAt: null }).expect(404);
  });

  it('a viewer or builder is 403; another organization, or a deleted endpoint, is 404 and the secret stays', async () => {
    const { id, receiver } = await endpoint(['agent.created']);
    await rotate(id, {}, org, 'viewer').expect(403);
    await rotate(id, {}, org, 'builder').expect(403);
    await rotate(id, {}, other).expect(404);
    await rotate(randomUUID()).expect(404);
    const delivered = await deliveryOf(receiver, await agentCreated());
    expect(delivered.valid).toBe(true);
    expect(delivered.signature.split(' ')).toHaveLength(1);
    await t.http
      .delete(`/api/v1/webhooks/${id}`)
      .set(...as('admin'))
      .expect(204);
    await rotate(id).expect(404);
  });
});
