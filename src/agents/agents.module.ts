import { Module } from '@nestjs/common';
import { CapabilitiesModule } from '../capabilities/capabilities.module';
import { GovernanceModule } from '../governance/governance.module';
import { KnowledgeModule } from '../knowledge/knowledge.module';
import { SkillsModule } from '../skills/skills.module';
import { McpCatalogModule } from '../mcp-catalog/mcp-catalog.module';
import { AgentsController } from './agents.controller';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { SpecValidator } from './spec-validator.service';
import { VersionBuilder } from './version-builder.service';
import { VersionComposer } from './version-composer.service';
import { VersionStore } from './version-store.service';
import { PublishedVersionsRepository } from './published-versions.repository';
import { VersionsController } from './versions.controller';
import { VersionsService } from './versions.service';

/**
 * Agents, their drafts and published versions. Exports VersionBuilder: every path that runs a
 * tool (the executor) builds the version through it.
 */
@Module({
  imports: [CapabilitiesModule, GovernanceModule, KnowledgeModule, SkillsModule, McpCatalogModule],
  controllers: [AgentsController, VersionsController],
  providers: [AgentsRepository, AgentsService, SpecValidator, PublishedVersionsRepository, VersionStore, VersionComposer, VersionBuilder, VersionsService],
  exports: [AgentsService, VersionBuilder],
})
export class AgentsModule {}
