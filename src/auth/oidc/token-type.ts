import type { JWTPayload, ProtectedHeaderParameters } from 'jose';

/**
 * Claims only an OpenID Connect ID token carries: hashes binding it to the access token, code or
 * state it came with (OIDC Core 3.1.3.6, 3.3.2.11; FAPI's `s_hash`). An access token has no use for them.
 */
const ID_TOKEN_CLAIMS = ['at_hash', 'c_hash', 's_hash'] as const;

/**
 * Keycloak's `typ` claim for the tokens it signs with the realm's keys that are not access tokens
 * (`Bearer`): ID tokens, back-channel logout tokens, and refresh and offline tokens.
 */
const KEYCLOAK_OTHER_TYPES = new Set(['id', 'logout', 'refresh', 'offline']);

/**
 * Why a verified token is not an access token, or undefined. The provider signs ID tokens (and
 * logout tokens) with the same keys, and an ID token's `aud` is its client's id: where that id is
 * also `OIDC_AUDIENCE` (one registration used as both), every ID token of the client was accepted
 * as a bearer token here, and front ends hand ID tokens to other services as proof of who signed
 * in (attack round 9, C-F3). RFC 9068 types an access token `at+jwt`; most providers still write
 * `JWT` for both, so what is refused is what says it is something else: a `typ` that is neither
 * (Okta's `application/okta-internal-at+jwt` ends like an access token's), an ID token's own
 * claims, Keycloak's `typ` claim other than `Bearer`, Amazon Cognito's `token_use` other than
 * `access`, or a security event token's `events` (RFC 8417: logout tokens are ones). An ID token
 * that carries none of these (Entra's, from the code flow) is not told apart: give the API an
 * audience of its own, or, where the provider types its access tokens, set
 * `OIDC_REQUIRED_TOKEN_TYPE=at+jwt` (`requireTyped`).
 *
 * A token bound to a key (`cnf`: DPoP, RFC 9449, or a client certificate, RFC 8705) is refused
 * too: its binding is what makes a stolen copy useless, and this server, which takes bearer tokens
 * only, cannot check that the caller holds the key (RFC 9449 §7.2: such a token received as a
 * bearer token must be refused). Attack round 12, H-F1 and H-F2.
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
  if (own('typ') && typeof payload.typ === 'string' && KEYCLOAK_OTHER_TYPES.has(payload.typ.toLowerCase())) {
    return `The token says it is not an access token (typ ${JSON.stringify(payload.typ)}): send the access token.`;
  }
  if (own('token_use') && payload.token_use !== 'access') {
    return `The token says it is not an access token (token_use ${JSON.stringify(payload.token_use)}): send the access token.`;
  }
  if (own('events')) return 'The token is a security event token (events), such as a logout token, not an access token.';
  if (own('cnf')) {
    return 'The token is bound to a key (cnf: DPoP or a client certificate) whose possession this server cannot check; it takes bearer tokens only.';
  }
  return undefined;
}
