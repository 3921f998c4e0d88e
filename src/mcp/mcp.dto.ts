import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

export class McpQuery {
  @ApiPropertyOptional({ minimum: 1, description: 'Pins a published version. Default: the latest one, looked up again on every request.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(2147483647)
  version?: number;
}
