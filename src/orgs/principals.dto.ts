import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsUUID } from 'class-validator';

/** The most ids one request names: a page of approvals or versions names fewer people and keys. */
export const MAX_PRINCIPAL_IDS = 100;

export class PrincipalsQuery {
  @ApiProperty({
    type: String,
    description: `Comma-separated ids (UUIDs, any letter case) as records hold them: \`requestedBy\`, \`decidedBy\`, \`publishedBy\`; 1 to ${MAX_PRINCIPAL_IDS}.`,
    example: '0f8fad5b-d9cb-469f-a165-70867728950e,7c9e6679-7425-40de-944b-e07fc1f90ae7',
  })
  // Repeated (`ids=a&ids=b`) or comma-separated, the same list; duplicates are one id.
  @Transform(({ value }: { value: unknown }) => {
    if (value === undefined) return value;
    const parts = (Array.isArray(value) ? value : [value]).flatMap((v) => (typeof v === 'string' ? v.split(',') : [v]));
    return [...new Set(parts.map((v) => (typeof v === 'string' ? v.trim().toLowerCase() : v)))];
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_PRINCIPAL_IDS)
  @IsUUID('all', { each: true, message: 'each of ids must be a UUID' })
  ids: string[];
}

export class PrincipalView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: ['api_key', 'oidc'], description: 'An API key of the organization, or a person who signed in through the identity provider.' })
  type: 'api_key' | 'oidc';
  @ApiProperty({ description: "The key's name, or the person's `sub` as the identity provider sent it." }) name: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'When the key was revoked (keys only).' }) revokedAt?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'When the key stops, or stopped, being accepted (keys given an expiry only).' })
  expiresAt?: string;
}

export class PrincipalList {
  @ApiProperty({
    type: [PrincipalView],
    description: "The ids that name one of the organization's keys or people; others (another organization's, unknown) are left out.",
  })
  items: PrincipalView[];
}
