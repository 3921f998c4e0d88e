import { IsOptional, IsString, IsTimeZone } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

export class ClockConfig {
  @IsOptional()
  @IsString()
  @IsTimeZone({ message: 'timezone must be an IANA time zone such as Europe/Paris' })
  @JSONSchema({
    title: 'Time zone',
    description: 'IANA time zone the date and time are given in, e.g. `Europe/Paris`.',
    examples: ['UTC', 'Europe/Paris', 'America/New_York'],
  })
  timezone: string = 'UTC';
}
