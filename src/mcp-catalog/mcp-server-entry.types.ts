/**
 * What a catalog entry declares: a vendor's MCP server as the code base allows it to be used.
 * Static and reviewed in code review, like a capability: an organization chooses an entry and
 * supplies its own credentials (and, only where the entry says so, a URL); nothing in a request
 * can add a server, a command or an environment variable.
 */

export const MCP_TRANSPORTS = ['streamable-http', 'stdio'] as const;
export type McpTransport = (typeof MCP_TRANSPORTS)[number];

export interface McpCredentialField {
  /** The key in a connection's `credentials`. */
  name: string;
  description: string;
  required: boolean;
  /** Streamable HTTP: the request header that carries it (e.g. `Authorization`). */
  header?: string;
  /** Stdio: the environment variable the process receives it in. */
  env?: string;
}

/** A local package run over stdio: `node <package>/<script> ...args`, with only `env` and the credentials' variables. */
export interface McpStdioLaunch {
  /** An installed npm package (a dependency of this project). */
  package: string;
  /** The script inside the package, run with the same Node that runs the server. */
  script: string;
  args: readonly string[];
  /** The whole environment besides credentials: nothing of the server's own is inherited. */
  env?: Readonly<Record<string, string>>;
}

export interface McpServerEntryDefinition {
  id: string;
  name: string;
  category: string;
  description: string;
  transport: McpTransport;
  /** A vendor's fixed endpoint. Absent for streamable-http: the connection supplies it (`urlRequired`). */
  url?: string;
  credentials: readonly McpCredentialField[];
  /** Organization scopes a connection of this entry needs. */
  scopes: readonly string[];
  /** Whether the server's `readOnlyHint` / `destructiveHint` may lower a tool's risk below `destructive`. */
  trustAnnotations: boolean;
  /** Required for stdio, refused otherwise. */
  stdio?: McpStdioLaunch;
}
