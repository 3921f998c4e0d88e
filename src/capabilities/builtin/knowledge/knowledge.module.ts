import { Module } from '@nestjs/common';
import { KnowledgeModule } from '../../../knowledge/knowledge.module';
import { KnowledgeCapability } from './knowledge.capability';
import { KnowledgeTools } from './knowledge.tools';

/** Its tools search through the owner of the knowledge tables (src/knowledge). */
@Module({
  imports: [KnowledgeModule],
  providers: [KnowledgeTools, KnowledgeCapability],
})
export class KnowledgeCapabilityModule {}
