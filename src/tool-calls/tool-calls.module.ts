import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { CapabilitiesModule } from '../capabilities/capabilities.module';
import { ApprovalsController } from './approvals.controller';
import { CallSettledNotifier } from './call-settled.notifier';
import { IdempotencyService } from './idempotency.service';
import { ToolCallSweeper } from './tool-call-sweeper.service';
import { ToolCallsController } from './tool-calls.controller';
import { ToolCallsRepository } from './tool-calls.repository';
import { ToolCallsService } from './tool-calls.service';
import { ToolExecutor } from './tool-executor.service';

/**
 * Governed tool execution: the executor every entry point goes through, the tool-call and
 * approval endpoints, and the sweeper. Import it (for ToolExecutor) to add an entry point.
 */
@Module({
  imports: [AgentsModule, CapabilitiesModule],
  controllers: [ToolCallsController, ApprovalsController],
  providers: [ToolExecutor, ToolCallsRepository, ToolCallsService, IdempotencyService, CallSettledNotifier, ToolCallSweeper],
  exports: [ToolExecutor, ToolCallsService, CallSettledNotifier],
})
export class ToolCallsModule {}
