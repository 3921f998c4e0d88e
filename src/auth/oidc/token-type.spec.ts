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

  it("refuses other tokens by their claims: Keycloak's logout, refresh and offline typ, Cognito's token_use, a security event (attack round 12, H-F2)", () => {
    for (const typ of ['Logout', 'Refresh', 'Offline', 'id']) {
      expect(notAnAccessToken({ alg: 'RS256', typ: 'JWT' }, { ...access, typ })).toMatch(new RegExp(`typ "${typ}"`));
    }
    // Amazon Cognito writes no typ header and puts its ID token's audience (the client id) in aud.
    expect(notAnAccessToken({ alg: 'RS256' }, { ...access, token_use: 'id' })).toMatch(/token_use "id"/);
    expect(notAnAccessToken({ alg: 'RS256' }, { ...access, token_use: 5 })).toMatch(/token_use 5/);
    expect(notAnAccessToken({ alg: 'RS256' }, { ...access, token_use: 'access' })).toBeUndefined();
    expect(notAnAccessToken({ alg: 'RS256' }, { ...access, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } })).toMatch(
      /security event token/,
    );
  });

  it('refuses a token bound to a key (cnf: DPoP, a client certificate), which this server cannot check (attack round 12, H-F1)', () => {
    expect(notAnAccessToken({ alg: 'RS256', typ: 'at+jwt' }, { ...access, cnf: { jkt: '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I' } })).toMatch(
      /bound to a key \(cnf/,
    );
    expect(notAnAccessToken({ alg: 'RS256' }, { ...access, cnf: { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' } })).toMatch(/bearer tokens only/);
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
