import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { EventsModule } from '../events/events.module';
import { GovernanceModule } from '../governance/governance.module';
import { RuntimeModule } from '../runtime/runtime.module';
import { CancelledRunApprovals } from './cancelled-run-approvals';
import { ModelProvidersController } from './model-providers.controller';
import { ModelProvidersRepository } from './model-providers.repository';
import { ModelProvidersService } from './model-providers.service';
import { RevokedKeyRuns } from './revoked-key-runs';
import { RunEngine } from './run-engine.service';
import { RunRetentionSweeper } from './run-retention.service';
import { RunSignals } from './run-signals';
import { RunWorker } from './run-worker.service';
import { RunsController } from './runs.controller';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';

/** Model providers and agent runs: the model loop, every tool call through the executor. */
@Module({
  imports: [AgentsModule, EventsModule, GovernanceModule, RuntimeModule],
  controllers: [ModelProvidersController, RunsController],
  providers: [
    CancelledRunApprovals,
    ModelProvidersRepository,
    ModelProvidersService,
    RevokedKeyRuns,
    RunEngine,
    RunRetentionSweeper,
    RunSignals,
    RunWorker,
    RunsRepository,
    RunsService,
  ],
  exports: [RunWorker],
})
export class RunsModule {}
