import type { OfferedTool } from './built-version';
import type { ToolFormat } from './versions.dto';

/** The fields a model is offered, without what only the executor needs. */
export function toOfferedTool(tool: OfferedTool): OfferedTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    capabilityId: tool.capabilityId,
    toolId: tool.toolId,
    risk: tool.risk,
    requiresApproval: tool.requiresApproval,
    ...(tool.source ? { source: { connectionId: tool.source.connectionId, server: tool.source.server } } : {}),
  };
}

/**
 * Provider shapes for function calling, ready to paste into a request unchanged. The `$schema`
 * keyword is dropped: it describes the document, not the arguments, and some providers refuse it.
 */
export function renderTool(tool: OfferedTool, format: ToolFormat): Record<string, unknown> {
  const { $schema: _dialect, ...parameters } = tool.inputSchema;
  if (format === 'openai') {
    return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
  }
  return { name: tool.name, description: tool.description, input_schema: parameters };
}
