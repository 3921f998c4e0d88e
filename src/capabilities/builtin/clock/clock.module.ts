import { Module } from '@nestjs/common';
import { ClockCapability } from './clock.capability';

@Module({
  providers: [ClockCapability],
})
export class ClockCapabilityModule {}
