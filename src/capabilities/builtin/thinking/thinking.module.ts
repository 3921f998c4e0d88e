import { Module } from '@nestjs/common';
import { ThinkingCapability } from './thinking.capability';

@Module({
  providers: [ThinkingCapability],
})
export class ThinkingCapabilityModule {}
