import { Global, Module } from '@nestjs/common';
import { SecretsService } from './secrets.service';

/** Global: MCP credentials, model API keys and webhook secrets are all sealed by the one service. */
@Global()
@Module({ providers: [SecretsService], exports: [SecretsService] })
export class SecretsModule {}
