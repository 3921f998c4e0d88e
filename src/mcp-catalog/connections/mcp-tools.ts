import { setImmediate as nextTurn } from 'node:timers/promises';
import { TOOL_RISKS, ToolRisk } from '../../capabilities/capability.types';
import { MAX_MESSAGE_DEPTH, MAX_MESSAGE_KEYS, messageCheck } from '../../common/json-shape';
import { MAX_NUMBER_GROWTH_CHARS, mayHoldUnstorableNumber, numbersGrowth } from '../../common/json-numbers';
import type { LruCache } from '../../common/lru-cache';
import { storablePrefix, withoutNulCharacters } from '../../common/nul-character';
import { redactSecrets, redactSecretsDeep } from '../../common/redact-secrets';
import type { RegisteredMcpServer } from '../mcp-server-registry.service';
import { McpUpstreamError } from './mcp-failures';
import { depth, MAX_LIST_VALUES, valuesIn } from './list-values';

/** A tool as the server listed it, kept as the connection's data (API.md McpTool without risk). */
export interface ListedMcpTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** A connection's tool as the executor and the composer see it: listed definition and effective risk. */
export interface ConnectionTool extends ListedMcpTool {
  risk: ToolRisk;
}

/** What the composer needs of a bound connection. */
export interface BoundConnection {
  id: string;
  name: string;
  server: string;
  entry: RegisteredMcpServer | undefined;
  /** Each frozen, and the same array while the list, its trust and its risk overrides are (the composer's memo depends on it). */
  tools: readonly ConnectionTool[];
  /** The stored list's length as JSON (0 when not read): what keeping something made of the list holds alive. */
  chars: number;
  /**
   * True when the connection's list was not read because the version's bound lists before it and
   * it weigh more than BOUND_LISTS_MAX_BYTES together: it offers nothing (publish refuses it).
   */
  overBound?: boolean;
  /** Digests of these tools as offered, kept with the stored list (StoredToolLists): see composeMcpTools. */
  digests: LruCache<string, string>;
}

export type RiskSource = 'admin' | 'annotations' | 'default';

/** API.md McpTool. */
export interface McpToolView extends ListedMcpTool {
  risk: ToolRisk;
  riskSource: RiskSource;
}

const MAX_NAME = 128;
const MAX_DESCRIPTION = 10_000;
const MAX_TITLE = 500;
/** Per tool, its schema and annotations as JSON text. */
const MAX_SCHEMA_CHARS = 64 * 1024;
const MAX_SCHEMA_DEPTH = 32;
/** The whole list as stored: about twenty times the largest vendor servers' lists. */
export const MAX_LIST_CHARS = 4 * 1024 * 1024;

/**
 * What the lists of one version's bound connections may weigh together (their stored JSON, in
 * bytes), as much as one list may hold: every build of the version (each call, each read of its
 * tools) reads and digests them, and twenty lists at the cap (80 MiB) cost seconds of a node's
 * event loop a call (attack round 12, J-F1).
 */
export const BOUND_LISTS_MAX_BYTES = MAX_LIST_CHARS;

/** A connection's tools when it offers none: always the same array, so what was composed of it is known to be unchanged. */
export const NO_TOOLS: readonly ConnectionTool[] = Object.freeze([]);

/** A server that lists more is refused: what an agent is offered must stay reviewable. */
export const MAX_LISTED_TOOLS = 500;

/**
 * What a server listed, made storable and safe to show: the connection's credentials redacted
 * wherever the server echoed them (the list is shown to every reader of the connection and
 * offered to agents and their models), strings well-formed and without U+0000 (PostgreSQL stores
 * neither lone surrogates in jsonb nor U+0000), sizes bounded, and only the fields the platform
 * uses. A server that lists something unusable is refused as a whole, so what an agent is offered
 * is never a silently trimmed version of what the server meant.
 */
export function sanitizeListedTools(raw: unknown[], credentials: Readonly<Record<string, string>> = {}): ListedMcpTool[] {
  const list = new ListedToolsCollector(credentials);
  list.add(raw);
  return list.tools;
}

/**
 * A tool list read page by page (see sanitizeListedTools), each page made storable as it arrives
 * and the whole refused as soon as it grows past its bounds: holding every raw page until the last
 * (50 pages of up to 64 MB) took a node to its heap limit.
 */
export class ListedToolsCollector {
  readonly tools: ListedMcpTool[] = [];
  private readonly seen = new Set<string>();
  /** `JSON.stringify(this.tools).length`, kept as tools are added: `[`, `]` and a comma between two. */
  private size = 1;
  /** How much longer than listed PostgreSQL will print the list's numbers (numbersGrowth), summed as tools are added. */
  private growth = 0;
  /** The values of its tools' schemas and annotations (MAX_LIST_VALUES). */
  private values = 0;
  /**
   * The member names of the list as stored, counted as tools are added: each page was held to
   * MAX_MESSAGE_KEYS as it arrived, but a list of several pages is stored, and parsed on each
   * node's first read of it, whole.
   */
  private readonly names = messageCheck(false, MAX_MESSAGE_DEPTH, MAX_MESSAGE_KEYS);

