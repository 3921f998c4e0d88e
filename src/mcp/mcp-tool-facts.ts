import type { Type } from '@nestjs/common';
import type { VersionTool } from '../agents/built-version';
import { classSchema } from '../capabilities/class-schema';
import type { ToolFacts } from './mcp-shapes';

/** Output classes are code: their schema is made once per class, not per `tools/list`. */
const schemas = new WeakMap<Type<object>, Record<string, unknown>>();

function outputSchemaOf(cls: Type<object>): Record<string, unknown> {
  let schema = schemas.get(cls);
  if (!schema) {
    schema = classSchema(cls, { requireDefaults: false }).schema;
    schemas.set(cls, schema);
  }
  return schema;
}

/**
 * What MCP lists about a tool beyond the offered tool: the declaration's output shape and hints;
 * a vendor's tool is open-world. A tool that needs approval lists no output shape: its call can
 * answer "still waiting", which is no result of the tool, and MCP clients refuse a result without
 * the structured content a listed `outputSchema` promises.
 */
export function factsOf(tool: VersionTool): ToolFacts {
  const d = tool.declaration;
  return {
    ...(d.output && !tool.requiresApproval ? { outputSchema: outputSchemaOf(d.output) } : {}),
    idempotent: d.idempotent === true,
    openWorld: tool.source !== undefined || d.openWorld === true,
  };
}
