import type { EntityManager } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { ApiKeyRevocations } from './api-key-revocations';
import type { ApiKeysRepository } from './api-keys.repository';
import { CredentialWatch } from './credential-watch.service';
import type { ApiKeyPrincipal } from './principal';
import { RevokedKeyLeases } from './revoked-key-leases';

const config = { events: { heartbeatMs: 15_000 } } as unknown as AppConfig;
const key = (id: string): ApiKeyPrincipal => ({ type: 'api_key', id, orgId: 'o', roles: ['approver'], orgScopes: [] });

describe('RevokedKeyLeases', () => {
  it("ends what a key opened when its revocation commits, not before and not at a heartbeat, and only that key's", async () => {
    const liveKeys = jest.fn();
    const watch = new CredentialWatch({ liveKeys } as unknown as ApiKeysRepository, config);
    const revocations = new ApiKeyRevocations();
    new RevokedKeyLeases(revocations, watch).onModuleInit();
    const a1 = watch.watch(key('a'));
    const a2 = watch.watch(key('a'));
    const b = watch.watch(key('b'));
    expect([a1.keyId, b.keyId]).toEqual(['a', 'b']);
    const committed = await revocations.revoked({} as EntityManager, { orgId: 'o', keyId: 'a', actor: { type: 'api_key', id: 'admin' } });
    // Inside the transaction: it may still roll back.
    expect(a1.signal.aborted).toBe(false);
    committed();
    expect([a1.signal.aborted, a2.signal.aborted, b.signal.aborted]).toEqual([true, true, false]);
    expect(liveKeys).not.toHaveBeenCalled();
    // A key with nothing open: nothing to end.
    watch.revoked('c');
    expect(b.signal.aborted).toBe(false);
  });
});
