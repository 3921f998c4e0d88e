import type { AppConfig } from '../config/app-config';
import type { ApiKeysRepository } from './api-keys.repository';
import { CredentialWatch } from './credential-watch.service';
import type { ApiKeyPrincipal, OidcPrincipal } from './principal';

const config = { events: { heartbeatMs: 1_000 } } as unknown as AppConfig;
const key = (id: string): ApiKeyPrincipal => ({ type: 'api_key', id, orgId: 'o', roles: ['approver'], orgScopes: [] });
const person = (expiresAt: number): OidcPrincipal => ({ type: 'oidc', id: 'p', subject: 's', orgId: 'o', roles: ['approver'], orgScopes: [], expiresAt });

describe('CredentialWatch', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('ends what a revoked key opened at the next check, one query for every key, and keeps the rest', async () => {
    const revoked = new Set<string>();
    const liveKeys = jest.fn(async (ids: string[]) => ids.filter((id) => !revoked.has(id)));
    const watch = new CredentialWatch({ liveKeys } as unknown as ApiKeysRepository, config);
    watch.onModuleInit();
    const a1 = watch.watch(key('a'));
    const a2 = watch.watch(key('a'));
    const b = watch.watch(key('b'));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(liveKeys).toHaveBeenCalledTimes(1);
    expect(liveKeys).toHaveBeenLastCalledWith(['a', 'b']);
    revoked.add('a');
    await jest.advanceTimersByTimeAsync(1_000);
    expect([a1.signal.aborted, a2.signal.aborted, b.signal.aborted]).toEqual([true, true, false]);
    // Released leases are not asked about again; with none left, no query at all.
    a1.release();
    a2.release();
    b.release();
    b.release();
    await jest.advanceTimersByTimeAsync(5_000);
    expect(liveKeys).toHaveBeenCalledTimes(2);
    watch.onModuleDestroy();
  });

  it('starts no second check while one waits for a slow database, and a key watched meanwhile is not judged by it', async () => {
    let answer!: (ids: string[]) => void;
    const liveKeys = jest.fn(() => new Promise<string[]>((resolve) => (answer = resolve)));
    const watch = new CredentialWatch({ liveKeys } as unknown as ApiKeysRepository, config);
    watch.onModuleInit();
    watch.watch(key('a'));
    await jest.advanceTimersByTimeAsync(5_000);
    expect(liveKeys).toHaveBeenCalledTimes(1);
    const late = watch.watch(key('late'));
    answer([]);
    await jest.advanceTimersByTimeAsync(0);
    expect(late.signal.aborted).toBe(false);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(liveKeys).toHaveBeenCalledTimes(2);
    expect(liveKeys).toHaveBeenLastCalledWith(['a', 'late']);
    watch.onModuleDestroy();
  });

  it("ends what an identity provider's token opened when the token expires, also past setTimeout's longest delay", async () => {
    const watch = new CredentialWatch({ liveKeys: jest.fn() } as unknown as ApiKeysRepository, config);
    const soon = watch.watch(person(Date.now() + 5_000));
    const days = 40 * 86_400_000;
    const later = watch.watch(person(Date.now() + days));
    const expired = watch.watch(person(Date.now() - 1));
    expect(expired.signal.aborted).toBe(true);
    await jest.advanceTimersByTimeAsync(4_999);
    expect(soon.signal.aborted).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(soon.signal.aborted).toBe(true);
    await jest.advanceTimersByTimeAsync(days - 5_001);
    expect(later.signal.aborted).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(later.signal.aborted).toBe(true);
    // Released before it expires: no timer is left behind.
    watch.watch(person(Date.now() + 5_000)).release();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('asked at once, answers whether the key is still live, without waiting for the heartbeat, and ends what it opened when not', async () => {
    const revoked = new Set<string>();
    const liveKeys = jest.fn(async (ids: string[]) => ids.filter((id) => !revoked.has(id)));
    const watch = new CredentialWatch({ liveKeys } as unknown as ApiKeysRepository, config);
    const lease = watch.watch(key('a'));
    expect(await lease.accepted()).toBe(true);
    revoked.add('a');
    expect(await lease.accepted()).toBe(false);
    expect(lease.signal.aborted).toBe(true);
    expect(liveKeys).toHaveBeenCalledTimes(2);
    // Known refused: not asked again.
    expect(await lease.accepted()).toBe(false);
    expect(liveKeys).toHaveBeenCalledTimes(2);
    lease.release();
    const token = watch.watch(person(Date.now() + 1_000));
    expect(await token.accepted()).toBe(true);
    jest.setSystemTime(Date.now() + 1_000);
    expect(await token.accepted()).toBe(false);
    expect(token.signal.aborted).toBe(true);
    token.release();
  });

  it('watches nothing for the platform token', () => {
    const watch = new CredentialWatch({ liveKeys: jest.fn() } as unknown as ApiKeysRepository, config);
    const lease = watch.watch({ type: 'platform', id: 'platform' });
    expect(lease.signal.aborted).toBe(false);
    expect(jest.getTimerCount()).toBe(0);
    lease.release();
  });
});
