import { DynamicModule, Module, ModuleMetadata } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ThrottlerStorage } from '@nestjs/throttler';
import { LoggerModule } from 'nestjs-pino';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import type { IncomingMessage } from 'node:http';
import { AgentsModule } from './agents/agents.module';
import { AuditModule } from './audit/audit.module';
import { AuthGuard } from './auth/auth.guard';
import { AuthModule } from './auth/auth.module';
import { CapabilitiesModule } from './capabilities/capabilities.module';
import { HeldRequests } from './common/held-requests';
import { ProblemFilter } from './common/problem.filter';
import { APP_CONFIG, AppConfig } from './config/app-config';
import { dataSourceOptions, withStatementTimeout } from './database/data-source-options';
import { EventsModule } from './events/events.module';
import { HealthModule } from './health/health.module';
import { KnowledgeModule } from './knowledge/knowledge.module';
import { McpModule } from './mcp/mcp.module';
import { McpCatalogModule } from './mcp-catalog/mcp-catalog.module';
import { OrgsModule } from './orgs/orgs.module';
import { RunsModule } from './runs/runs.module';
import { SkillsModule } from './skills/skills.module';
import { TelemetryModule } from './telemetry/telemetry.module';
import { traceFieldsOf } from './telemetry/trace-context';
import { SecretsModule } from './secrets/secrets.module';
import { EgressModule } from './egress/egress.module';
import { ToolCallsModule } from './tool-calls/tool-calls.module';

export interface AppModuleOptions {
  config: AppConfig;
  database: { url: string; poolSize: number };
  /** A shared store for rate limits when several API nodes run; default: per process. */
  rateLimitStore?: ThrottlerStorage;
  /** Extra modules, e.g. fixture capabilities that only tests register. */
  imports?: ModuleMetadata['imports'];
}

@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions): DynamicModule {
    const { config, database } = options;
    return {
      module: AppModule,
      global: true,
      imports: [
        LoggerModule.forRoot({
          pinoHttp: {
            level: config.logLevel,
            genReqId: (req: IncomingMessage) => (req as IncomingMessage & { requestId?: string }).requestId ?? 'unknown',
            redact: ['req.headers.authorization', 'req.headers.cookie'],
            customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
            serializers: {
              // With the trace the request belongs to, so logs and traces join. Serialized once, when
              // the request's logger is made (inside the request's span), and carried by every line
              // logged for the request.
              req: (req: { id: string; method: string; url: string; raw?: IncomingMessage }) => ({
                id: req.id,
                method: req.method,
                url: req.url,
                ...(req.raw ? traceFieldsOf(req.raw) : {}),
              }),
            },
          },
        }),
        TypeOrmModule.forRoot({
          ...withStatementTimeout(dataSourceOptions(database.url, database.poolSize), config.databaseStatementTimeoutMs),
          autoLoadEntities: false,
        }),
        TelemetryModule,
        RateLimitModule.forRoot(options.rateLimitStore),
        SecretsModule,
        EgressModule,
        AuditModule,
        AuthModule,
        HealthModule,
        OrgsModule,
        KnowledgeModule,
        SkillsModule,
        AgentsModule,
        CapabilitiesModule,
        ToolCallsModule,
        McpModule,
        RunsModule,
        McpCatalogModule,
        EventsModule,
        ...(options.imports ?? []),
      ],
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_FILTER, useClass: ProblemFilter },
        HeldRequests,
      ],
      exports: [APP_CONFIG, HeldRequests],
    };
  }
}
