import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { decimalInteger } from '../common/decimal-integer';

export class McpQuery {
  @ApiPropertyOptional({ minimum: 1, description: 'Pins a published version. Default: the latest one, looked up again on every request.' })
  @IsOptional()
  @Transform(decimalInteger)
  @IsInt()
  @Min(1)
  @Max(2147483647)
  version?: number;
}
