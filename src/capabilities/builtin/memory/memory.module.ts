import { Module } from '@nestjs/common';
import { MemoryCapability } from './memory.capability';
import { MemoryRepository } from './memory.repository';
import { MemoryTools } from './memory.tools';

/** Exports the repository for `memory-write`, which writes the same table. */
@Module({
  providers: [MemoryRepository, MemoryTools, MemoryCapability],
  exports: [MemoryRepository],
})
export class MemoryCapabilityModule {}
