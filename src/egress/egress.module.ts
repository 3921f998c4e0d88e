import { Global, Module } from '@nestjs/common';
import { EgressService } from './egress.service';

/** Global: every module that talks to the outside (MCP clients, webhooks, model providers, OIDC) goes through it. */
@Global()
@Module({ providers: [EgressService], exports: [EgressService] })
export class EgressModule {}
