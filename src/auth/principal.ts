export const ROLES = ['viewer', 'builder', 'agent', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a key's roles let it do. builder and approver include viewer; admin is everything in its
 * organization. agent stands alone: a runtime's key reads only what it runs.
 */
export function effectiveRoles(roles: readonly Role[]): Set<Role> {
  const out = new Set<Role>(roles);
  if (out.has('admin')) ROLES.forEach((r) => out.add(r));
  if (out.has('builder') || out.has('approver')) out.add('viewer');
  return out;
}

export interface PlatformPrincipal {
  type: 'platform';
  id: 'platform';
}

export interface ApiKeyPrincipal {
  type: 'api_key';
  id: string;
  orgId: string;
  roles: Role[];
  /** The organization's granted scopes, read with the key in the same query. */
  orgScopes: string[];
  /**
   * On a route that names an agent and declares @ReadsAgentWithKey (a tool call): that agent as
   * it stood in the same query as the key, so the hot path reads the database once for both.
   */
  agent?: AgentSnapshot;
}

/**
 * An agent read together with the key, and the incident-response switches that apply to one of
 * its versions. Read on every request like the key itself: nothing of it is cached.
 */
export interface AgentSnapshot {
  /** What was asked: the route's agent id (lower case) and the body's version (`latest` unless a positive integer). */
  agentId: string;
  version: number | 'latest';
  /** null: no such agent in the key's organization. */
  agent: { id: string; slug: string; name: string; latest_version: number | null } | null;
  /** The version `version` names (the pointer for `latest`) is retired. */
  versionRetired: boolean;
  /** Every tool the organization disabled, by `toolKey(capabilityId, toolId)`. */
  disabledTools: ReadonlyMap<string, { reason: string | null }>;
}

export type Principal = PlatformPrincipal | ApiKeyPrincipal;

/** The explicit context every service method takes first: who acts, and for which request. */
export interface RequestContext {
  principal: Principal;
  requestId: string;
}

/** The organization an API key acts for; the platform admin acts for none. */
export function orgIdOf(ctx: RequestContext): string {
  if (ctx.principal.type !== 'api_key') {
    throw new Error('orgIdOf called for a platform principal: the route must not allow it');
  }
  return ctx.principal.orgId;
}

export function actorOf(principal: Principal): { type: string; id: string } {
  return { type: principal.type, id: principal.id };
}
