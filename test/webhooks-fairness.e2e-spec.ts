import { MAX_IN_FLIGHT, MAX_IN_FLIGHT_PER_ORG } from '../src/events/webhook-dispatcher.service';
import { WebhookReceiver } from './support/webhook-receiver';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * Webhook deliveries of several organizations on one node, on either database. Enough
 * organizations whose receivers hang hold every slot of the node (each its share), and each
 * attempt that times out frees one: it goes to the organization with the fewest attempts in
 * flight, not to the oldest delivery, so another organization's fresh event does not wait until
 * their whole backlog has been attempted.
 */
describe('webhooks: organizations served in turn (e2e)', () => {
  let t: TestApp;
  const receivers: WebhookReceiver[] = [];
  const timeoutMs = 3000;

  beforeAll(async () => {
    // Retries far off: the backlog ahead of the newcomer is the first attempts alone.
    t = await createTestApp({
      config: { events: { heartbeatMs: 15_000, pollMs: 500, webhookTimeoutMs: timeoutMs, webhookRetryBaseMs: 600_000, webhookRetryWindowMs: 3_600_000 } },
    });
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await Promise.all(receivers.map((r) => r.stop()));
  });

  async function endpoint(o: TestOrg, hang: boolean): Promise<WebhookReceiver> {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    if (hang) receiver.answer = () => 'hang';
    const res = await t.http
      .post('/api/v1/webhooks')
      .set(...bearer(o.keys.admin))
      .send({ url: receiver.url, types: ['*'] })
      .expect(201);
    receiver.secret = res.body.secret;
    return receiver;
  }

  let agents = 0;
  const event = (o: TestOrg) =>
    t.http
      .post('/api/v1/agents')
      .set(...bearer(o.keys.builder))
      .send({ slug: `fair-${++agents}`, name: 'Fair' })
      .expect(201);

  it("a fresh event of another organization is delivered within one attempt's timeout, not after the hung organizations' backlog", async () => {
    const orgs = MAX_IN_FLIGHT / MAX_IN_FLIGHT_PER_ORG;
    const hung: WebhookReceiver[] = [];
    for (let i = 0; i < orgs; i++) {
      const o = await createOrg(t);
      // Two endpoints of two slots each: the organization's whole share.
      hung.push(await endpoint(o, true), await endpoint(o, true));
      for (let e = 0; e < 20; e++) await event(o);
    }
    const attempts = async () => hung.reduce((n, r) => n + r.received.length, 0);
    await until(attempts, (n) => n >= MAX_IN_FLIGHT, 30_000);
    const quiet = await createOrg(t);
    const fine = await endpoint(quiet, false);
    const started = Date.now();
    await event(quiet);
    await until(
      async () => fine.accepted().length,
      (n) => n >= 1,
      60_000,
    );
    // 160 deliveries were due before it, 16 at a time, 3 s each: oldest first it waited about 30 s.
    expect(Date.now() - started).toBeLessThan(2 * timeoutMs + 3000);
    expect(await attempts()).toBeLessThan(orgs * 40);
  }, 120_000);
});
