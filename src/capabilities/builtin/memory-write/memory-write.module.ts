import { Module } from '@nestjs/common';
import { MemoryCapabilityModule } from '../memory/memory.module';
import { MemoryWriteCapability } from './memory-write.capability';
import { MemoryWriteTools } from './memory-write.tools';

/** Writes the table the `memory` capability reads, through its repository. */
@Module({
  imports: [MemoryCapabilityModule],
  providers: [MemoryWriteTools, MemoryWriteCapability],
})
export class MemoryWriteCapabilityModule {}
