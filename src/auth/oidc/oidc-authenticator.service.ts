import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  type JWTVerifyResult,
  type ProtectedHeaderParameters,
} from 'jose';
import { ApiError } from '../../common/api-error';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { OidcConfig } from '../../config/auth-config';
import { EgressTooLargeError } from '../../egress/egress-policy';
import { EgressService } from '../../egress/egress.service';
import type { OidcPrincipal } from '../principal';
import { ClaimError, mapClaims, principalIdOf } from './oidc-claims';
import { KeysUnavailableError, OidcKeyStore } from './oidc-keys';
import { OidcOrgsRepository } from './oidc-orgs.repository';
import { PeopleRepository } from './people.repository';
import { notAnAccessToken } from './token-type';
import { detachedFromCaller } from '../../telemetry/trace-context';
import { IntrospectionUnavailableError, TokenIntrospection } from './token-introspection';

/**
 * The most keys a token that names no `kid` is tried with, when the provider publishes several of
 * its algorithm (a rotation: two or three). Bounded, as anyone may send such a token.
 */
export const MAX_KEYS_WITHOUT_KID = 8;

/**
 * `jwtVerify` with the provider's keys. A token without `kid` matches every published key of its
 * algorithm, and jose then refuses it (JWKSMultipleMatchingKeys) rather than choose: while a
 * provider that names no `kid` in its tokens published its next key beside the current one, every
 * sign-in was `401` (attack round 12, H-F3). Each candidate is tried, up to MAX_KEYS_WITHOUT_KID;
 * only a signature that does not verify moves on to the next (an expired token is expired by any key).
 */
async function verifiedByAnyKey(token: string, resolve: JWTVerifyGetKey, options: JWTVerifyOptions): Promise<JWTVerifyResult> {
  try {
    return await jwtVerify(token, resolve, options);
  } catch (err) {
    if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
    let tried = 0;
    for await (const key of err) {
      if (++tried > MAX_KEYS_WITHOUT_KID) break;
      try {
        return await jwtVerify(token, key, options);
      } catch (failed) {
        if (!(failed instanceof errors.JWSSignatureVerificationFailed)) throw failed;
      }
    }
    throw new errors.JWSSignatureVerificationFailed();
  }
}

/**
 * `verifiedByAnyKey`, and once more after the keys are fetched again for a token that names no
 * `kid` and that no key held verifies: a provider that signs without `kid` and switched to a key it
 * published since had its people refused until the keys held grew old (ten minutes); a token with
 * an unknown `kid` is fetched for already (OidcKeyStore.resolve). Both share the fetches' cooldown.
 */
async function verified(token: string, keys: OidcKeyStore, options: JWTVerifyOptions): Promise<JWTVerifyResult> {
  try {
    return await verifiedByAnyKey(token, keys.resolve, options);
  } catch (err) {
    if (!(err instanceof errors.JWSSignatureVerificationFailed) || decodeProtectedHeader(token).kid !== undefined || !(await keys.fetchAgain())) throw err;
    return verifiedByAnyKey(token, keys.resolve, options);
  }
}

/** Asymmetric algorithms only: `none` and HMAC (whose key would be public) never verify a token. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
/** Three base64url segments; the signature may be empty so that an unsigned token is refused by the verifier, by name. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const MAX_TOKEN_LENGTH = 16 * 1024;
/** 9999-12-31T23:59:59Z in seconds: the latest `exp` taken. */
const LATEST_EXP = 253402300799;
const MAX_DOCUMENT_BYTES = 512 * 1024;
const FETCH_TIMEOUT_MS = 10_000;
/** An introspection answer is a small JSON object; past this it is refused unread. */
const MAX_INTROSPECTION_BYTES = 64 * 1024;

/**
 * Sign-in through the organization's identity provider: a JWT access token from `OIDC_ISSUER`,
 * verified against the provider's published keys (fetched through the egress policy), becomes an
 * `oidc` principal of the organization its org claim names. See docs/security.md.
 */
