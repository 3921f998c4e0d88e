import { Inject, Injectable } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { ApiError } from '../common/api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiKeysRepository } from './api-keys.repository';
import { OidcAuthenticator } from './oidc/oidc-authenticator.service';
import type { Principal } from './principal';
import { API_KEY_PREFIX, hashToken } from './tokens';

/** Who a bearer token is: the platform admin, an organization's API key, a person signed in through the identity provider, or nobody (401). */
@Injectable()
export class AuthService {
  private readonly platformTokenHash: Buffer;

  constructor(
    private readonly keys: ApiKeysRepository,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly oidc: OidcAuthenticator,
  ) {
    this.platformTokenHash = Buffer.from(hashToken(config.platformAdminToken), 'hex');
  }

  async authenticate(header: string | undefined): Promise<Principal> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match) throw ApiError.unauthorized();
    const token = match[1];
    const digest = Buffer.from(hashToken(token), 'hex');
    if (timingSafeEqual(digest, this.platformTokenHash)) return { type: 'platform', id: 'platform' };
    if (this.oidc.handles(token)) return this.oidc.authenticate(token);
    if (!token.startsWith(API_KEY_PREFIX) || token.length > 200) throw ApiError.unauthorized();
    const row = await this.keys.findActiveByDigest(digest.toString('hex'));
    // The lookup is by digest; comparing the digests again keeps the decision itself constant-time.
    if (!row || !timingSafeEqual(Buffer.from(row.token_hash, 'hex'), digest)) throw ApiError.unauthorized();
    return { type: 'api_key', id: row.id, orgId: row.org_id, roles: row.roles, orgScopes: row.scopes };
  }
}
