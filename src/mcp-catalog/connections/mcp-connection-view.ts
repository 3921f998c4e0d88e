import type { ToolRisk } from '../../capabilities/capability.types';
import { shownUrl } from '../../common/url-secrets';
import type { McpConnectionView } from '../mcp-catalog.dto';
import type { McpConnectionRow } from './mcp-connections.repository';
import { riskOf } from './mcp-tools';

/** API.md McpConnection: never the credentials, only their names; the URL's query values and token-shaped path segments `[redacted]`. */
export function toConnectionView(row: McpConnectionRow, trustAnnotations: boolean): McpConnectionView {
  return {
    id: row.id,
    server: row.server,
    name: row.name,
    ...(row.url !== null ? { url: shownUrl(row.url) } : {}),
    status: row.status,
    ...(row.error ? { error: row.error } : {}),
    credentialNames: row.credential_names,
    tools: row.tools.map((t) => ({ ...t, ...riskOf(t, trustAnnotations, ownRisk(row.risk_overrides, t.name)) })),
    syncedAt: new Date(row.synced_at).toISOString(),
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** An admin's decision on one tool; a tool named like an Object.prototype member finds none. */
export function ownRisk(overrides: Record<string, ToolRisk>, tool: string): ToolRisk | undefined {
  return Object.prototype.hasOwnProperty.call(overrides, tool) ? overrides[tool] : undefined;
}
