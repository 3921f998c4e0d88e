import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';

export class LivenessView {
  @ApiProperty({ enum: ['ok'] }) status: 'ok';
}

const CHECKS: ApiPropertyOptions = {
  type: 'object',
  additionalProperties: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['up', 'down'] } }, additionalProperties: true },
  example: { database: { status: 'up' } },
};

/** What `GET /health/ready` answers while every dependency answers (the shape of @nestjs/terminus). */
export class ReadinessView {
  @ApiProperty({ enum: ['ok'] }) status: 'ok';
  @ApiProperty({ ...CHECKS, description: 'The checks that passed, by name.' }) info: Record<string, { status: string }>;
  @ApiProperty({ ...CHECKS, example: {}, description: 'The checks that failed, by name: empty in a 200.' }) error: Record<string, { status: string }>;
  @ApiProperty({ ...CHECKS, description: 'Every check, by name.' }) details: Record<string, { status: string }>;
}
