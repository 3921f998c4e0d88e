import { canonicalJson } from './canonical-json';
import { hash } from 'node:crypto';
import type { ToolRisk } from '../capabilities/capability.types';

/** SHA-256 hex of the RFC 8785 canonical JSON: equal meaning, equal hash, whatever the key order. */
export function canonicalHash(value: unknown): string {
  return textHash(canonicalJson(value));
}

/** SHA-256 hex of text: of canonical JSON already written, `canonicalHash` of the value it was written from. */
export function textHash(text: string): string {
  return hash('sha256', text, 'hex');
}

/** What a published version pins of each tool it offers: exactly what the model and the approver saw. */
export interface ToolDefinitionFacts {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  risk: ToolRisk;
  requiresApproval: boolean;
}

export function toolDigest(tool: ToolDefinitionFacts): string {
  return canonicalHash({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    risk: tool.risk,
    requiresApproval: tool.requiresApproval,
  });
}

/** What makes two publishes the same version: the normalized spec and every pinned tool digest. */
export function contentHash(specHash: string, toolDigests: Record<string, string>): string {
  return canonicalHash({ specHash, toolDigests });
}

/** A record's own entry: a tool id such as `constructor` must not find Object.prototype's. */
export function ownEntry<T>(record: Record<string, T> | undefined, key: string): T | undefined {
  return record !== undefined && Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

/**
 * What a version pins of an MCP catalog tool: what the model and the approver saw, the server's
 * annotations, and where a call of it goes (the connection, and the tool's key there). A pin that
 * named no connection let another bound connection listing an exact copy take the pinned tool's
 * calls, arguments and all.
 */
export interface McpToolDefinitionFacts extends ToolDefinitionFacts {
  annotations: Record<string, unknown>;
  connectionId: string;
  /** `<connection name>/<tool name>`: the server's own name of the tool, under an override too. */
  toolId: string;
}

export function mcpToolDigest(tool: McpToolDefinitionFacts): string {
  // Canonical JSON sorts keys: the older format's facts and the connection's, in one object.
  return canonicalHash({ ...definitionOf(tool), connectionId: tool.connectionId, toolId: tool.toolId });
}

/**
 * The digest versions published before pins named the connection hold. Still honoured while one
 * tool alone carries the name (see oneToolPerName): those versions keep working until republished.
 */
export function legacyMcpToolDigest(tool: McpToolDefinitionFacts): string {
  return canonicalHash(definitionOf(tool));
}

function definitionOf(tool: McpToolDefinitionFacts) {
  const { name, description, inputSchema, annotations, risk, requiresApproval } = tool;
  return { name, description, inputSchema, annotations, risk, requiresApproval };
}
