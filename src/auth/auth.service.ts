import { Inject, Injectable } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { ApiError } from '../common/api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { toolKey } from '../runtime/tool-policy';
import { ActiveKeyWithAgentRow, ApiKeysRepository } from './api-keys.repository';
import { ApiKeyUsage } from './api-key-usage';
import { OidcAuthenticator } from './oidc/oidc-authenticator.service';
import type { AgentSnapshot, ApiKeyPrincipal, Principal } from './principal';
import { API_KEY_PREFIX, bearerTokenOf, hashToken } from './tokens';

/** Who a bearer token is: the platform admin, an organization's API key, a person signed in through the identity provider, or nobody (401). */
@Injectable()
export class AuthService {
  private readonly platformTokenHash: Buffer;

  constructor(
    private readonly keys: ApiKeysRepository,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly oidc: OidcAuthenticator,
    private readonly usage: ApiKeyUsage,
  ) {
    this.platformTokenHash = Buffer.from(hashToken(config.platformAdminToken), 'hex');
  }

  /**
   * `agent`: the route names an agent (a tool call): it is read in the same query as the key and
   * handed on as the principal's `agent` (AgentSnapshot). Revocation is unchanged: the key is read.
   */
  async authenticate(header: string | undefined, agent?: AgentRead): Promise<Principal> {
    const token = bearerTokenOf(header);
    if (token === undefined) throw ApiError.unauthorized();
    const digest = Buffer.from(hashToken(token), 'hex');
    if (timingSafeEqual(digest, this.platformTokenHash)) return { type: 'platform', id: 'platform' };
    if (this.oidc.handles(token)) return this.oidc.authenticate(token);
    if (!token.startsWith(API_KEY_PREFIX) || token.length > 200) throw ApiError.unauthorized();
    const withAgent = agent && UUID.test(agent.agentId);
    const row = withAgent
      ? await this.keys.findActiveWithAgent(digest.toString('hex'), agent.agentId, agent.version === 'latest' ? null : agent.version)
      : await this.keys.findActiveByDigest(digest.toString('hex'));
    // The lookup is by digest; comparing the digests again keeps the decision itself constant-time.
    if (!row || !timingSafeEqual(Buffer.from(row.token_hash, 'hex'), digest)) throw ApiError.unauthorized();
    const principal: ApiKeyPrincipal = { type: 'api_key', id: row.id, orgId: row.org_id, roles: row.roles, orgScopes: row.scopes };
    if (row.expires_at) principal.expiresAt = new Date(row.expires_at).getTime();
    if (row.agent_ids) principal.agentIds = row.agent_ids;
    this.usage.seen(row.id);
    if (withAgent) principal.agent = snapshotOf(agent, row as ActiveKeyWithAgentRow);
    return principal;
  }
}

/** The agent a route names, as the guard found it in the request (see ReadsAgentWithKey). */
export interface AgentRead {
  agentId: string;
  version: number | 'latest';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function snapshotOf(asked: AgentRead, row: ActiveKeyWithAgentRow): AgentSnapshot {
  return {
    agentId: asked.agentId.toLowerCase(),
    version: asked.version,
    agent: row.agent_id === null ? null : { id: row.agent_id, slug: row.agent_slug!, name: row.agent_name!, latest_version: row.agent_latest_version },
    versionRetired: row.version_retired,
    disabledTools: row.disabled_tools === null ? undefined : new Set(row.disabled_tools.map((d) => toolKey(d.capabilityId, d.toolId))),
  };
}
