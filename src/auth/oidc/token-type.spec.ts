import { notAnAccessToken } from './token-type';

describe('access tokens and ID tokens', () => {
  const access = { iss: 'https://idp', sub: 'ann', aud: 'api', exp: 1 };

  it('takes an access token typed at+jwt (and its media type forms), JWT, or untyped', () => {
    for (const typ of ['at+jwt', 'AT+JWT', 'application/at+jwt', 'application/okta-internal-at+jwt', 'JWT', 'jwt', undefined]) {
      expect(notAnAccessToken({ alg: 'RS256', typ }, access)).toBeUndefined();
    }
    // Keycloak's access tokens say so in a claim.
    expect(notAnAccessToken({ alg: 'RS256', typ: 'JWT' }, { ...access, typ: 'Bearer' })).toBeUndefined();
  });

  it('refuses a token of another type: logout, security event, DPoP proof, an ID token by name, a typ that is no string', () => {
    for (const typ of ['logout+jwt', 'secevent+jwt', 'dpop+jwt', 'id_token+jwt', 'JOSE', '']) {
      expect(notAnAccessToken({ alg: 'RS256', typ }, access)).toMatch(/not an access token's/);
    }
    expect(notAnAccessToken({ alg: 'RS256', typ: 5 as unknown as string }, access)).toMatch(/not an access token's/);
  });

  it("refuses an ID token by its own claims (at_hash, c_hash, s_hash) or Keycloak's typ ID, naming why", () => {
    expect(notAnAccessToken({ alg: 'RS256', typ: 'JWT' }, { ...access, at_hash: 'x', nonce: 'n' })).toMatch(/carries at_hash/);
    expect(notAnAccessToken({ alg: 'RS256' }, { ...access, c_hash: 'x' })).toMatch(/carries c_hash/);
    expect(notAnAccessToken({ alg: 'RS256' }, { ...access, s_hash: 'x' })).toMatch(/carries s_hash/);
    expect(notAnAccessToken({ alg: 'RS256', typ: 'JWT' }, { ...access, typ: 'ID' })).toMatch(/typ "ID"/);
    // A nonce alone is no sign: Keycloak puts one in access tokens too.
    expect(notAnAccessToken({ alg: 'RS256', typ: 'JWT' }, { ...access, nonce: 'n' })).toBeUndefined();
  });

  it('takes only tokens typed as access tokens when required (OIDC_REQUIRED_TOKEN_TYPE=at+jwt)', () => {
    for (const typ of ['at+jwt', 'application/at+jwt', 'application/okta-internal-at+jwt']) {
      expect(notAnAccessToken({ alg: 'RS256', typ }, access, true)).toBeUndefined();
    }
    // An unmarked ID token (Entra's, from the code flow) is told apart only this way.
    for (const typ of ['JWT', undefined]) expect(notAnAccessToken({ alg: 'RS256', typ }, access, true)).toMatch(/OIDC_REQUIRED_TOKEN_TYPE/);
  });

  it('reads own claims only', () => {
    const payload = Object.create({ at_hash: 'inherited' }) as Record<string, unknown>;
    Object.assign(payload, access);
    expect(notAnAccessToken({ alg: 'RS256' }, payload)).toBeUndefined();
  });
});
