import { OpenAPIObject } from '@nestjs/swagger';
import { ERROR_STATUS, ErrorCode, titleFor } from './api-error';
import { problemType } from './problem.filter';

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  example?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  minimum?: number;
  minItems?: number;
  additionalProperties?: boolean | Schema;
};

const AT = '2026-12-01T09:30:00.000Z';
/** One id per kind of thing, so an example answer that names the same agent twice agrees with itself. */
const IDS: Record<string, string> = {
  agent: '0b7e6a52-3c1d-4e8f-9a2b-5d6c7e8f9a01',
  org: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e02',
  approval: '2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f03',
  toolCall: '3e4f5a6b-7c8d-4e9f-8a1b-2c3d4e5f6a04',
  run: '4f5a6b7c-8d9e-4f0a-9b2c-3d4e5f6a7b05',
  key: '5a6b7c8d-9e0f-4a1b-8c3d-4e5f6a7b8c06',
  other: '6b7c8d9e-0f1a-4b2c-9d4e-5f6a7b8c9d07',
};

/**
 * Plain strings that a generic placeholder would make read like nonsense. By `Schema.property`
 * first, then by property name. Everything else is derived from the schema (format, enum, bounds).
 */
const STRINGS: Record<string, unknown> = {
  nextCursor: 'eyJhdCI6IjIwMjYtMTItMDFUMDk6MzA6MDAuMDAwWiJ9',
  runId: IDS.run,
  'ChatMessageView.id': 'call_7Qm2',
  'ChatMessageView.toolCallId': 'call_7Qm2',
  'ChatMessageView.name': 'search_knowledge',
  'ChatMessageView.content': 'What is the refund window for shoes?',
  name: 'Support assistant',
  'CreateMcpConnectionDto.name': 'github-support',
  'McpConnectionView.name': 'github-support',
  'CreateApiKeyDto.name': 'support-runtime',
  'ApiKeyView.name': 'support-runtime',
  'CreatedApiKeyView.name': 'support-runtime',
  'CreateModelProviderDto.name': 'openai',
  'ModelProviderView.name': 'openai',
  'McpCredentialFieldView.name': 'GITHUB_TOKEN',
  'McpToolView.name': 'search_issues',
  'OpenAiFunctionView.name': 'search_knowledge',
  'AnthropicToolView.name': 'search_knowledge',
  'OfferedToolView.name': 'search_knowledge',
  description: 'Answers customer questions from the help centre.',
  id: 'knowledge-search',
  slug: 'support-assistant',
  scopes: 'knowledge:read',
  message: 'must be a string',
  content: 'Refunds are issued within 14 days of a return.',
  title: 'Refund policy',
  instructions: 'Answer from the knowledge base; say when you do not know.',
  systemPrompt: 'Answer from the knowledge base; say when you do not know.',
  capabilityId: 'knowledge-search',
  toolId: 'search_knowledge',
  tool: 'search_knowledge',
  tools: 'search_knowledge',
  code: 'invalid_request',
  url: 'https://hooks.example.com/platform-events',
  baseUrl: 'https://api.openai.com/v1',
  reason: 'The customer asked us not to send email.',
  note: 'Checked with the customer first.',
  types: 'approval.requested',
  tokenPrefix: 'cpk_3f9a',
  token: 'cpk_3f9a.9b1e7c2d4f6a8b0c1d3e5f7a9b1c3d5e',
  apiKey: 'sk-…',
  server: 'github',
  category: 'knowledge',
  argumentsHash: 'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  executedArgumentsHash: 'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  approvedArgumentsHash: 'sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae',
  specHash: 'sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9',
  input: 'What is the refund window for shoes?',
  output: 'Shoes can be returned within 30 days.',
  profile: 'default',
  profiles: 'default',
  workerType: 'default',
  workerTypes: 'default',
  promptGuidance: 'Search before answering a policy question.',
  tags: 'policy',
  publishedBy: `api_key:${IDS.key}`,
  disabledBy: `api_key:${IDS.key}`,
  credentialNames: 'GITHUB_TOKEN',
  arguments: '{"query":"refund window"}',
  error: 'upstream_unavailable',
  lastError: 'connect ECONNREFUSED 10.0.0.12:443',
  detail: 'The request is invalid.',
  path: 'capabilities[0].id',
  instance: '/api/v1/agents',
  type: 'agent',
};

const FREE_FORM: Record<string, unknown> = {
  arguments: { query: 'refund window', limit: 5 },
  executedArguments: { query: 'refund window', limit: 5 },
  approvedArguments: { query: 'refund window', limit: 3 },
  result: { hits: [{ title: 'Refund policy', snippet: 'Refunds are issued within 14 days of a return.' }] },
  config: {},
};

function idFor(property: string | undefined): string {
  const p = (property ?? '').toLowerCase();
  if (p.includes('agent')) return IDS.agent;
  if (p.includes('org')) return IDS.org;
  if (p.includes('approval')) return IDS.approval;
  if (p.includes('toolcall')) return IDS.toolCall;
  if (p.includes('run')) return IDS.run;
  if (p.includes('key')) return IDS.key;
  return IDS.other;
}

