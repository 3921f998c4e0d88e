import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/** A key being revoked, inside the transaction that revokes it. */
export interface RevokedKey {
  orgId: string;
  keyId: string;
  /** Who revoked it, as audit events name an actor. */
  actor: { type: string; id: string };
}

/**
 * What else ends with a key, written in the transaction that revokes it (so nothing sees the key
 * revoked and what it started still going); answers what to do once that transaction committed.
 */
export type RevocationListener = (m: EntityManager, key: RevokedKey) => Promise<() => void>;

/**
 * Lets the modules whose records act for a key (agent runs) end them when it is revoked, without
 * the organizations' module knowing them: they listen here, the revocation calls them.
 */
@Injectable()
export class ApiKeyRevocations {
  private readonly listeners: RevocationListener[] = [];

  listen(listener: RevocationListener): void {
    this.listeners.push(listener);
  }

  /** Runs every listener in the revocation's transaction; answers what to run after its commit. */
  async revoked(m: EntityManager, key: RevokedKey): Promise<() => void> {
    const after: (() => void)[] = [];
    for (const listener of this.listeners) after.push(await listener(m, key));
    return () => after.forEach((f) => f());
  }
}
