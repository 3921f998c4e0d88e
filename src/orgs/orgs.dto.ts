import { IsPrintableText } from '../common/printable-text';
import { SCOPE_PATTERN } from '../common/scopes';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsDefined,
  IsInt,
  IsISO8601,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateBy,
  ValidateIf,
} from 'class-validator';
import { ArrayUnique } from '../common/unique-list';
import { Role, ROLES } from '../auth/principal';

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{1,62}$/;
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An identity provider's org claim names an organization by id or by slug: a slug shaped like a
 * UUID (another organization's id, even) would make the claim ambiguous, so none is one.
 */
function IsNotUuidShaped(): PropertyDecorator {
  return ValidateBy({
    name: 'notUuidShaped',
    validator: {
      validate: (v: unknown) => typeof v !== 'string' || !UUID_SHAPE.test(v),
      defaultMessage: () => 'slug must not be shaped like a UUID (an org claim names an organization by id or slug)',
    },
  });
}

export class CreateOrgDto {
  @ApiProperty({
    pattern: SLUG_PATTERN.source,
    example: 'acme',
    description: "Unique; not shaped like a UUID (an identity provider's org claim is an id or a slug).",
  })
  @IsString()
  @Matches(SLUG_PATTERN, { message: 'slug must match ^[a-z0-9][a-z0-9-]{1,62}$' })
  @IsNotUuidShaped()
  slug: string;

  @ApiProperty({ example: 'Acme Corp' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional({ type: [String], example: ['knowledge:read'] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(200)
  @ArrayUnique()
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  @Matches(SCOPE_PATTERN, { each: true, message: 'each scope must match ^[a-z0-9_.-]+(:[a-z0-9_.-]+)*$' })
  scopes?: string[];
}

export class UpdateScopesDto {
  @ApiProperty({ type: [String] })
  @IsArray()
  @ArrayMaxSize(200)
  @ArrayUnique()
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  @Matches(SCOPE_PATTERN, { each: true, message: 'each scope must match ^[a-z0-9_.-]+(:[a-z0-9_.-]+)*$' })
  scopes: string[];
}

/** The most agents one key may be pinned to (the column's CHECK says the same). */
export const MAX_KEY_AGENTS = 100;

export class CreateApiKeyDto {
  @ApiProperty({
    example: 'support-bot runtime',
    description: 'Printable characters only: no control, format (bidi) or invisible characters, no space at either end.',
  })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  // Shown in the console's key list and the audit log beside the key's actions: a bidi override or a line break would show another name.
  @IsPrintableText()
  name: string;

  @ApiProperty({ enum: ROLES, isArray: true })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayUnique()
  @IsIn(ROLES, { each: true })
  roles: Role[];

  @ApiPropertyOptional({
    format: 'date-time',
    type: String,
    nullable: true,
    maxLength: 64,
    example: '2027-06-30T00:00:00Z',
    description:
      'When the key stops being accepted (ISO 8601; without a zone, UTC; a date alone, its midnight UTC): later than now, before the year 10000. From then on it is refused `401` as a revoked key is, what it opened (event streams, runs, held MCP calls) ends, and it no longer counts against the 1,000 keys. Absent or null: until it is revoked.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsISO8601({ strict: true, strictSeparator: true })
  @IsFutureInstant()
  expiresAt?: string | null;

  @ApiPropertyOptional({
    type: [String],
    format: 'uuid',
    nullable: true,
    minItems: 1,
    maxItems: MAX_KEY_AGENTS,
    description: `The agents the key may act for, for a key whose only role is \`agent\` (a runtime's): 1 to ${MAX_KEY_AGENTS} ids of the organization's agents. Any other agent is answered \`404\` to it (its versions, tool calls, MCP endpoint and runs), and its reads of tool calls and runs are of these agents only. Absent or null: every agent of the organization.`,
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_KEY_AGENTS)
  @ArrayUnique((id: unknown) => (typeof id === 'string' ? id.toLowerCase() : id))
  @IsUUID('all', { each: true })
  agentIds?: string[] | null;
}

/** Latest accepted expiry: what JavaScript, PostgreSQL and a person can all read as a date. */
const LATEST_EXPIRY = Date.UTC(10000, 0, 1);

/** The instant an ISO 8601 text names, a date-time without a zone read as UTC (not as the server's local time). */
export function instantOf(text: string): number {
  const zoned = !text.includes('T') || /(?:[zZ]|[+-]\d\d(?::?\d\d)?)$/.test(text);
  return Date.parse(zoned ? text : `${text}Z`);
}

function IsFutureInstant(): PropertyDecorator {
  return ValidateBy({
    name: 'isFutureInstant',
    validator: {
      validate: (v: unknown) => {
        if (typeof v !== 'string') return true;
        const at = instantOf(v);
        return Number.isFinite(at) && at > Date.now() && at < LATEST_EXPIRY;
      },
      defaultMessage: (args) => `${args?.property ?? 'value'} must be a time after now and before the year 10000`,
    },
  });
}

export class OrgView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() slug: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: [String] }) scopes: string[];
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class ApiKeyView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: ROLES, isArray: true }) roles: Role[];
  @ApiProperty({ description: 'The first characters of the token, to recognize it.' }) tokenPrefix: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiPropertyOptional({ format: 'date-time', nullable: true }) revokedAt: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'When it stops being accepted; null: until it is revoked.' })
  expiresAt: string | null;
  @ApiProperty({
    type: [String],
    format: 'uuid',
    nullable: true,
    description: 'The agents it may act for; null: every agent of its organization.',
  })
  agentIds: string[] | null;
  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    description:
      'When it last authenticated a request, to within `SWEEP_INTERVAL_SECONDS` (each server records uses once a sweep); null: not since it was made (or since the upgrade that began recording it).',
  })
  lastUsedAt: string | null;
}