  constructor(private readonly credentials: Readonly<Record<string, string>> = {}) {}

  add(page: unknown[]): void {
    for (const item of page) this.addOne(item);
  }

  /**
   * The same, giving the event loop a turn after every TURN_CHARS of tools made storable: each
   * tool's redaction and cleaning walk it whole, and a list of 4 MiB took about a second of the
   * loop in one go, for every organization on the node (attack round 8).
   */
  async addInTurns(page: unknown[]): Promise<void> {
    let since = 0;
    for (const item of page) {
      since += this.addOne(item);
      if (since >= TURN_CHARS) {
        since = 0;
        await nextTurn();
      }
    }
  }

  /** The tool's size as stored. */
  private addOne(item: unknown): number {
    if (this.tools.length >= MAX_LISTED_TOOLS) throw new McpUpstreamError('upstream_unavailable', `the server lists more than ${MAX_LISTED_TOOLS} tools`);
    const tool = sanitizeTool(item, this.tools.length, this.seen, this.credentials);
    const text = JSON.stringify(tool);
    const size = text.length;
    this.size += size + 1;
    if (this.names(Buffer.from(text)) !== null) throw invalid(`its tools name more than ${MAX_MESSAGE_KEYS} distinct members`);
    // Each tool within its bounds, 500 of them still made a row of 35 MB, read and parsed on every
    // call of any of them (a call of a tiny tool took over a second).
    if (this.size > MAX_LIST_CHARS) throw invalid(`it is more than ${MAX_LIST_CHARS} characters of JSON`);
    this.values += valuesIn(tool.inputSchema) + valuesIn(tool.annotations);
    if (this.values > MAX_LIST_VALUES) throw invalid(`its tools' schemas and annotations hold more than ${MAX_LIST_VALUES} values`);
    // `jsonb` keeps a number with every digit (row 134): a list of 3.9 MB of `5e-324` in its schemas
    // was stored in 164 KB and read back as 184 MB, each read of the connection 1.6 to 2.2 s, the
    // event loop held up to 450 ms (attack round 16, S-F2). Walked only when the text holds such a literal.
    if (mayHoldUnstorableNumber(text) && (this.growth += numbersGrowth(tool, MAX_NUMBER_GROWTH_CHARS)) > MAX_NUMBER_GROWTH_CHARS) {
      throw invalid(
        `its numbers would be stored more than ${MAX_NUMBER_GROWTH_CHARS} characters longer than listed (a large exponent either way, such as 1e300 or 5e-324, is stored as every digit it stands for)`,
      );
    }
    this.tools.push(tool);
    return size;
  }
}

/** How much of a tool list is made storable between two turns of the event loop. */
const TURN_CHARS = 128 * 1024;

/** Credentials are redacted before anything is cut: a cut through one would leave its start. */
function sanitizeTool(item: unknown, index: number, seen: Set<string>, credentials: Readonly<Record<string, string>>): ListedMcpTool {
  if (!item || typeof item !== 'object') throw invalid(`tool ${index} is not an object`);
  const t = item as Record<string, unknown>;
  const redact = (text: string) => redactSecrets(text, credentials);
  const name = typeof t.name === 'string' && t.name.length <= MAX_NAME ? clean(redact(t.name)) : '';
  if (name.length === 0 || name.length > MAX_NAME) throw invalid(`tool ${index} has no usable name`);
  if (seen.has(name)) throw invalid(`tool "${name}" is listed twice`);
  seen.add(name);
  const description = typeof t.description === 'string' ? storablePrefix(redact(t.description), MAX_DESCRIPTION) : '';
  const schema = t.inputSchema;
  if (!schema || typeof schema !== 'object' || Array.isArray(schema) || (schema as { type?: unknown }).type !== 'object') {
    throw invalid(`tool "${name}" has no object input schema`);
  }
  const inputSchema = bounded(
    clean(redactSecretsDeep(notHuge(schema as Record<string, unknown>, `tool "${name}" input schema`), credentials)),
    `tool "${name}" input schema`,
  );
  const tool: ListedMcpTool = { name, description, inputSchema };
  if (typeof t.title === 'string' && t.title !== '') tool.title = storablePrefix(redact(t.title), MAX_TITLE);
  if (t.annotations && typeof t.annotations === 'object' && !Array.isArray(t.annotations)) {
    const annotations = notHuge(t.annotations as Record<string, unknown>, `tool "${name}" annotations`);
    tool.annotations = bounded(clean(redactSecretsDeep(annotations, credentials)), `tool "${name}" annotations`);
  }
  return tool;
}

function invalid(message: string): McpUpstreamError {
  return new McpUpstreamError('upstream_unavailable', `the server's tool list is unusable: ${message}`);
}

function clean<T>(value: T): T {
  return withoutNulCharacters(wellFormed(value));
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const wellFormedString = (s: string) => s.replace(LONE_SURROGATE, '\uFFFD');

function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return wellFormedString(value) as T;
  if (Array.isArray(value)) return value.map(wellFormed) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [wellFormedString(k), wellFormed(v)])) as T;
}

