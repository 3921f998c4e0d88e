import { Global, Module } from '@nestjs/common';
import { PositionSealKeyRepository } from './position-seal-key.repository';
import { PositionSeals } from './position-seals';
import { ResealOnStart } from './reseal-on-start.service';
import { SecretsService } from './secrets.service';

/**
 * Global: MCP credentials, model API keys and webhook secrets are all sealed by the one service;
 * stream positions and the audit cursor by PositionSeals.
 */
@Global()
@Module({ providers: [SecretsService, ResealOnStart, PositionSealKeyRepository, PositionSeals], exports: [SecretsService, PositionSeals] })
export class SecretsModule {}
