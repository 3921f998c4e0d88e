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
  /** When the key stops being accepted (epoch ms), if its creator gave it an expiry: what it opened ends then. */
  expiresAt?: number;
  /**
   * The agents the key may act for (lower case), when its creator pinned it to some: any other agent
   * is answered as missing, and what it reads (tool calls, runs) is of these agents only.
   */
  agentIds?: readonly string[];
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
  /**
   * Every tool the organization disabled, by `toolKey(capabilityId, toolId)`, without reasons;
   * undefined when it disabled more than the key lookup carries (KEY_LOOKUP_SWITCHES).
   */
  disabledTools?: ReadonlySet<string>;
}

/** Someone signed in through the organization's identity provider (a JWT access token, src/auth/oidc). */
export interface OidcPrincipal {
  type: 'oidc';
  /**
   * A UUID derived from the issuer and the subject, stable across tokens: what records that hold
   * who asked or decided (`requestedBy`, `decidedBy`) store, as they store an API key's id.
   */
  id: string;
  /** The token's `sub`: what `GET /me` and audit actors show. */
  subject: string;
  orgId: string;
  roles: Role[];
  orgScopes: string[];
  /** The token's `scope` (or `scp`) claim, when it has one: it narrows the roles (src/auth/oidc/token-scopes.ts). */
  tokenScopes?: string[];
  /** When the guard stops accepting the token (`exp` and the clock skew allowed), in ms since the epoch: a stream it opened ends then. */
  expiresAt: number;
}

/** A principal that acts inside one organization: an API key, or a person signed in through its identity provider. */
export type OrgPrincipal = ApiKeyPrincipal | OidcPrincipal;

export type Principal = PlatformPrincipal | OrgPrincipal;

/** The agents this principal may act for and read of; undefined: every agent of its organization. */
export function agentScopeOf(principal: Principal): readonly string[] | undefined {
  return principal.type === 'api_key' ? principal.agentIds : undefined;
}

/** Whether the principal may act for (and read) this agent: its key is not pinned to others. */
export function mayActFor(principal: Principal, agentId: string): boolean {
  const scope = agentScopeOf(principal);
  return scope === undefined || scope.includes(agentId.toLowerCase());
}

export function isOrgPrincipal(principal: Principal): principal is OrgPrincipal {
  return principal.type !== 'platform';
}

/** The explicit context every service method takes first: who acts, and for which request. */
export interface RequestContext {
  principal: Principal;
  requestId: string;
}

/** The organization an API key (or a signed-in person) acts for; the platform admin acts for none. */
export function orgIdOf(ctx: RequestContext): string {
  if (!isOrgPrincipal(ctx.principal)) {
    throw new Error('orgIdOf called for a platform principal: the route must not allow it');
  }
  return ctx.principal.orgId;
}

/** Who acted, as audit events record it: a signed-in person by the token's subject. */
export function actorOf(principal: Principal): { type: string; id: string } {
  return { type: principal.type, id: principal.type === 'oidc' ? principal.subject : principal.id };
}

/**
 * Whose share of a node's shared budgets (bodies being read, answers unsent) a request takes: an
 * organization's keys and people together, so that minting keys does not mint shares.
 */
export function budgetOwnerOf(principal: Principal): string {
  return isOrgPrincipal(principal) ? `org:${principal.orgId}` : 'platform';
}

/**
 * Whether a principal is granted anything in its organization. A person whose token carries no role
 * the product knows may call `GET /me` alone, and so draws on nothing the organization shares.
 */
export function holdsRole(principal: Principal): boolean {
  return principal.type === 'platform' || principal.roles.length > 0;
}

/** The API key a request acts with, when it is one (a change that must not outlive its revocation: holdActingKey). */
export function actingKeyOf(principal: Principal): string | undefined {
  return principal.type === 'api_key' ? principal.id : undefined;
}
