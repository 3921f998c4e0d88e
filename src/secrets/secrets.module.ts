import { Global, Module } from '@nestjs/common';
import { ResealOnStart } from './reseal-on-start.service';
import { SecretsService } from './secrets.service';

/** Global: MCP credentials, model API keys and webhook secrets are all sealed by the one service. */
@Global()
@Module({ providers: [SecretsService, ResealOnStart], exports: [SecretsService] })
export class SecretsModule {}
