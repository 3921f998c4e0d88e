import { Logger } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { RedisThrottlerStorage } from '../src/rate-limit/redis.storage';
import { dropKeys, startOwnRedis, TEST_REDIS_URL, uniquePrefix } from './support/redis';
import { bearer, createTestApp, TestApp } from './support/test-app';

/**
 * Rate limits shared through Redis (RATE_LIMIT_REDIS_URL). Runs when TEST_REDIS_URL names a Redis
 * (CI: the one on 127.0.0.1:6379); each run counts under a key prefix of its own.
 */
if (!TEST_REDIS_URL) console.info('shared rate-limit suite: not run without TEST_REDIS_URL (CI sets it)');

jest.setTimeout(300_000);

(TEST_REDIS_URL ? describe : describe.skip)('rate limits shared through Redis', () => {
  const asAdmin = (t: TestApp) => t.http.get('/api/v1/me').set(...bearer(t.adminToken));
  const metric = async (t: TestApp, name: string) => {
    const text = (await t.http.get('/metrics').expect(200)).text;
    const line = text.split('\n').find((l) => l === name || l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  };

  describe('three nodes on one Redis', () => {
    const prefix = uniquePrefix();
    const nodes: TestApp[] = [];
    beforeAll(async () => {
      const config = { rateLimit: { windowSeconds: 60, perKey: 5, perOrg: 0, authFailures: 0, redisUrl: TEST_REDIS_URL, redisPrefix: prefix } };
      for (let i = 0; i < 3; i++) nodes.push(await createTestApp({ config }));
      // Every node connected before the first hit, so none counts in process.
      for (const n of nodes) await (n.app.get(ThrottlerStorage) as RedisThrottlerStorage).ready();
    });
    afterAll(async () => {
      await Promise.all(nodes.map((n) => n.close()));
      await dropKeys(TEST_REDIS_URL!, prefix);
    });

    it('refuse the request past the limit whichever node it reaches, and say where each client stands', async () => {
      // The platform key on every node is one client ("platform"), as one token on several nodes is.
      const remaining: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await asAdmin(nodes[i % 3]).expect(200);
        expect(res.headers['ratelimit-limit']).toBe('5');
        expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
        expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
        remaining.push(Number(res.headers['ratelimit-remaining']));
      }
      expect(remaining).toEqual([4, 3, 2, 1, 0]);
      for (const node of nodes) {
        const refused = await asAdmin(node).expect(429);
        expect(refused.body.code).toBe('rate_limited');
        expect(refused.headers['ratelimit-remaining']).toBe('0');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      }
      expect(await metric(nodes[2], 'rate_limit_refusals_total{limit="per_key"}')).toBe(1);
      expect(await metric(nodes[0], 'rate_limit_store_up')).toBe(1);
      expect(await metric(nodes[0], 'rate_limit_store_fallbacks_total')).toBe(0);
    });
  });

  describe('a Redis that stops while the API runs', () => {
    it('keeps the API answering, counting in process, and the metric and the log say so', async () => {
      const redis = await startOwnRedis();
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const t = await createTestApp({
        config: { rateLimit: { windowSeconds: 60, perKey: 4, perOrg: 0, authFailures: 0, redisUrl: redis.url, redisPrefix: uniquePrefix() } },
      });
      try {
        const storage = t.app.get(ThrottlerStorage) as RedisThrottlerStorage;
        await storage.ready();
        await asAdmin(t).expect(200);
        await asAdmin(t).expect(200);
        expect(await metric(t, 'rate_limit_store_up')).toBe(1);

        await redis.stop();
        // The API answers at once, neither waiting for Redis nor failing with it.
        const started = Date.now();
        for (let i = 0; i < 3; i++) expect((await asAdmin(t)).status).toBe(200);
        expect(Date.now() - started).toBeLessThan(5000);
        expect(await metric(t, 'rate_limit_store_up')).toBe(0);
        expect(await metric(t, 'rate_limit_store_fallbacks_total')).toBeGreaterThanOrEqual(3);
        expect(warn.mock.calls.some(([m]) => /Redis for rate limits does not answer/.test(String(m)))).toBe(true);
        // One line for the outage, not one per request.
        expect(warn.mock.calls.filter(([m]) => /Redis for rate limits/.test(String(m)))).toHaveLength(1);
        // Counted in process meanwhile, so the limit still holds on this node.
        await asAdmin(t).expect(200);
        await asAdmin(t).expect(429);
        expect(await t.http.get('/health/ready').then((r) => r.status)).toBe(200);
      } finally {
        warn.mockRestore();
        await t.close();
        await redis.stop();
      }
    });
  });
});
