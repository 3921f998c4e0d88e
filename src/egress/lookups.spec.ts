import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { Lookups, Resolve } from './lookups';
import { EgressService } from './egress.service';
import type { AppConfig } from '../config/app-config';

/**
 * A resolver standing in for getaddrinfo on libuv's threadpool: `threads` lookups at once, the
 * rest queued in order; a name under `.slow.test` holds its thread until released, as a zone whose
 * authoritative server never answers does for the resolver's timeout.
 */
function threadpool(threads: number) {
  const queue: Array<() => void> = [];
  const held: Array<() => void> = [];
  let busy = 0;
  let maxBusy = 0;
  const started: string[] = [];
  const next = () => {
    while (busy < threads && queue.length > 0) {
      busy++;
      maxBusy = Math.max(maxBusy, busy);
      queue.shift()!();
    }
  };
  const resolve: Resolve = (hostname, _options, callback) => {
    queue.push(() => {
      started.push(hostname);
      const answer = () => {
        busy--;
        next();
        if (hostname.endsWith('.slow.test')) callback(Object.assign(new Error(`getaddrinfo EAI_AGAIN ${hostname}`), { code: 'EAI_AGAIN' }), []);
        else callback(null, [{ address: '203.0.113.7', family: 4 } as LookupAddress]);
      };
      if (hostname.endsWith('.slow.test')) held.push(answer);
      else setImmediate(answer);
    });
    next();
  };
  return {
    resolve,
    started,
    maxBusy: () => maxBusy,
    releaseAll: () => held.splice(0).forEach((answer) => answer()),
  };
}

describe('Lookups (attack round 11, F-F3)', () => {
  it("keeps one organization's slow names to its turn, so another's lookup is answered while they hang", async () => {
    const pool = threadpool(4);
    const lookups = new Lookups(500, 2, 1, pool.resolve);
    const slow = Array.from({ length: 16 }, (_, i) => lookups.all(`h${i}.slow.test`, 0, 'org-a').catch((err: NodeJS.ErrnoException) => err.code));
    const started = Date.now();
    await expect(lookups.all('vendor.example', 0, 'org-b')).resolves.toEqual([{ address: '203.0.113.7', family: 4 }]);
    expect(Date.now() - started).toBeLessThan(200);
    // One of the organization's lookups reached the resolver; the others waited for its turn and gave up.
    expect(await Promise.all(slow)).toEqual(new Array(16).fill('EAI_AGAIN'));
    expect(pool.started.filter((h) => h.endsWith('.slow.test'))).toEqual(['h0.slow.test']);
    expect(pool.maxBusy()).toBeLessThanOrEqual(2);
    pool.releaseAll();
  });

  it('leaves half the threadpool to the rest of the process however many organizations hang', async () => {
    const pool = threadpool(4);
    const lookups = new Lookups(300, 2, 1, pool.resolve);
    const hanging = ['a', 'b', 'c', 'd'].map((org) => lookups.all(`${org}.slow.test`, 0, org).catch(() => undefined));
    await Promise.all(hanging);
    // Given up on by their callers, the two that started still hold their threads until getaddrinfo returns.
    expect(pool.started).toEqual(['a.slow.test', 'b.slow.test']);
    expect(pool.maxBusy()).toBe(2);
    // ...and their turns: the next lookup waits for one of them.
    const waiting = lookups.all('vendor.example', 0, 'e');
    pool.releaseAll();
    await expect(waiting).resolves.toHaveLength(1);
  });

  it("joins asks for a name being looked up, so one organization's connections at once to one host take one turn", async () => {
    const pool = threadpool(4);
    const lookups = new Lookups(500, 2, 1, pool.resolve);
    const answers = await Promise.all(Array.from({ length: 20 }, () => lookups.all('vendor.example', 0, 'org-a')));
    expect(answers.every((a) => a[0].address === '203.0.113.7')).toBe(true);
    expect(pool.started).toEqual(['vendor.example']);
  });

  it("does not make another organization wait behind one's queued lookup of the same name; joins it once it has started", async () => {
    const pool = threadpool(4);
    const lookups = new Lookups(500, 2, 1, pool.resolve);
    // Organization A's turn is held by a slow name; its ask for a popular host waits behind it.
    const slow = lookups.all('a.slow.test', 0, 'org-a').catch((err: NodeJS.ErrnoException) => err.code);
    const queued = lookups.all('vendor.example', 0, 'org-a').catch((err: NodeJS.ErrnoException) => err.code);
    const started = Date.now();
    await expect(lookups.all('vendor.example', 0, 'org-b')).resolves.toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(200);
    expect(await slow).toBe('EAI_AGAIN');
    expect(await queued).toBe('EAI_AGAIN');
    // A lookup under way is joined by anyone.
    const pool2 = threadpool(4);
    const shared = new Lookups(500, 2, 1, pool2.resolve);
    await Promise.all([shared.all('vendor.example', 0, 'org-a'), shared.all('vendor.example', 0, 'org-b'), shared.all('vendor.example', 0, 'org-c')]);
    expect(pool2.started).toEqual(['vendor.example']);
    pool.releaseAll();
  });

  it('tells the socket whose connection it opens, so its lookup takes that organization’s turn', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const egress = new EgressService({ egress: { allowedHosts: ['localhost'], connectTimeoutMs: 2000, requestTimeoutMs: 2000 } } as unknown as AppConfig);
    const owners: Array<string | undefined> = [];
    const lookups = (egress as unknown as { lookups: Lookups }).lookups;
    const all = lookups.all.bind(lookups);
    jest.spyOn(lookups, 'all').mockImplementation((hostname, family) => {
      owners.push(lookups.owner.getStore());
      return all(hostname, family);
    });
    try {
      const response = await egress.fetch(`http://localhost:${(server.address() as AddressInfo).port}/`, { org: 'org-1' });
      expect(await response.text()).toBe('ok');
      expect(owners).toEqual(['org-1']);
    } finally {
      await egress.onModuleDestroy();
      server.close();
    }
  });
});