/**
 * Refused before it is walked: redaction and cleaning copy every key, and one schema of 500,000
 * properties (14 MB) took 4.7 s of the event loop before its size was looked at (attack round 8).
 * Twice the bound, as measured here: what redaction shortens may still fit (`bounded` decides).
 */
function notHuge<T extends Record<string, unknown>>(value: T, what: string): T {
  if (JSON.stringify(value).length > 2 * MAX_SCHEMA_CHARS) throw invalid(`${what} is larger than ${MAX_SCHEMA_CHARS} characters`);
  return value;
}

function bounded<T extends Record<string, unknown>>(value: T, what: string): T {
  if (JSON.stringify(value).length > MAX_SCHEMA_CHARS) throw invalid(`${what} is larger than ${MAX_SCHEMA_CHARS} characters`);
  if (depth(value) > MAX_SCHEMA_DEPTH) throw invalid(`${what} nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  return value;
}

/**
 * API.md's risk rule, fail-closed: an admin's decision; else, when the entry trusts annotations,
 * `readOnlyHint: true` is read_only and `destructiveHint: false` is mutating; else destructive.
 * An untrusted server's hints never lower a risk.
 */
export function riskOf(tool: ListedMcpTool, trustAnnotations: boolean, adminRisk: ToolRisk | undefined): { risk: ToolRisk; riskSource: RiskSource } {
  if (adminRisk !== undefined && (TOOL_RISKS as readonly string[]).includes(adminRisk)) return { risk: adminRisk, riskSource: 'admin' };
  if (trustAnnotations && tool.annotations) {
    if (tool.annotations.readOnlyHint === true) return { risk: 'read_only', riskSource: 'annotations' };
    if (tool.annotations.destructiveHint === false) return { risk: 'mutating', riskSource: 'annotations' };
  }
  return { risk: 'destructive', riskSource: 'default' };
}

/** Tools added, removed and changed between two listings, by name (for the sync's audit event). */
export function toolListDiff(before: readonly ListedMcpTool[], after: readonly ListedMcpTool[]): { added: string[]; removed: string[]; changed: string[] } {
  const old = new Map(before.map((t) => [t.name, JSON.stringify(canonicalTool(t))]));
  const now = new Map(after.map((t) => [t.name, JSON.stringify(canonicalTool(t))]));
  return diffOf(old, now);
}

/**
 * The same, giving the event loop a turn after every TURN_CHARS of tools compared: two lists of 4
 * MiB took 350 ms in one go at every refresh, and a server's list_changed asks for one every 30 s
 * per connection (attack round 14, O-F6).
 */
export async function toolListDiffInTurns(
  before: readonly ListedMcpTool[],
  after: readonly ListedMcpTool[],
): Promise<{ added: string[]; removed: string[]; changed: string[] }> {
  let since = 0;
  const canonical = async (list: readonly ListedMcpTool[]) => {
    const out = new Map<string, string>();
    for (const t of list) {
      const text = JSON.stringify(canonicalTool(t));
      out.set(t.name, text);
      since += text.length;
      if (since >= TURN_CHARS) {
        since = 0;
        await nextTurn();
      }
    }
    return out;
  };
  return diffOf(await canonical(before), await canonical(after));
}

/** The most tool names an audit event of a connection names in each of its lists (the rest counted). */
export const AUDITED_TOOL_NAMES = 20;

/**
 * `names` as an audit event keeps them: the first AUDITED_TOOL_NAMES, and `<field>Omitted` counting
 * the rest. A server lists 500 names of 128 characters, control characters among them (six
 * characters each as JSON), so a sync naming every tool added, removed and changed wrote 564 KB to
 * the append-only log each time; the connection itself shows its whole list.
 */
export function auditedNames(field: string, names: readonly string[]): Record<string, unknown> {
  if (names.length <= AUDITED_TOOL_NAMES) return { [field]: [...names] };
  return { [field]: names.slice(0, AUDITED_TOOL_NAMES), [`${field}Omitted`]: names.length - AUDITED_TOOL_NAMES };
}

/** The names of a connection's tools as its `mcp_connection.created` event keeps them. */
export function auditedToolNames(tools: readonly ListedMcpTool[]): Record<string, unknown> {
  return auditedNames(
    'tools',
    tools.map((t) => t.name),
  );
}

/** A diff of two tool lists (toolListDiff) as an audit event keeps it. */
export function auditedDiff(diff: { added: string[]; removed: string[]; changed: string[] }): Record<string, unknown> {
  return { ...auditedNames('added', diff.added), ...auditedNames('removed', diff.removed), ...auditedNames('changed', diff.changed) };
}

function diffOf(old: Map<string, string>, now: Map<string, string>): { added: string[]; removed: string[]; changed: string[] } {
  const added = [...now.keys()].filter((n) => !old.has(n)).sort();
  const removed = [...old.keys()].filter((n) => !now.has(n)).sort();
  const changed = [...now.keys()].filter((n) => old.has(n) && old.get(n) !== now.get(n)).sort();
  return { added, removed, changed };
}

function canonicalTool(t: ListedMcpTool): unknown {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, x]) => [k, sort(x)]),
          )
        : v;
  return sort({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations });
}
