import { ClaimError, mapClaims, principalIdOf, scopesOf } from './oidc-claims';
import { missingScope } from './token-scopes';
import type { OidcPrincipal } from '../principal';

const names = { orgClaim: 'org_id', rolesClaim: 'roles' };

describe('claim mapping', () => {
  it('maps subject, organization, known roles and scopes', () => {
    expect(mapClaims({ sub: 'alice', org_id: 'acme', roles: ['builder', 'root', 'viewer', 'builder'], scope: 'api mcp:tools' }, names)).toEqual({
      subject: 'alice',
      orgRef: 'acme',
      roles: ['viewer', 'builder'],
      scopes: ['api', 'mcp:tools'],
    });
  });

  it('reads configured claim names, roles given as a string, and scp arrays', () => {
    const mapped = mapClaims(
      { sub: 's', 'https://example.com/org': 'acme', groups: 'agent, approver admin2', scp: ['mcp:tools'] },
      {
        orgClaim: 'https://example.com/org',
        rolesClaim: 'groups',
      },
    );
    expect(mapped).toMatchObject({ orgRef: 'acme', roles: ['agent', 'approver'], scopes: ['mcp:tools'] });
  });

  it('keeps no roles it does not know, and no scopes when the token has no scope claim', () => {
    expect(mapClaims({ sub: 's', org_id: 'acme', roles: [{ admin: true }, 42, 'superuser'] }, names)).toEqual({
      subject: 's',
      orgRef: 'acme',
      roles: [],
      scopes: undefined,
    });
    expect(mapClaims({ sub: 's', org_id: 'acme', roles: 'admin' }, names).roles).toEqual(['admin']);
    expect(scopesOf({ scope: '' })).toEqual([]);
  });

  it('refuses a token without a usable subject or organization', () => {
    expect(() => mapClaims({ org_id: 'acme' }, names)).toThrow(ClaimError);
    expect(() => mapClaims({ sub: '', org_id: 'acme' }, names)).toThrow(/sub claim/);
    expect(() => mapClaims({ sub: 'x'.repeat(256), org_id: 'acme' }, names)).toThrow(/sub claim/);
    expect(() => mapClaims({ sub: 'a\nb', org_id: 'acme' }, names)).toThrow(/sub claim/);
    // Not text: stored as U+FFFD, two subjects would be one actor.
    expect(() => mapClaims({ sub: 'a\ud800b', org_id: 'acme' }, names)).toThrow(/sub claim/);
    expect(mapClaims({ sub: 'a\ud83d\ude00b', org_id: 'acme' }, names).subject).toBe('a😀b');
    expect(() => mapClaims({ sub: 's' }, names)).toThrow(/org_id claim/);
    expect(() => mapClaims({ sub: 's', org_id: ['acme'] }, names)).toThrow(/org_id claim/);
  });

  it('refuses a subject that would display as another or drive a terminal: C1 controls, bidi and other format characters', () => {
    for (const bad of [
      'mallory\u0085',
      'a\u009b31m',
      'mallory\u202eadmin',
      'a\u2066b\u2069',
      'a\u200eb',
      'a\u200fb',
      'a\u061cb',
      'ad\u00admin',
      'a\u200bb',
      'a\ufeffb',
      'a\u2028b',
      'a\u2029b',
      'a\u{e0041}',
      // Blank, or showing as nothing.
      'alice ',
      ' alice',
      'alice\u00a0',
      '   ',
      '\u3000',
      'alice\u3164',
      '\u115f',
      '\u2800',
      'ali\u034fce',
      'alice\ufe0f',
      'alice\ufffe',
    ]) {
      expect(() => mapClaims({ sub: bad, org_id: 'acme' }, names)).toThrow(/sub claim/);
    }
    // Text outside Latin stays a subject, joiners of emoji sequences included.
    for (const good of ['müller', 'ユーザー', 'user@example.com', 'Ann Lee', '\u{1f469}\u200d\u{1f469}\u200d\u{1f467}', 'auth0|5f7c8ec7c33c6c004bbafe82']) {
      expect(mapClaims({ sub: good, org_id: 'acme' }, names).subject).toBe(good);
    }
  });

  it('refuses a subject shown like another: not NFC, a space other than U+0020, a leading mark, mixed scripts', () => {
    const refusal = (sub: string) => {
      try {
        mapClaims({ sub, org_id: 'acme' }, names);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    };
    // josé as e + U+0301 beside the composed josé; both composed forms of one text are one subject.
    expect(refusal('jose\u0301')).toMatch(/sub claim must be in Unicode normalization form C/);
    expect(refusal('jos\u00e9')).toBeUndefined();
    for (const space of ['\u00a0', '\u3000', '\u2002', '\u202f', '\u205f', '\u1680']) {
      expect(refusal(`alice${space}smith`)).toMatch(/sub claim must hold no space other than U\+0020/);
    }
    expect(refusal('alice smith')).toBeUndefined();
    expect(refusal('\u0301')).toMatch(/sub claim must not start with a combining mark/);
    expect(refusal('\u0301alice')).toMatch(/combining mark/);
    expect(refusal('\u093fa')).toMatch(/combining mark/);
    for (const mixed of ['\u0430lice', 'p\u0430ypal', '\u03bfpen', 'abc\u0915', '\u0915\u0964\u0995', 'ㄅ한', 'a\ue000', 'a\u0378']) {
      expect(refusal(mixed)).toMatch(/sub claim must not mix scripts/);
    }
    // One script, or a mix UTS #39 allows, with Common (digits, punctuation) and Inherited marks: still subjects.
    for (const good of [
      'алиса',
      'Ελληνικά',
      'ユーザー',
      'user_ユーザー漢字',
      '한국어漢字',
      'ㄅㄆ中文',
      'müller-42',
      'Zoë',
      '\u0915\u093f\u0964',
      'auth0|64f1c0ffee',
      'a\u0301b'.normalize('NFC'),
    ]) {
      expect([good, refusal(good)]).toEqual([good, undefined]);
    }
  });

  it('refuses a zero-width joiner or non-joiner where it shows as nothing, and keeps it where a script or an emoji needs it', () => {
    const refusal = (sub: string) => {
      try {
        mapClaims({ sub, org_id: 'acme' }, names);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    };
    for (const bad of [
      // alice, shown as alice; and subjects shown as no one.
      'al\u200cice',
      'alice\u200d',
      '\u200calice',
      'al\u200dice',
      '\u200d',
      '\u200c\u200c',
      '\u200d\u200c\u200d',
      // A joiner not right after the virama, or one after another.
      '\u0915\u093f\u200d\u0937',
      '\u0915\u094d\u200d\u200d\u0937',
      '\u0915\u094d\u200c\u200d\u0937',
      '\u0915\u200d\u094d\u0937',
      // ZWNJ after a letter that does not join the next (alef), before none, or at either end; ZWJ between Arabic letters.
      '\u0627\u200c\u0628',
      '\u0628\u0627\u200c\u0628',
      '\u0628\u200c',
      '\u200c\u0628',
      '\u0628\u200c\u0621',
      '\u0628\u200d\u0628',
      '\u0628\u200c\u200c\u0628',
      // Emoji side by side that no sequence makes one picture of, or a joiner hanging off a sequence.
      '\u{1f436}\u200d\u{1f431}',
      '\u{1f469}\u200d',
      '\u{1f469}\u200d\u{1f469}\u200d\u{1f467}\u200d',
      'alice\u200d\u{1f469}',
    ]) {
      expect([bad, refusal(bad)]).toEqual([bad, expect.stringMatching(/sub claim must hold a zero-width joiner or non-joiner only after a virama/)]);
    }
    for (const good of [
      // Devanagari ksha with a half ka, and with a visible virama; Malayalam and Sinhala after their viramas.
      '\u0915\u094d\u200d\u0937',
      '\u0915\u094d\u200c\u0937',
      '\u0928\u094d\u200d',
      '\u0d28\u0d4d\u200c\u0d28',
      '\u0dc1\u0dca\u200d\u0dbb',
      // Persian: "I want" and "houses" (the non-joiner after a dual-joining letter, before a dual- or right-joining one), with a mark between.
      '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645',
      '\u062e\u0627\u0646\u0647\u200c\u0647\u0627',
      '\u0628\u0650\u200c\u0627',
      // Emoji ZWJ sequences: a family, a technologist with a skin tone.
      '\u{1f469}\u200d\u{1f469}\u200d\u{1f467}',
      'ann-\u{1f9d1}\u{1f3fd}\u200d\u{1f4bb}',
    ]) {
      expect([good, refusal(good)]).toEqual([good, undefined]);
    }
    // A sequence whose emoji need U+FE0F is refused for the selector, as before: it shows as nothing beside a text-style emoji.
    expect(refusal('\u{1f3f3}\ufe0f\u200d\u{1f308}')).toMatch(/printable characters/);
    // Nothing visible at all: variation selectors and other default-ignorables, marks, spaces.
    for (const blank of ['\ufe0f', '\u200d\ufe0f', '\u034f', '\u3164\u200c', ' \u200d ', '\u094d\u200d']) {
      expect([blank, refusal(blank)]).toEqual([blank, expect.stringMatching(/sub claim/)]);
    }
  });

  it('reads only own claims: prototype names configured as claims find nothing', () => {
    const payload = JSON.parse('{"sub":"s","org_id":"acme","__proto__":{"roles":["admin"]}}') as Record<string, unknown>;
    expect(mapClaims(payload, { orgClaim: 'org_id', rolesClaim: 'roles' }).roles).toEqual([]);
    expect(() => mapClaims({ sub: 's' }, { orgClaim: 'constructor', rolesClaim: 'toString' })).toThrow(/constructor claim/);
    expect(mapClaims({ sub: 's', org_id: 'acme' }, { orgClaim: 'org_id', rolesClaim: '__proto__' }).roles).toEqual([]);
  });

  it('derives one stable UUID per issuer and subject', () => {
    const id = principalIdOf('https://idp.example.com', 'alice');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(principalIdOf('https://idp.example.com', 'alice')).toBe(id);
    expect(principalIdOf('https://other.example.com', 'alice')).not.toBe(id);
    expect(principalIdOf('https://idp.example.com', 'bob')).not.toBe(id);
  });
});

describe('token scopes', () => {
  const person = (tokenScopes?: string[]): OidcPrincipal => ({
    type: 'oidc',
    id: 'i',
    subject: 's',
    orgId: 'o',
    roles: ['admin'],
    orgScopes: [],
    tokenScopes,
    expiresAt: Date.now() + 60_000,
  });
  const mcp = '/api/v1/agents/:agentId/mcp';
  const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } };
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

  it('do not narrow a token without a scope claim, nor an API key', () => {
    expect(missingScope(person(), mcp, call)).toBeUndefined();
    expect(missingScope(person(), '/api/v1/agents', undefined)).toBeUndefined();
    expect(missingScope({ type: 'api_key', id: 'k', orgId: 'o', roles: ['agent'], orgScopes: [] }, mcp, call)).toBeUndefined();
  });

  it('need mcp:tools for tools/call (also inside a batch) but not to list tools', () => {
    expect(missingScope(person(['api']), mcp, call)).toBe('mcp:tools');
    // A task is a call's answer delivered later: reading or acting on it is calling, whatever the method.
    for (const method of ['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel', 'resources/read', 'made/up']) {
      expect([method, missingScope(person(['openid']), mcp, { jsonrpc: '2.0', id: 1, method, params: { taskId: 't' } })]).toEqual([method, 'mcp:tools']);
    }
    for (const method of ['initialize', 'server/discover', 'ping', 'tools/list', 'notifications/initialized', 'notifications/cancelled']) {
      expect([method, missingScope(person(['openid']), mcp, { jsonrpc: '2.0', method })]).toEqual([method, undefined]);
    }
    expect(missingScope(person(['api']), mcp, [list, call])).toBe('mcp:tools');
    expect(missingScope(person([]), mcp, list)).toBeUndefined();
    expect(missingScope(person(['mcp:tools']), mcp, call)).toBeUndefined();
  });

  it('need api for the REST API', () => {
    expect(missingScope(person(['mcp:tools']), '/api/v1/agents', undefined)).toBe('api');
    expect(missingScope(person(['api']), '/api/v1/agents', undefined)).toBeUndefined();
  });
});
