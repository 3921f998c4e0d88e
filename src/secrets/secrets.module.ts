import { Global, Module } from '@nestjs/common';
import { PositionSealsModule } from './position-seals.module';
import { ResealOnStart } from './reseal-on-start.service';
import { SecretsService } from './secrets.service';

/**
 * Global: MCP credentials, model API keys and webhook secrets are all sealed by the one service;
 * stream positions and the audit cursor by PositionSeals.
 */
@Global()
@Module({ imports: [PositionSealsModule], providers: [SecretsService, ResealOnStart], exports: [SecretsService, PositionSealsModule] })
export class SecretsModule {}