/**
 * Builds an example from a schema: the schema's own `example` where it has one, else one derived
 * from its format, enum and bounds, and named strings from the table above. Examples are data
 * only: the document's test validates every one against its schema, so a wrong one cannot ship.
 */
export class ExampleBuilder {
  constructor(private readonly schemas: Record<string, Schema>) {}

  of(schema: Schema | undefined, owner?: string, property?: string, depth = 0): unknown {
    if (!schema || depth > 8) return undefined;
    if (schema.example !== undefined) return schema.example;
    if (schema.$ref) {
      const name = schema.$ref.split('/').pop()!;
      return this.of(this.schemas[name], name, property, depth + 1);
    }
    if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => this.of(s, owner, property, depth + 1)));
    if (schema.oneOf || schema.anyOf) return this.of((schema.oneOf ?? schema.anyOf)![0], owner, property, depth + 1);
    if (schema.enum?.length) return schema.enum[0];
    switch (schema.type) {
      case 'object': {
        // The required fields, and the optional ones a DTO gives its own example: a field that is
        // there only sometimes (a result, an error) would make the example contradict itself.
        const out: Record<string, unknown> = {};
        const required = new Set((schema.required as string[] | undefined) ?? []);
        for (const [key, value] of Object.entries(schema.properties ?? {})) {
          if (!required.has(key) && value.example === undefined) continue;
          const v = this.of(value, owner, key, depth + 1);
          if (v !== undefined) out[key] = v;
        }
        return out;
      }
      case 'array': {
        const item = this.of(schema.items, owner, property, depth + 1);
        return item === undefined ? [] : Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
      }
      case 'integer':
      case 'number':
        return Math.max(schema.minimum ?? 1, 1);
      case 'boolean':
        return true;
      case 'string':
        if (schema.format === 'uuid') return idFor(property === 'id' ? owner : property);
        if (schema.format === 'date-time') return AT;
        if (schema.format === 'uri' || schema.format === 'url') return STRINGS.url;
        return STRINGS[`${owner}.${property}`] ?? STRINGS[property ?? ''] ?? property ?? 'text';
      default:
        // A free-form value (a tool's arguments or result, a capability's config).
        return schema.properties ? this.of({ ...schema, type: 'object' }, owner, property, depth) : (FREE_FORM[property ?? ''] ?? {});
    }
  }
}

/** The problem document a refusal's description names (its first backticked code of that status). */
export function problemExample(status: number, description: string | undefined, path: string): Record<string, unknown> {
  const named = [...(description ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).find((c) => ERROR_STATUS[c as ErrorCode] === status);
  const code = (named ?? Object.entries(ERROR_STATUS).find(([, s]) => s === status)?.[0] ?? 'internal_error') as ErrorCode;
  const detail = (description ?? titleFor(status)).split(/(?<=\.)\s/)[0];
  return { type: problemType(code), title: titleFor(status), status, detail, code, instance: path.replace(/\{[^}]+\}/g, idFor) };
}

const TEXT_EXAMPLES: Record<string, string> = {
  'text/event-stream': `id: 0000000000000792-1\nevent: approval.requested\ndata: {"id":"${IDS.other}","type":"approval.requested","orgId":"${IDS.org}"}\n\n`,
  'text/plain':
    '# HELP http_requests_total Requests answered, by route and status.\n# TYPE http_requests_total counter\nhttp_requests_total{method="GET",route="/api/v1/agents",status="200"} 42\n',
};

/**
 * An example on every schema, parameter, request and answer of the document (issue: a client
 * generator and the docs page show what a call looks like without running it). Examples the
 * DTOs declare are kept; the rest are built from the schemas.
 */
export function addExamples(document: OpenAPIObject): OpenAPIObject {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Schema>;
  const build = new ExampleBuilder(schemas);
  for (const [name, schema] of Object.entries(schemas)) {
    if (schema.example === undefined) schema.example = build.of(schema, name);
  }
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const op = item[method];
      if (!op) continue;
      for (const param of op.parameters ?? []) {
        if (!('in' in param) || param.example !== undefined || !param.schema) continue;
        param.example = build.of(param.schema as Schema, undefined, param.name);
      }
      const body = op.requestBody && 'content' in op.requestBody ? op.requestBody.content : undefined;
      for (const media of Object.values(body ?? {})) {
        if (media.example === undefined && media.schema) media.example = build.of(media.schema as Schema);
      }
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!response || !('content' in response) || !response.content) continue;
        for (const [type, media] of Object.entries(response.content)) {
          if (media.example !== undefined || media.examples !== undefined) continue;
          if (type === 'application/problem+json') media.example = problemExample(Number(status), response.description, path);
          else if (TEXT_EXAMPLES[type]) media.example = TEXT_EXAMPLES[type];
          else if (media.schema) media.example = build.of(media.schema as Schema);
        }
      }
    }
  }
  return document;
}
