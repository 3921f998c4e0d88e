import { isCallToolResult, type CallToolResult, type StandardSchemaV1 } from '@modelcontextprotocol/client';
import { McpUpstreamError } from './mcp-failures';

/** How the pool checks a server's answers, in place of the SDK's schemas (see each). */

/**
 * The most content items a tool's result may hold: each is checked, redacted and measured apart,
 * and a million of them (37 MB) took seconds of the event loop (attack round 8). Tools answer
 * with a few.
 */
export const MAX_CONTENT_ITEMS = 10_000;

/**
 * A tool's result as the server sent it, once checked to be one. The SDK's callTool parse copies
 * `structuredContent` key by key, and a key named `__proto__` then set a prototype instead of
 * being kept: the vendor's data silently changed. (Its output-schema check needs the list the
 * SDK caches from its own paging, which listTools no longer uses.)
 */
export const AS_SENT: StandardSchemaV1<unknown, CallToolResult> = {
  '~standard': {
    version: 1,
    vendor: 'capability-platform',
    validate: (value) => {
      const record = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
      if (Array.isArray(record?.content) && record.content.length > MAX_CONTENT_ITEMS) {
        throw new McpUpstreamError(
          'result_too_large',
          `the MCP server answered with ${record.content.length} content items, more than ${MAX_CONTENT_ITEMS}; not read further`,
        );
      }
      // The SDK's schema defaults a missing `content` to none; its guard wants one.
      if (record && isCallToolResult(record.content === undefined ? { ...record, content: [] } : record)) return { value: record as CallToolResult };
      return { issues: [{ message: 'the answer is not a tools/call result' }] };
    },
  },
};

/**
 * A page of a tool list as the server sent it, once its `tools` is an array: each tool is checked
 * as it is made storable (ListedToolsCollector). The SDK's schema check walked every key of every
 * tool first, 1.8 s for one schema of 500,000 properties.
 */
export const LIST_AS_SENT: StandardSchemaV1<unknown, { tools: unknown[]; nextCursor?: unknown }> = {
  '~standard': {
    version: 1,
    vendor: 'capability-platform',
    validate: (value) => {
      const record = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
      if (record && Array.isArray(record.tools)) return { value: record as { tools: unknown[]; nextCursor?: unknown } };
      return { issues: [{ message: 'the answer is not a tools/list result' }] };
    },
  },
};