export class CreatedApiKeyView extends ApiKeyView {
  @ApiProperty({ description: 'Shown only in this answer; store it now.' }) token: string;
}

export class OrgPage {
  @ApiProperty({ type: [OrgView] }) items: OrgView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last one.' }) nextCursor: string | null;
}

export class ApiKeyPage {
  @ApiProperty({ type: [ApiKeyView] }) items: ApiKeyView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last one.' }) nextCursor: string | null;
}

/** `GET /me`: who the token belongs to. */
export class MeView {
  @ApiProperty({ enum: ['platform', 'api_key', 'oidc'] }) type: 'platform' | 'api_key' | 'oidc';
  @ApiProperty({ description: "`platform` for the platform admin; the API key's id; or the identity provider's subject (`sub`) for `oidc`." })
  id: string;
  @ApiPropertyOptional({ format: 'uuid', description: "The key's organization; absent for the platform admin." }) orgId?: string;
  @ApiPropertyOptional({ enum: ROLES, isArray: true, description: "The key's roles; absent for the platform admin." }) roles?: Role[];
  @ApiPropertyOptional({
    format: 'date-time',
    description:
      "When this credential stops being accepted: an API key's `expiresAt` (absent for a key without one), or an identity-provider token's `exp` and the clock skew allowed. A runtime reads it to replace its key before calls start failing.",
  })
  expiresAt?: string;
  @ApiPropertyOptional({ type: [String], format: 'uuid', description: 'The agents an API key is pinned to (absent: every agent of its organization).' })
  agentIds?: string[];
}

export const KEY_LIFETIME_DAYS_MAX = 3650;

export class ApiKeyPolicyDto {
  @ApiProperty({
    type: Number,
    nullable: true,
    minimum: 1,
    maximum: KEY_LIFETIME_DAYS_MAX,
    example: 90,
    description:
      'The longest a key made from now on may live, in days: one made without `expiresAt` expires that many days after it is made, one asking for later is `400` at `expiresAt`. Keys made before keep their expiry. `null`: no bound.',
  })
  @IsDefined()
  @ValidateIf((o: ApiKeyPolicyDto) => o.maxLifetimeDays !== null)
  @IsInt()
  @Min(1)
  @Max(KEY_LIFETIME_DAYS_MAX)
  maxLifetimeDays: number | null;
}

export class ApiKeyPolicyView {
  @ApiProperty({ type: Number, nullable: true, description: 'The longest a new key may live, in days; null: no bound.' }) maxLifetimeDays: number | null;
}
