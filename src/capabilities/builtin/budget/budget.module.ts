import { Module } from '@nestjs/common';
import { BudgetCapability } from './budget.capability';

@Module({
  providers: [BudgetCapability],
})
export class BudgetCapabilityModule {}
