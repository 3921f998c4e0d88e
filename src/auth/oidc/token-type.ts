import type { JWTPayload, ProtectedHeaderParameters } from 'jose';

/**
 * Claims only an OpenID Connect ID token carries: hashes binding it to the access token, code or
 * state it came with (OIDC Core 3.1.3.6, 3.3.2.11; FAPI's `s_hash`). An access token has no use for them.
 */
const ID_TOKEN_CLAIMS = ['at_hash', 'c_hash', 's_hash'] as const;

/**
 * Why a verified token is not an access token, or undefined. The provider signs ID tokens (and
 * logout tokens) with the same keys, and an ID token's `aud` is its client's id: where that id is
 * also `OIDC_AUDIENCE` (one registration used as both), every ID token of the client was accepted
 * as a bearer token here, and front ends hand ID tokens to other services as proof of who signed
 * in (attack round 9, C-F3). RFC 9068 types an access token `at+jwt`; most providers still write
 * `JWT` for both, so what is refused is what says it is something else: a `typ` that is neither
 * (Okta's `application/okta-internal-at+jwt` ends like an access token's), an ID token's own
 * claims, or Keycloak's `typ` claim `ID`. An ID token that carries none of these (Entra's, from
 * the code flow) is not told apart: give the API an audience of its own, or, where the provider
 * types its access tokens, set `OIDC_REQUIRED_TOKEN_TYPE=at+jwt` (`requireTyped`).
 */
export function notAnAccessToken(header: ProtectedHeaderParameters, payload: JWTPayload, requireTyped = false): string | undefined {
  const typ = header.typ;
  // OIDC_REQUIRED_TOKEN_TYPE: the provider types its access tokens, so anything else is not one.
  if (requireTyped && !(typeof typ === 'string' && typ.toLowerCase().endsWith('at+jwt'))) {
    return 'The token is not typed as an access token (typ at+jwt), which this server requires (OIDC_REQUIRED_TOKEN_TYPE).';
  }
  if (typ !== undefined) {
    const type = typeof typ === 'string' ? typ.toLowerCase() : '';
    if (type !== 'jwt' && !type.endsWith('at+jwt')) return `The token's type (typ ${JSON.stringify(typ)}) is not an access token's.`;
  }
  const own = (name: string) => Object.prototype.hasOwnProperty.call(payload, name);
  const marked = ID_TOKEN_CLAIMS.find(own);
  if (marked) return `The token carries ${marked}, which only an ID token does: send the access token.`;
  if (own('typ') && typeof payload.typ === 'string' && payload.typ.toLowerCase() === 'id') {
    return 'The token says it is an ID token (typ "ID"): send the access token.';
  }
  return undefined;
}