@Injectable()
export class OidcAuthenticator {
  private readonly logger = new Logger('OidcAuthenticator');
  private readonly oidc?: OidcConfig;
  private readonly keys?: OidcKeyStore;
  private readonly introspection?: TokenIntrospection;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly egress: EgressService,
    private readonly orgs: OidcOrgsRepository,
    private readonly people: PeopleRepository,
  ) {
    this.oidc = config.oidc;
    if (this.oidc) {
      this.keys = new OidcKeyStore({
        issuer: this.oidc.issuer,
        fetchJson: (url) => this.fetchJson(url),
        refreshCooldownMs: this.oidc.keyRefreshCooldownMs,
        maxAgeMs: this.oidc.keysMaxAgeMs,
        // Discovery then the key set, each within FETCH_TIMEOUT_MS (body included, in the egress policy).
        fetchTimeoutMs: 2 * FETCH_TIMEOUT_MS + 1000,
        onFetchError: (message) => this.logger.warn(`identity provider keys not fetched: ${message}`),
        onIgnoredKeys: (message) => this.logger.warn(`identity provider keys: ${message}`),
      });
      if (this.oidc.introspection)
        this.introspection = new TokenIntrospection(this.oidc.introspection, (url, headers, body) => this.postForm(url, headers, body));
    }
  }

  /** The identity provider's issuer, when one is configured. */
  get issuer(): string | undefined {
    return this.oidc?.issuer;
  }

  /** True when the token is the identity provider's to judge: one is configured and the token is shaped like a JWT. */
  handles(token: string): boolean {
    return this.oidc !== undefined && token.length <= MAX_TOKEN_LENGTH && JWT_SHAPE.test(token);
  }

  async authenticate(token: string): Promise<OidcPrincipal> {
    const { oidc, keys } = this;
    if (!oidc || !keys) throw ApiError.unauthorized();
    let payload: JWTPayload;
    let header: ProtectedHeaderParameters;
    try {
      ({ payload, protectedHeader: header } = await verified(token, keys, {
        issuer: oidc.issuer,
        audience: oidc.audience,
        clockTolerance: oidc.clockSkewSeconds,
        algorithms: ALGORITHMS,
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (err) {
      throw this.refusal(err);
    }
    // jose takes any number: a provider writing "never" as exp 10^13 (or 1e400, read as Infinity) made
    // the token's end past what a Date holds, and GET /me answered 500 (attack round 20, AB-F3). As
    // an API key's, a token's end is before the year 10000.
    if (!((payload.exp as number) <= LATEST_EXP)) throw ApiError.unauthorized("The token's exp claim is not accepted (it is past the year 9999).");
    const otherType = notAnAccessToken(header, payload, oidc.requireAccessTokenType);
    if (otherType) throw ApiError.unauthorized(otherType);
    let claims;
    try {
      claims = mapClaims(payload as Record<string, unknown>, oidc);
    } catch (err) {
      if (err instanceof ClaimError) throw ApiError.unauthorized(err.message);
      throw err;
    }
    // jwtVerify required `exp` and checked that it is a number. The skew on top of the last second
    // of 9999 made GET /me answer `+010000-01-01T00:00:59.000Z`, which is no RFC 3339 date-time.
    const expiresAt = Math.min((payload.exp as number) + oidc.clockSkewSeconds, LATEST_EXP) * 1000;
    if (this.introspection) await this.assertActive(token, expiresAt);
    const org = await this.orgs.findByIdOrSlug(claims.orgRef);
    if (!org) throw ApiError.unauthorized("The token's organization is not known here.");
    const id = principalIdOf(oidc.issuer, claims.subject);
    await this.people.seen(org.id, id, claims.subject);
    return {
      type: 'oidc',
      id,
      subject: claims.subject,
      orgId: org.id,
      roles: claims.roles,
      orgScopes: org.scopes,
      ...(claims.scopes ? { tokenScopes: claims.scopes } : {}),
      expiresAt,
    };
  }

  /** 401 for a token the provider revoked (OIDC_INTROSPECTION_URL); 503 when it could not say. */
  private async assertActive(token: string, expiresAt: number): Promise<void> {
    let active: boolean;
    try {
      active = await this.introspection!.isActive(token, expiresAt);
    } catch (err) {
      const why = err instanceof IntrospectionUnavailableError ? err.message : `the introspection endpoint was not reached (${(err as Error).message})`;
      this.logger.warn(`token introspection failed: ${why}`);
      throw new ApiError('service_unavailable', 'The identity provider could not say whether the token is still active; try again shortly.');
    }
    if (!active) throw ApiError.unauthorized('The identity provider no longer holds the token active (revoked, or its session ended).');
  }

  /** The introspection endpoint's POST, through the egress policy, bounded in time and size as the provider's documents are. */
  private async postForm(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
    try {
      // The node's own question, shared by every request with the token: none of a caller's trace headers go with it.
      const response = await detachedFromCaller(() =>
        this.egress.fetch(url, { method: 'POST', headers, body, timeoutMs: FETCH_TIMEOUT_MS, maxBytes: MAX_INTROSPECTION_BYTES }),
      );
      return { status: response.status, text: await response.text() };
    } catch (err) {
      if (err instanceof EgressTooLargeError)
        throw new IntrospectionUnavailableError(`the introspection endpoint answered more than ${MAX_INTROSPECTION_BYTES} bytes`);
      throw err;
    }
  }

  /** Why a token was refused, in words its bearer can act on; the provider being unreachable is not the token's fault. */
  private refusal(err: unknown): ApiError {
    if (err instanceof KeysUnavailableError) {
      return new ApiError('service_unavailable', "The identity provider's signing keys could not be fetched; try again shortly.");
    }
    if (err instanceof errors.JWTExpired) return ApiError.unauthorized('The token has expired.');
    if (err instanceof errors.JWTClaimValidationFailed) return ApiError.unauthorized(`The token's ${err.claim} claim is not accepted (${err.reason}).`);
    if (err instanceof errors.JOSEAlgNotAllowed) return ApiError.unauthorized("The token's signing algorithm is not accepted.");
    if (err instanceof errors.JWSSignatureVerificationFailed) return ApiError.unauthorized("The token's signature does not verify.");
    if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
      return ApiError.unauthorized('The token is not signed by a key the identity provider publishes.');
    }
    if (err instanceof errors.JOSEError) return ApiError.unauthorized('The token is not a well-formed, signed JWT.');
    if (err instanceof TypeError) return ApiError.unauthorized('The token is not a well-formed, signed JWT.');
    return err instanceof ApiError ? err : ApiError.unauthorized();
  }

  /**
   * One document of the provider, through the egress policy: FETCH_TIMEOUT_MS covers its body too
   * (a provider that sends headers then a byte now and then would otherwise hold every sign-in),
   * and a body past a size no discovery document or key set reaches is refused unread.
   */
  private async fetchJson(url: string): Promise<unknown> {
    let text: string;
    try {
      // Made in the request of whichever token asked first (a stranger's, with a made-up `kid`) and
      // shared by every sign-in: none of that caller's trace headers go to the provider.
      const response = await detachedFromCaller(() =>
        this.egress.fetch(url, { headers: { accept: 'application/json' }, timeoutMs: FETCH_TIMEOUT_MS, maxBytes: MAX_DOCUMENT_BYTES }),
      );
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw new KeysUnavailableError(`${url} answered ${response.status}`);
      }
      text = await response.text();
    } catch (err) {
      if (err instanceof EgressTooLargeError) throw new KeysUnavailableError(`${url} answered more than ${MAX_DOCUMENT_BYTES} bytes`);
      throw err;
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new KeysUnavailableError(`${url} did not answer JSON`);
    }
  }
}
