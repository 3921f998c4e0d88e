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
}
