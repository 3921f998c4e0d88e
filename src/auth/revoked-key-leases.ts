import { Injectable, OnModuleInit } from '@nestjs/common';
import { ApiKeyRevocations } from './api-key-revocations';
import { CredentialWatch } from './credential-watch.service';

/**
 * Ends the answers a key holds open (event streams) as soon as its revocation commits on this
 * node: the key is `401` from the `204` on, and what it opened must not outlive it by a heartbeat.
 */
@Injectable()
export class RevokedKeyLeases implements OnModuleInit {
  constructor(
    private readonly revocations: ApiKeyRevocations,
    private readonly watch: CredentialWatch,
  ) {}

  onModuleInit(): void {
    // After the commit, not in the transaction: a revocation that rolls back ends nothing.
    this.revocations.listen((_m, key) => Promise.resolve(() => this.watch.revoked(key.keyId)));
  }
}
