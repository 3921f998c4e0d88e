import { permits } from './auth.guard';
import { effectiveRoles, orgIdOf, Principal, Role } from './principal';
import { API_KEY_PREFIX, displayPrefix, generateApiKeyToken, hashToken, tokensEqual } from './tokens';

const key = (...roles: Role[]): Principal => ({
  type: 'api_key',
  id: 'k',
  orgId: 'o',
  roles,
  orgScopes: [],
});

describe('roles', () => {
  it('expands builder and approver to viewer, and admin to everything', () => {
    expect([...effectiveRoles(['builder'])].sort()).toEqual(['builder', 'viewer']);
    expect([...effectiveRoles(['approver'])].sort()).toEqual(['approver', 'viewer']);
    expect([...effectiveRoles(['agent'])]).toEqual(['agent']);
    expect([...effectiveRoles(['admin'])].sort()).toEqual(['admin', 'agent', 'approver', 'builder', 'viewer']);
  });

  it('lets a principal through only where the route allows it', () => {
    const platform: Principal = { type: 'platform', id: 'platform' };
    expect(permits(['platform'], platform)).toBe(true);
    expect(permits(['admin'], platform)).toBe(false);
    expect(permits(['authenticated'], platform)).toBe(true);
    expect(permits(['viewer'], key('builder'))).toBe(true);
    expect(permits(['viewer'], key('agent'))).toBe(false);
    expect(permits(['agent'], key('viewer'))).toBe(false);
    expect(permits(['platform'], key('admin'))).toBe(false);
    expect(permits(['approver'], key('admin'))).toBe(true);
  });

  it('lets a principal with no role only where any token will do (GET /me), not where being signed in is enough', () => {
    const platform: Principal = { type: 'platform', id: 'platform' };
    const nobody: Principal = { type: 'oidc', id: 'u', subject: 'eve', orgId: 'o', roles: [], orgScopes: [], expiresAt: Date.now() + 60_000 };
    expect(permits(['any-token'], nobody)).toBe(true);
    expect(permits(['authenticated'], nobody)).toBe(false);
    expect(permits(['platform', 'authenticated'], nobody)).toBe(false);
    expect(permits(['viewer'], nobody)).toBe(false);
    expect(permits(['any-token'], platform)).toBe(true);
    expect(permits(['authenticated'], key('agent'))).toBe(true);
    expect(permits(['any-token'], key('viewer'))).toBe(true);
  });

  it('refuses to take an organization from the platform principal', () => {
    expect(orgIdOf({ principal: key('viewer'), requestId: 'r' })).toBe('o');
    expect(() => orgIdOf({ principal: { type: 'platform', id: 'platform' }, requestId: 'r' })).toThrow(/platform principal/);
  });
});

describe('tokens', () => {
  it('are random, prefixed, carry 32 bytes of entropy, and are stored only as a digest', () => {
    const a = generateApiKeyToken();
    const b = generateApiKeyToken();
    expect(a.startsWith(API_KEY_PREFIX)).toBe(true);
    expect(a).not.toBe(b);
    expect(Buffer.from(a.slice(API_KEY_PREFIX.length), 'base64url')).toHaveLength(32);
    expect(hashToken(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(a)).not.toContain(a.slice(4, 12));
    expect(displayPrefix(a)).toBe(a.slice(0, 10));
    expect(tokensEqual(a, a)).toBe(true);
    expect(tokensEqual(a, b)).toBe(false);
  });
});
