import { Injectable, OnModuleInit } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { dirname, join, relative, isAbsolute } from 'node:path';
import { McpServerEntryExplorer } from './mcp-server-entry.explorer';
import { MCP_TRANSPORTS, McpServerEntryDefinition } from './mcp-server-entry.types';

/** API.md McpServerEntry without `available`. */
export interface McpServerDescriptor {
  id: string;
  name: string;
  category: string;
  description: string;
  transport: McpServerEntryDefinition['transport'];
  urlRequired: boolean;
  credentials: { name: string; description: string; required: boolean }[];
  scopes: string[];
  trustAnnotations: boolean;
}

/** An entry proven well-formed at boot, with its stdio command resolved to files that exist. */
export interface RegisteredMcpServer {
  definition: McpServerEntryDefinition;
  descriptor: McpServerDescriptor;
  /** stdio only: `process.execPath` and the absolute script path with the entry's arguments. */
  command?: { command: string; args: string[] };
}

/** The catalog set is malformed: the boot stops, naming every culprit. */
export class McpCatalogRegistrationError extends Error {
  constructor(readonly problems: string[]) {
    super(`The MCP catalog refused to start (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'McpCatalogRegistrationError';
  }
}

const ENTRY_ID = /^[a-z][a-z0-9-]{0,62}$/;
const CREDENTIAL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;
const SCOPE = /^[a-z0-9_.-]+(:[a-z0-9_.-]+)*$/;
/** Headers the transport owns: a credential must never be able to rewrite the protocol. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-type',
  'content-length',
  'accept',
  'connection',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'transfer-encoding',
]);

/**
 * Every MCP catalog entry the code base declares, validated at boot. The catalog route, the
 * connections and the client pool read entries only from here.
 */
@Injectable()
export class McpServerRegistry implements OnModuleInit {
  private state?: { byId: Map<string, RegisteredMcpServer>; sorted: RegisteredMcpServer[] };

  constructor(private readonly explorer: McpServerEntryExplorer) {}

  onModuleInit(): void {
    this.loaded();
  }

  all(): RegisteredMcpServer[] {
    return this.loaded().sorted;
  }

  get(id: string): RegisteredMcpServer | undefined {
    return this.loaded().byId.get(id);
  }

  private loaded() {
    if (this.state) return this.state;
    const { found, problems } = this.explorer.explore();
    const byId = new Map<string, RegisteredMcpServer>();
    for (const { definition, className } of found) {
      const own = checkEntry(definition, className);
      if (own.length === 0 && byId.has(definition.id)) own.push(`${className}: entry id "${definition.id}" is declared twice`);
      let command: RegisteredMcpServer['command'];
      if (own.length === 0 && definition.transport === 'stdio') {
        const resolved = resolveScript(definition);
        if (typeof resolved === 'string') own.push(`${className}: ${resolved}`);
        else command = resolved;
      }
      problems.push(...own);
      if (own.length === 0) byId.set(definition.id, { definition, descriptor: toDescriptor(definition), command });
    }
    if (problems.length > 0) throw new McpCatalogRegistrationError(problems);
    const sorted = [...byId.values()].sort((a, b) => (a.definition.id < b.definition.id ? -1 : 1));
    this.state = { byId, sorted };
    return this.state;
  }
}

function toDescriptor(d: McpServerEntryDefinition): McpServerDescriptor {
  return {
    id: d.id,
    name: d.name,
    category: d.category,
    description: d.description,
    transport: d.transport,
    urlRequired: d.transport === 'streamable-http' && d.url === undefined,
    credentials: d.credentials.map((c) => ({ name: c.name, description: c.description, required: c.required })),
    scopes: [...d.scopes],
    trustAnnotations: d.trustAnnotations,
  };
}

/** Every problem of one declaration (the decorator's type is not enforced at runtime). */
export function checkEntry(d: McpServerEntryDefinition | undefined, className: string): string[] {
  if (!d || typeof d !== 'object') return [`${className}: @McpServerEntry() needs a declaration`];
  const name = `${className} ("${String(d.id)}")`;
  const problems: string[] = [];
  const text = (v: unknown) => typeof v === 'string' && v.trim() !== '';
  if (typeof d.id !== 'string' || !ENTRY_ID.test(d.id)) problems.push(`${name}: id must match ${ENTRY_ID}`);
  for (const field of ['name', 'category', 'description'] as const) if (!text(d[field])) problems.push(`${name}: ${field} is required`);
  if (!MCP_TRANSPORTS.includes(d.transport)) problems.push(`${name}: transport must be one of ${MCP_TRANSPORTS.join(', ')}`);
  if (typeof d.trustAnnotations !== 'boolean') problems.push(`${name}: trustAnnotations must be declared (true or false)`);
  if (!Array.isArray(d.scopes) || !d.scopes.every((s) => typeof s === 'string' && SCOPE.test(s))) problems.push(`${name}: scopes must be a list of scopes`);
  if (!Array.isArray(d.credentials)) {
    problems.push(`${name}: credentials must be a list ([] for none)`);
  } else {
    const seen = new Set<string>();
    for (const c of d.credentials) {
      const cname = `${name} credential "${String(c?.name)}"`;
      if (!c || typeof c.name !== 'string' || !CREDENTIAL_NAME.test(c.name)) problems.push(`${cname}: name must match ${CREDENTIAL_NAME}`);
      else if (seen.has(c.name)) problems.push(`${cname}: declared twice`);
      else seen.add(c.name);
      if (!c || !text(c.description)) problems.push(`${cname}: description is required`);
      if (!c || typeof c.required !== 'boolean') problems.push(`${cname}: required must be true or false`);
      if (d.transport === 'streamable-http') {
        if (!c?.header || !HEADER_NAME.test(c.header) || RESERVED_HEADERS.has(c.header.toLowerCase()))
          problems.push(`${cname}: a streamable-http credential names the header it is sent in (not a header the transport owns)`);
        if (c?.env !== undefined) problems.push(`${cname}: env is for stdio entries`);
      }
      if (d.transport === 'stdio') {
        if (!c?.env || !ENV_NAME.test(c.env)) problems.push(`${cname}: a stdio credential names the environment variable it is passed in (${ENV_NAME})`);
        if (c?.header !== undefined) problems.push(`${cname}: header is for streamable-http entries`);
      }
    }
  }
  if (d.transport === 'streamable-http') {
    if (d.stdio !== undefined) problems.push(`${name}: stdio is for stdio entries`);
    if (d.url !== undefined) {
      let ok: boolean;
      try {
        ok = new URL(d.url).protocol === 'https:';
      } catch {
        ok = false;
      }
      if (!ok) problems.push(`${name}: url must be an https: URL (or absent, for the connection to supply)`);
    }
  }
  if (d.transport === 'stdio') {
    if (d.url !== undefined) problems.push(`${name}: a stdio entry has no url`);
    const s = d.stdio;
    if (!s || !text(s.package) || !text(s.script) || !Array.isArray(s.args) || !s.args.every((a) => typeof a === 'string')) {
      problems.push(`${name}: a stdio entry declares stdio { package, script, args }`);
    } else if (isAbsolute(s.script) || s.script.split(/[\\/]/).includes('..')) {
      problems.push(`${name}: stdio.script must be a path inside the package`);
    }
    for (const key of Object.keys(s?.env ?? {})) if (!ENV_NAME.test(key)) problems.push(`${name}: stdio.env "${key}" is not a variable name`);
  }
  return problems;
}

/** The script the entry runs, inside its installed package, or why it cannot be found. */
function resolveScript(d: McpServerEntryDefinition): { command: string; args: string[] } | string {
  const s = d.stdio!;
  let root: string;
  try {
    root = dirname(require.resolve(`${s.package}/package.json`));
  } catch {
    return `stdio package "${s.package}" is not installed (add it to package.json)`;
  }
  const script = join(root, s.script);
  if (relative(root, script).startsWith('..') || !existsSync(script)) return `stdio script "${s.script}" is not in package "${s.package}"`;
  return { command: process.execPath, args: [script, ...s.args] };
}
