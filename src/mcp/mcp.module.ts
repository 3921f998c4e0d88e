import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { GovernanceModule } from '../governance/governance.module';
import { RuntimeModule } from '../runtime/runtime.module';
import { ToolCallsModule } from '../tool-calls/tool-calls.module';
import { McpController } from './mcp.controller';
import { McpHeldCalls } from './mcp-held-calls';
import { McpService } from './mcp.service';

/** Every published agent as an MCP server (Streamable HTTP), its tools run by the one executor. */
@Module({
  imports: [AgentsModule, GovernanceModule, RuntimeModule, ToolCallsModule],
  controllers: [McpController],
  providers: [McpService, McpHeldCalls],
})
export class McpModule {}
