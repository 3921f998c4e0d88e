import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { CapabilitiesModule } from '../capabilities/capabilities.module';
import { McpCatalogModule } from '../mcp-catalog/mcp-catalog.module';
import { McpToolResolver } from './mcp-tool.resolver';
import { VendorSchemaChecks } from './vendor-schema-checks';
import { GovernanceModule } from '../governance/governance.module';
import { ApprovalsRepository } from '../tool-calls/approvals.repository';
import { ToolCallMaintenanceRepository } from '../tool-calls/tool-call-maintenance.repository';
import { ToolCallsRepository } from '../tool-calls/tool-calls.repository';
import { CallSettledNotifier } from './call-settled.notifier';
import { CapabilityToolResolver } from './capability-tool.resolver';
import { DecisionWaiter } from './decision-waiter.service';
import { IdempotencyRepository } from '../tool-calls/idempotency.repository';
import { ToolApprovals } from './tool-approvals.service';
import { ToolCallGuards } from './tool-call-guards';
import { ToolCallsInFlight } from './tool-calls-in-flight';
import { ToolExecutor } from './tool-executor.service';
import { ToolImplementations } from './tool-implementations';
import { RunStorageRepository } from './run-storage.repository';
import { RunUsageCompactor } from './run-usage-compactor';
import { ToolRunner } from './tool-runner.service';

/**
 * Governed tool execution: the only module that runs tools. Entry points (REST, MCP, runs)
 * import it for ToolExecutor (asking for a call), ToolApprovals (deciding one) and
 * DecisionWaiter (waiting for a decision). ToolImplementations, the resolvers and ToolRunner are
 * deliberately not exported: nothing outside runs a tool.
 */
@Module({
  imports: [AgentsModule, CapabilitiesModule, GovernanceModule, McpCatalogModule],
  providers: [
    ToolExecutor,
    ToolCallsInFlight,
    ToolApprovals,
    DecisionWaiter,
    ToolCallGuards,
    ToolRunner,
    ToolImplementations,
    CapabilityToolResolver,
    McpToolResolver,
    VendorSchemaChecks,
    ToolCallsRepository,
    ApprovalsRepository,
    ToolCallMaintenanceRepository,
    IdempotencyRepository,
    CallSettledNotifier,
    RunStorageRepository,
    RunUsageCompactor,
  ],
  exports: [
    RunStorageRepository,
    ToolExecutor,
    ToolCallsInFlight,
    ToolApprovals,
    DecisionWaiter,
    ToolCallsRepository,
    IdempotencyRepository,
    ApprovalsRepository,
    ToolCallMaintenanceRepository,
    CallSettledNotifier,
  ],
})
export class RuntimeModule {}
