import { Module } from '@nestjs/common';
import { CompactionCapability } from './compaction.capability';

@Module({
  providers: [CompactionCapability],
})
export class CompactionCapabilityModule {}
