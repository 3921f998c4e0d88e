import { ApiProperty } from '@nestjs/swagger';

export const USAGE_METERS = ['knowledge', 'collections', 'documents', 'agents', 'runs', 'skills', 'api_keys', 'memories'] as const;
export type UsageMeterId = (typeof USAGE_METERS)[number];

/** One bound an organization is held to, and how much of it is used. */
export class UsageMeterView {
  @ApiProperty({ enum: USAGE_METERS, description: 'Which bound.' }) meter: UsageMeterId;
  @ApiProperty({ enum: ['bytes', 'items'] }) unit: 'bytes' | 'items';
  @ApiProperty({ type: 'integer', description: 'What the organization holds now, as the bound counts it.' }) used: number;
  @ApiProperty({ type: 'integer', description: 'The bound; past it new writes of this kind are `409 conflict`.' }) limit: number;
  @ApiProperty({ description: 'The setting (environment variable) that sets the bound, or `fixed`.', example: 'RUNS_MAX_BYTES_PER_ORG' }) setting: string;
}

export class UsageView {
  @ApiProperty({ type: [UsageMeterView] }) items: UsageMeterView[];
}
