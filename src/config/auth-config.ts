import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateIf } from 'class-validator';
import { emptyToUndefined, toInt } from './env-transforms';
import { DatabaseVariables } from './database-config';

/** Who may call: the platform token, and the identity provider whose tokens are accepted beside API keys. */
export class AuthVariables extends DatabaseVariables {
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  @MaxLength(512)
  PLATFORM_ADMIN_TOKEN?: string;

  /**
   * The identity provider whose JWT access tokens are accepted beside API keys (its OpenID
   * discovery document is read from `<issuer>/.well-known/openid-configuration`). Unset: API keys only.
   */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsString()
  @MaxLength(2048)
  @Matches(/^https?:\/\/[^\s"]+$/, { message: 'must be an https:// URL (the issuer exactly as the tokens name it)' })
  // An empty default (read as unset) makes it a key of a fresh instance, which is how parseEnvironment knows what to read.
  OIDC_ISSUER?: string = '';

  /** The `aud` the tokens must carry (required with OIDC_ISSUER). */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsString()
  @MaxLength(2048)
  @Matches(/^\S+$/, { message: 'must not contain spaces' })
  OIDC_AUDIENCE?: string = '';

  /**
   * `at+jwt`: only tokens typed as access tokens (RFC 9068 header `typ`) are taken, so no ID token
   * passes even where the audience is also a client's id. Unset: untyped and `JWT` tokens are taken
   * too, and ID tokens refused by what marks them (src/auth/oidc/token-type.ts).
   */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsIn(['at+jwt'], { message: 'must be at+jwt, or unset' })
  OIDC_REQUIRED_TOKEN_TYPE?: string = '';

  /**
   * The provider's token introspection endpoint (RFC 7662): set, every token is also asked about
   * there (as OIDC_CLIENT_ID with OIDC_CLIENT_SECRET), so one the provider revoked is refused within
   * OIDC_INTROSPECTION_CACHE_SECONDS. Unset: a token is taken until it expires.
   */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsString()
  @MaxLength(2048)
  @Matches(/^https?:\/\/[^\s"]+$/, { message: "must be an https:// URL (the provider's introspection_endpoint)" })
  OIDC_INTROSPECTION_URL?: string = '';

  /** The client this server introspects as (with OIDC_INTROSPECTION_URL). */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(/^[\x21-\x7e]{1,512}$/, { message: 'must be 1 to 512 printable ASCII characters without spaces' })
  OIDC_CLIENT_ID?: string = '';

  /** That client's secret. */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(/^[\x20-\x7e]{1,4096}$/, { message: 'must be 1 to 4096 printable ASCII characters' })
  OIDC_CLIENT_SECRET?: string = '';

  /** How long an answer of the introspection endpoint is taken for its token (and never past the token's exp); 0: asked at every request. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(300)
  OIDC_INTROSPECTION_CACHE_SECONDS: number = 30;

  /** The claim that names the organization, by its id or its slug. */
  @IsOptional()
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be a claim name (1 to 200 characters, no spaces)' })
  OIDC_ORG_CLAIM: string = 'org_id';

  /** The claim that lists the principal's roles (an array, or a space- or comma-separated string). */
  @IsOptional()
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be a claim name (1 to 200 characters, no spaces)' })
  OIDC_ROLES_CLAIM: string = 'roles';

  /** How far the clocks of this server and the identity provider may disagree when `exp` and `nbf` are checked. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(300)
  OIDC_CLOCK_SKEW_SECONDS: number = 60;

  /**
   * How long before an API key's `expiresAt` its organization is told (`api_key.expiring`, once), so
   * that whoever runs on it can replace it before calls start failing. 0: only `api_key.expired`.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(365)
  API_KEY_EXPIRY_NOTICE_DAYS: number = 7;

  /**
   * Keys one organization may make in any 24 hours. The 1,000 live keys bound counts keys that are
   * neither revoked nor expired, so keys made to expire at once (or revoked as made) were never
   * refused: 496 in 10 s, each a row and two audit events kept for good (attack round 20, AB-N1).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  API_KEYS_CREATED_PER_DAY: number = 1000;
}

export interface OidcConfig {
  /** Exactly as the tokens' `iss` names it. */
  issuer: string;
  audience: string;
  orgClaim: string;
  rolesClaim: string;
  clockSkewSeconds: number;
  /** The least time between two fetches of the provider's keys, however many unknown `kid`s arrive. */
  keyRefreshCooldownMs: number;
  /** Keys older than this are fetched again before the next verification (rotation without a new `kid` in sight). */
  keysMaxAgeMs: number;
  /** Only tokens whose header `typ` is an access token's (`OIDC_REQUIRED_TOKEN_TYPE=at+jwt`). */
  requireAccessTokenType?: boolean;
  /** Every token asked about at the provider's introspection endpoint (OIDC_INTROSPECTION_URL). */
  introspection?: { url: string; clientId: string; clientSecret: string; cacheMs: number };
}
