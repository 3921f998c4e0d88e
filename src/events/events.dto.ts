import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional } from 'class-validator';
import { AUDIT_EVENT_TYPES } from '../audit/audit.service';

/** `types=a,b` and `types=a&types=b` both name two types. */
export const splitTypes = ({ value }: { value: unknown }): unknown => {
  const parts = Array.isArray(value) ? value : [value];
  if (!parts.every((p) => typeof p === 'string')) return value;
  return (parts as string[]).flatMap((p) => p.split(',')).map((p) => p.trim());
};

export class EventsQuery {
  @ApiPropertyOptional({
    type: String,
    example: 'approval.requested,approval.approved',
    description: `Comma-separated audit event types; only these are sent. One of: ${AUDIT_EVENT_TYPES.join(', ')}.`,
  })
  @IsOptional()
  @Transform(splitTypes)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(AUDIT_EVENT_TYPES.length)
  @IsIn(AUDIT_EVENT_TYPES, { each: true, message: 'each of types must be an audit event type' })
  types?: string[];
}
