import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { ExecFixturesModule } from './fixtures/exec-fixtures.module';
import { walkRoutes } from './support/routes';
import { createTestApp, TestApp } from './support/test-app';

type Schema = {
  $ref?: string;
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  oneOf?: Schema[];
  allOf?: Schema[];
  additionalProperties?: unknown;
};
type Operation = {
  responses: Record<string, { description: string; content?: Record<string, { schema?: Schema }> }>;
  requestBody?: unknown;
  security?: unknown[];
};

/**
 * API.md "Operations": `/api/docs-json` is the OpenAPI document of everything, good enough for a
 * client to generate its types from: every success answer has a schema (not only a description),
 * every list says `{ items, nextCursor }`, every refusal is a problem document.
 */
describe('the OpenAPI document (e2e)', () => {
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };
  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ route: `${method.toUpperCase()} ${path}`, op })));
  const resolve = (s: Schema): Schema => (s.$ref ? resolve(doc.components.schemas[s.$ref.replace('#/components/schemas/', '')]) : s);

  beforeAll(async () => {
    t = await createTestApp({ imports: [ExecFixturesModule] });
    doc = (await t.http.get('/api/docs-json').expect(200)).body;
  });
  afterAll(() => t.close());

  it('gives every success answer a schema that names its fields', () => {
    // Found by this test: /me, the lists of organizations, API keys, tool calls, approvals and
    // audit events had a description only (or claimed to be a bare array).
    const missing: string[] = [];
    for (const { route, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) >= 300 || status === '204') continue;
        // MCP answers notifications with an empty 202, by its own specification.
        if (route === 'POST /api/v1/agents/{agentId}/mcp' && status === '202') continue;
        const schema = Object.values(response.content ?? {})[0]?.schema;
        if (!schema) {
          missing.push(`${route} ${status}`);
          continue;
        }
        const resolved = resolve(schema);
        if (resolved.type === 'object' || resolved.properties) {
          if (!resolved.properties || Object.keys(resolved.properties).length === 0) missing.push(`${route} ${status}: an object without properties`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('describes every list as { items, nextCursor } with typed items', () => {
    const lists = [
      'GET /api/v1/orgs',
      'GET /api/v1/orgs/{orgId}/api-keys',
      'GET /api/v1/agents',
      'GET /api/v1/agents/{agentId}/versions',
      'GET /api/v1/tool-calls',
      'GET /api/v1/approvals',
      'GET /api/v1/audit-events',
      'GET /api/v1/knowledge/collections',
      'GET /api/v1/knowledge/collections/{id}/documents',
      'GET /api/v1/skills',
      'GET /api/v1/agents/capabilities',
    ];
    for (const route of lists) {
      const [method, path] = route.split(' ');
      const schema = resolve(doc.paths[path][method.toLowerCase()].responses['200'].content!['application/json'].schema!);
      expect([route, Object.keys(schema.properties ?? {}).sort()]).toEqual([route, ['items', 'nextCursor']]);
      const items = schema.properties!.items.items!;
      // One item schema, or the views a query picks (`GET /skills?view=basic`), each typed.
      for (const item of items.oneOf ?? [items]) expect([route, Object.keys(resolve(item).properties ?? {}).length > 2]).toEqual([route, true]);
    }
    const tools = resolve(doc.paths['/api/v1/agents/{agentId}/versions/{version}/tools'].get.responses['200'].content!['application/json'].schema!);
    expect(Object.keys(tools.properties!).sort()).toEqual(['items', 'nextCursor']);
    expect(tools.properties!.items.items!.oneOf!.map((s) => s.$ref)).toEqual([
      '#/components/schemas/OfferedToolView',
      '#/components/schemas/OpenAiToolView',
      '#/components/schemas/AnthropicToolView',
    ]);
  });

  it('documents every refusal as a problem document, with the ones every route of a kind can give', () => {
    const wrong: string[] = [];
    const routes = walkRoutes(t);
    for (const { route, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        if (!response.content?.['application/problem+json']?.schema) wrong.push(`${route} ${status}: not a problem document`);
      }
      const walked = routes.find((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}` === route);
      const needs = [...(op.requestBody ? ['400', '413', '415'] : []), ...(walked?.access !== 'public' ? ['401', '403', '429'] : [])];
      for (const status of needs) if (!op.responses[status]) wrong.push(`${route}: no ${status}`);
    }
    expect(wrong).toEqual([]);
  });

  it('resolves every $ref', () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    const at = (pointer: string) =>
      pointer
        .replace(/^#\//, '')
        .split('/')
        .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
    const dangling = refs.map((r) => r.slice(8, -1)).filter((r) => at(r) === undefined);
    expect(dangling).toEqual([]);
  });

  it('names every operation as a client method: camelCase, unique', () => {
    const ids = operations().map(({ op }) => (op as { operationId?: string }).operationId ?? '');
    expect(ids.filter((id) => !/^[a-z][A-Za-z0-9]*$/.test(id))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    const byRoute = Object.fromEntries(operations().map(({ route, op }) => [route, (op as { operationId?: string }).operationId]));
    expect(byRoute['POST /api/v1/agents']).toBe('createAgent');
    expect(byRoute['POST /api/v1/approvals/{id}/approve']).toBe('approveApproval');
  });

  it('describes the bearer scheme as opaque API keys', () => {
    const schemes = (doc as unknown as { components: { securitySchemes: Record<string, { scheme?: string; description?: string; bearerFormat?: string }> } })
      .components.securitySchemes;
    expect(schemes.bearer.scheme).toBe('bearer');
    expect(schemes.bearer.description).toMatch(/opaque API key/);
    expect(schemes.bearer.bearerFormat).not.toBe('JWT');
  });

  it('documents Retry-After on every rate-limited answer', () => {
    const missing = operations()
      .filter(({ op }) => op.responses['429'] && (op.responses['429'] as { description: string }).description.includes('rate_limited'))
      .filter(({ op }) => !(op.responses['429'] as { headers?: Record<string, unknown> }).headers?.['Retry-After'])
      .map(({ route }) => route);
    expect(missing).toEqual([]);
  });

  it('declares the RateLimit-* headers every authenticated answer carries, and does not deny them', () => {
    // The 429 text said no RateLimit-* headers were sent while every authenticated answer had them.
    const headers = (doc as unknown as { components: { headers?: Record<string, unknown> } }).components.headers ?? {};
    const names = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];
    expect(Object.keys(headers)).toEqual(expect.arrayContaining(names));
    const undeclared: string[] = [];
    for (const { route, op } of operations().filter(({ op }) => op.security?.length)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (!/^2\d\d$/.test(status) && status !== '429') continue;
        const declared = (response as { headers?: Record<string, unknown> }).headers ?? {};
        for (const name of names) if (!declared[name]) undeclared.push(`${route} ${status} ${name}`);
      }
    }
    expect(undeclared).toEqual([]);
    expect(JSON.stringify(doc)).not.toMatch(/no `RateLimit-\*` headers are sent/);
  });

  it('types ids as uuid and counts as integers', () => {
    const notUuid: string[] = [];
    const fractional: string[] = [];
    // Ids the API takes from outside and does not mint: a run of the caller's, a model's tool-call id, an MCP entry's id.
    const freeIds = new Set(['runId', 'requestId', 'capabilityId', 'toolId', 'entryId', 'modelCallId', 'keyPrefix']);
    // `id`s that are names, not UUIDs: capabilities, tools and MCP catalog entries are declared in
    // code; a principal or audit party may be `platform` or `system`.
    // A model's tool-call ids in a run's transcript are the model's own strings (`call_abc…`).
    const namedIds = new Set([
      'ChatMessageView.toolCallId',
      'ChatMessageView.toolCalls[].id',
      'MeView.id',
      'AuditPartyView.id',
      'CapabilityRefDto.id',
      'ToolDescriptorView.id',
      'CapabilityDescriptorView.id',
      'McpServerEntryView.id',
    ]);
    const visit = (s: Schema & { format?: string; type?: string }, at: string) => {
      if (!s || typeof s !== 'object') return;
      if (s.$ref) return;
      for (const [name, p] of Object.entries(s.properties ?? {})) {
        const prop = p as Schema & { format?: string };
        if (
          (name === 'id' || /[a-z]Id$/.test(name)) &&
          prop.type === 'string' &&
          prop.format !== 'uuid' &&
          !freeIds.has(name) &&
          !namedIds.has(`${at}.${name}`)
        )
          notUuid.push(`${at}.${name}`);
        if (prop.type === 'number') fractional.push(`${at}.${name}`);
        visit(prop, `${at}.${name}`);
      }
      if (s.items) visit(s.items, `${at}[]`);
      for (const sub of [...(s.oneOf ?? []), ...(s.allOf ?? [])]) visit(sub, at);
    };
    for (const [name, schema] of Object.entries(doc.components.schemas)) visit(schema, name);
    for (const { route, op } of operations()) {
      for (const p of (op as { parameters?: { name: string; in: string; schema?: { type?: string; format?: string } }[] }).parameters ?? []) {
        if ((p.name === 'id' || /[a-z]Id$/.test(p.name)) && p.schema?.type === 'string' && p.schema.format !== 'uuid' && !freeIds.has(p.name))
          notUuid.push(`${route} ${p.in} ${p.name}`);
        if (p.schema?.type === 'number') fractional.push(`${route} ${p.in} ${p.name}`);
      }
    }
    expect(notUuid).toEqual([]);
    expect(fractional).toEqual([]);
  });
  it('has an example on every schema, parameter, request and answer, each valid against its schema', () => {
    // `strict: false`: the document carries OpenAPI's own keywords (`example`, `nullable` is
    // understood) beside JSON Schema's.
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
    const check = (schema: Schema | undefined, example: unknown, where: string) => {
      if (example === undefined) return missing.push(where);
      if (!schema) return;
      const rebased = JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"doc#/components/'));
      const validate = ajv.compile(rebased);
      if (!validate(example)) invalid.push(`${where}: ${ajv.errorsText(validate.errors)}`);
    };
    const missing: string[] = [];
    const invalid: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) check(schema, (schema as { example?: unknown }).example, `schema ${name}`);
    for (const { route, op } of operations()) {
      const o = op as Operation & {
        parameters?: { name: string; in: string; schema?: Schema; example?: unknown }[];
        requestBody?: { content?: Record<string, { schema?: Schema; example?: unknown }> };
      };
      for (const p of o.parameters ?? []) check(p.schema, p.example, `${route} ${p.in} ${p.name}`);
      for (const [type, media] of Object.entries(o.requestBody?.content ?? {})) check(media.schema, media.example, `${route} body ${type}`);
      for (const [status, response] of Object.entries(o.responses)) {
        for (const [type, media] of Object.entries(response.content ?? {}) as [string, { schema?: Schema; example?: unknown }][]) {
          check(type.startsWith('text/') ? undefined : media.schema, media.example, `${route} ${status} ${type}`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(invalid).toEqual([]);
    // A refusal's example is the problem document the route gives, with the code its description names.
    const create = doc.paths['/api/v1/agents'].post as unknown as {
      responses: Record<string, { content: Record<string, { example: { code: string; status: number } }> }>;
    };
    expect(create.responses['409'].content['application/problem+json'].example).toMatchObject({ status: 409, code: 'conflict' });
  });
});
