import { Module } from '@nestjs/common';
import { KnowledgeCapability } from './knowledge.capability';
import { KnowledgeTools } from './knowledge.tools';

/** Needs the application's DataSource (global through TypeOrmModule.forRoot). */
@Module({
  providers: [KnowledgeTools, KnowledgeCapability],
})
export class KnowledgeCapabilityModule {}
