import type * as Dns from 'node:dns';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 11, F-F3: getaddrinfo runs on libuv's threadpool (4 threads for the whole process),
 * and a name whose authoritative server never answers holds a thread for the resolver's timeout.
 * `dns.lookup` is replaced here by that model: four threads, lookups queued in order, a name under
 * `.slow.test` holding its thread until the test releases it. One admin saving 16 webhooks under
 * such a zone left another organization's save unanswered for as long as they hung.
 */
// The module itself, not an import's copy of its namespace: the server reads `lookup` from it at each call.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const dns = require('node:dns') as typeof Dns;

describe('slow host names and the node’s lookups (e2e)', () => {
  let t: TestApp;
  let attacker: TestOrg;
  let other: TestOrg;
  const held: Array<() => void> = [];
  const queue: Array<() => void> = [];
  let busy = 0;
  const real = dns.lookup;

  const next = () => {
    while (busy < 4 && queue.length > 0) {
      busy++;
      queue.shift()!();
    }
  };

  beforeAll(async () => {
    t = await createTestApp({ config: { egress: { allowedHosts: ['localhost'], connectTimeoutMs: 1500, requestTimeoutMs: 5000 } } });
    attacker = await createOrg(t);
    other = await createOrg(t);
    // Once the server runs: from here every lookup of the process takes a turn of the model's four threads.
    jest.spyOn(dns, 'lookup').mockImplementation(((
      hostname: string,
      options: Dns.LookupAllOptions | ((...args: unknown[]) => void),
      given?: (...args: unknown[]) => void,
    ) => {
      const callback = typeof options === 'function' ? options : given!;
      queue.push(() => {
        const done = (...args: unknown[]) => {
          busy--;
          next();
          callback(...args);
        };
        if (hostname.endsWith('.slow.test'))
          held.push(() => done(Object.assign(new Error(`getaddrinfo EAI_AGAIN ${hostname}`), { code: 'EAI_AGAIN', syscall: 'getaddrinfo' })));
        else real(hostname, typeof options === 'function' ? {} : options, done);
      });
      next();
    }) as unknown as typeof dns.lookup);
  }, 240_000);
  afterAll(async () => {
    held.splice(0).forEach((release) => release());
    jest.restoreAllMocks();
    await t.close();
  });

  const save = (org: TestOrg, url: string) =>
    t.http
      .post('/api/v1/webhooks')
      .set(...bearer(org.keys.admin))
      .send({ url, types: ['agent.created'] });

  it("answers another organization's save at once while one organization's names hang", async () => {
    const slow = Array.from({ length: 16 }, (_, i) => save(attacker, `https://h${i}.slow.test/hook`).then((res) => res.status));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const answered = await Promise.race([
      save(other, 'https://localhost:8443/hook').then((res) => res.status),
      new Promise((resolve) => setTimeout(() => resolve('no answer in 3 s'), 3000)),
    ]);
    expect(answered).toBe(201);
    expect(Date.now() - started).toBeLessThan(1000);
    // The hung names did not resolve within EGRESS_CONNECT_TIMEOUT_MS: saved, as any name that does not resolve now.
    expect(await Promise.all(slow)).toEqual(new Array(16).fill(201));
    // One of them reached the resolver; the others gave up waiting for the organization's turn.
    expect(held).toHaveLength(1);
  }, 30_000);
});
