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
