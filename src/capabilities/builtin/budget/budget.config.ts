import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

export class BudgetConfig {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000)
  @JSONSchema({
    title: 'Tool calls per run',
    description:
      'The most tool calls one run (one `runId`) may make. Past it, calls are refused with `429 budget_exceeded` and nothing runs. Stops a looping agent from running up cost or side effects.',
  })
  maxToolCallsPerRun: number = 50;
}
