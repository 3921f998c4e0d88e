import { Module } from '@nestjs/common';
import { RuntimeModule } from '../runtime/runtime.module';
import { ApprovalsController } from './approvals.controller';
import { ToolCallSweeper } from './tool-call-sweeper.service';
import { ToolCallsController } from './tool-calls.controller';
import { ToolCallsService } from './tool-calls.service';

/**
 * The REST face of tool calls and approvals (requests go to the runtime's executor), their reads,
 * and the sweeper. The runtime provides their repository.
 */
@Module({
  imports: [RuntimeModule],
  controllers: [ToolCallsController, ApprovalsController],
  providers: [ToolCallsService, ToolCallSweeper],
  exports: [ToolCallsService],
})
export class ToolCallsModule {}
