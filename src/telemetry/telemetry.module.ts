import { Global, Module } from '@nestjs/common';
import { DatabaseMetrics } from './database-metrics';
import { Metrics } from './metrics';
import { MetricsController } from './metrics.controller';

/** Metrics for the whole application; `Metrics` is injectable everywhere to record what happens. */
@Global()
@Module({ providers: [Metrics, DatabaseMetrics], controllers: [MetricsController], exports: [Metrics] })
export class TelemetryModule {}
